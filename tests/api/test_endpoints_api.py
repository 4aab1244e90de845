"""Bot endpoints through the API, as the endpoints page: list, create, read, change, delete and try, the
key write-only (never in an answer), the permission an admin grants needed (403 without it), and another
researcher's endpoint a 404 that changes nothing."""
import pytest
from django.contrib.auth.models import Permission

from studies.chat import keys
from studies.models import SystemEndpoint
from tests.api.test_convention import client_of
from tests.problems import problem_fields

pytestmark = pytest.mark.django_db
URL = "/api/systems/endpoints/"


def _grant(user):
    user.user_permissions.add(Permission.objects.get(codename="change_systemendpoint"))
    return client_of(user)


@pytest.fixture
def alice(user):
    return _grant(user)


@pytest.fixture
def bob(other_user):
    return _grant(other_user)


def _create(client, url="http://127.0.0.1:9/chat", **extra):
    return client.post(URL, {"system": "My Bot", "protocol": "concord", "url": url, **extra}, format="json")


def test_endpoints_api_creates_reads_and_lists_with_the_key_write_only(alice, loopback_allowed):
    created = _create(alice, key="sk-never-shown-again", model_name="m1")
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["system"] == "my-bot" and body["owner"] == "alice" and body["has_key"] is True
    assert body["key_source"] == "stored" and "key" not in body and b"sk-never-shown" not in created.content
    stored = SystemEndpoint.objects.get(pk=body["id"])
    assert keys.endpoint_key(key_env="", key_encrypted=stored.key_encrypted) == "sk-never-shown-again"
    listed = alice.get(URL).json()
    assert listed["count"] == 1 and listed["results"][0]["id"] == body["id"]
    assert b"sk-never" not in alice.get(f"{URL}{body['id']}/").content
    assert alice.get(URL, {"system": "other"}).json()["count"] == 0


def test_endpoints_api_patch_changes_only_the_fields_sent_and_keeps_the_key(alice, loopback_allowed):
    pk = _create(alice, key="sk-keep-me", timeout_seconds=7).json()["id"]
    changed = alice.patch(f"{URL}{pk}/", {"model_name": "m2", "retries": 4}, format="json")
    assert changed.status_code == 200 and changed.json()["model_name"] == "m2"
    endpoint = SystemEndpoint.objects.get(pk=pk)
    assert (endpoint.retries, endpoint.timeout_seconds, endpoint.url) == (4, 7.0, "http://127.0.0.1:9/chat")
    assert keys.endpoint_key(key_env="", key_encrypted=endpoint.key_encrypted) == "sk-keep-me"
    cleared = alice.patch(f"{URL}{pk}/", {"clear_key": True}, format="json").json()
    assert cleared["has_key"] is False and cleared["key_source"] == "none"


def test_endpoints_api_refuses_bad_fields_by_name_and_changes_nothing(alice, loopback_allowed):
    for body, field in (({"system": "x", "protocol": "soap", "url": "http://127.0.0.1:9/"}, "protocol"),
                        ({"system": "x", "protocol": "concord", "url": "ftp://x"}, "url"),
                        ({"system": "x", "protocol": "concord", "url": "http://127.0.0.1:9/", "timeout_seconds": 90},
                         "timeout_seconds"),
                        ({"system": "x", "protocol": "concord", "url": "http://127.0.0.1:9/", "colour": "red"},
                         "colour"),
                        ({"system": "x", "protocol": "concord", "url": "http://127.0.0.1:9/", "key": "k1",
                          "key_env": "CONCORD_BOT_KEY_X"}, "key")):
        response = alice.post(URL, body, format="json")
        assert response.status_code == 400 and field in problem_fields(response), (body, response.content)
    assert not SystemEndpoint.objects.exists()
    assert _create(alice).status_code == 201
    twice = _create(alice)
    assert twice.status_code == 400 and "system" in problem_fields(twice)


def test_endpoints_api_url_outside_the_allowed_networks_is_refused_under_url(alice):
    response = _create(alice, url="http://10.0.0.7/chat")
    assert response.status_code == 400 and "url" in problem_fields(response)


def test_endpoints_api_another_researchers_endpoint_is_404_and_unchanged(alice, bob, loopback_allowed):
    pk = _create(alice, key="sk-alice").json()["id"]
    for method, body in (("get", None), ("patch", {"model_name": "stolen"}), ("delete", None)):
        response = getattr(bob, method)(f"{URL}{pk}/", body, format="json")
        assert response.status_code == 404, method
    assert bob.post(f"{URL}{pk}/try/").status_code == 404
    assert bob.get(URL).json()["count"] == 0
    assert SystemEndpoint.objects.get(pk=pk).model_name == ""


def test_endpoints_api_needs_the_permission_403_in_the_envelope(api):
    response = api.get(URL)
    assert response.status_code == 403 and response["Content-Type"] == "application/problem+json"
    assert "change_systemendpoint" in response.json()["detail"]
    assert api.post(URL, {"system": "x", "protocol": "concord", "url": "http://h/"}, format="json").status_code == 403
    assert not SystemEndpoint.objects.exists()


def test_endpoints_api_delete_removes_it(alice, loopback_allowed):
    pk = _create(alice).json()["id"]
    assert alice.delete(f"{URL}{pk}/").status_code == 204
    assert not SystemEndpoint.objects.filter(pk=pk).exists() and alice.get(f"{URL}{pk}/").status_code == 404


def test_endpoints_api_try_answers_the_reply_or_the_failure(alice, local_bot, loopback_allowed):
    pk = _create(alice, url=local_bot.url("rule", "concord")).json()["id"]
    tried = alice.post(f"{URL}{pk}/try/")
    assert tried.status_code == 200 and tried.json()["ok"] is True and tried.json()["reply"]
    alice.patch(f"{URL}{pk}/", {"url": "http://127.0.0.1:9/none", "retries": 0, "timeout_seconds": 1}, format="json")
    failed = alice.post(f"{URL}{pk}/try/").json()
    assert failed["ok"] is False and failed["kind"] == "connection" and "What to do" in failed["message"]


def test_endpoints_api_owner_is_for_admins_only(alice, bob, user, other_user, loopback_allowed):
    pk = _create(alice).json()["id"]
    refused = alice.patch(f"{URL}{pk}/", {"owner": "bob"}, format="json")
    assert refused.status_code == 400 and "owner" in problem_fields(refused)
    user.is_superuser = True
    user.save()
    given = client_of(user).patch(f"{URL}{pk}/", {"owner": "bob"}, format="json")
    assert given.status_code == 200 and given.json()["owner"] == "bob"
    assert bob.get(f"{URL}{pk}/").status_code == 200
