"""API tokens: several named ones per user, the secret shown once and stored only hashed,
listed by prefix, revoked by DELETE (then 401); another user's token is a 404 and stays valid; bad input
is refused by name. Login tokens (``POST /api/auth/token/``) are the same kind of row: hashed, listed,
revocable, at most ``LOGIN_TOKENS_MAX`` live per user; a 40-character key of DRF's, hashed by migration
0023 (tests/api/test_token_migration.py), still authenticates."""
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from studies.api import tokens
from studies.api.tokens import LOGIN_TOKENS_MAX, key_hash, login_token_issue
from studies.models import ApiToken, IdempotencyKey
from tests.api.test_convention import client_of
from tests.problems import problem_fields

pytestmark = pytest.mark.django_db


def bearer(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    return client


def names(listed: dict) -> list[str]:
    """The listed tokens' names but for those the test clients were made with (``tests.factories.token_for``)."""
    return [t["name"] for t in listed["results"] if not t["name"].startswith("test token ")]


def make(api, name: str, **extra) -> dict:
    response = api.post("/api/auth/tokens/", {"name": name, **extra}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_several_named_tokens_each_work_and_the_secret_is_shown_once_and_stored_hashed(api, user):
    notebook, script = make(api, "notebook"), make(api, "nightly script", expires_in_days=30)
    for made in (notebook, script):
        assert made["token"].startswith(made["prefix"]) and made["status"] == "active"
        assert bearer(made["token"]).get("/api/experiments/").status_code == 200
        stored = ApiToken.objects.get(pk=made["id"])
        assert stored.key_hash == key_hash(made["token"]) and made["token"] not in (stored.key_hash, stored.prefix)
    assert ApiToken.objects.get(pk=notebook["id"]).last_used_at is not None
    assert ApiToken.objects.get(pk=script["id"]).expires_at > timezone.now() + timedelta(days=29)
    listed = api.get("/api/auth/tokens/").json()
    assert names(listed) == ["nightly script", "notebook"]
    assert "token" not in listed["results"][0] and "token" not in api.get(f"/api/auth/tokens/{notebook['id']}/").json()
    assert notebook["token"] not in str(api.get("/api/auth/tokens/").content)


def test_a_revoked_token_answers_401_and_the_others_keep_working(api):
    first, second = make(api, "first"), make(api, "second")
    by_first = bearer(first["token"])
    assert by_first.delete(f"/api/auth/tokens/{first['id']}/").status_code == 204  # a token may revoke itself
    refused = by_first.get("/api/experiments/")
    assert refused.status_code == 401 and "revoked" in refused.json()["detail"]
    assert refused["Content-Type"] == "application/problem+json"
    assert bearer(second["token"]).get("/api/experiments/").status_code == 200
    assert api.get(f"/api/auth/tokens/{first['id']}/").json()["status"] == "revoked"
    assert names(api.get("/api/auth/tokens/", {"status": "active"}).json()) == ["second"]
    assert [t["name"] for t in api.get("/api/auth/tokens/", {"status": "revoked"}).json()["results"]] == ["first"]
    assert make(api, "first")["name"] == "first"  # the name is free again once revoked


def test_an_expired_token_answers_401_saying_so(api):
    made = make(api, "short", expires_in_days=1)
    ApiToken.objects.filter(pk=made["id"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    refused = bearer(made["token"]).get("/api/experiments/")
    assert refused.status_code == 401 and "expired" in refused.json()["detail"]
    assert [t["id"] for t in api.get("/api/auth/tokens/", {"status": "expired"}).json()["results"]] == [made["id"]]
    assert bearer("cnc_" + "x" * 43).get("/api/experiments/").status_code == 401  # unknown secret


def test_another_user_can_neither_see_nor_revoke_a_token(api, other_user):
    mine = make(api, "mine")
    bob = client_of(other_user)
    assert names(bob.get("/api/auth/tokens/").json()) == []
    assert bob.get(f"/api/auth/tokens/{mine['id']}/").status_code == 404
    assert bob.delete(f"/api/auth/tokens/{mine['id']}/").status_code == 404
    assert ApiToken.objects.get(pk=mine["id"]).revoked_at is None
    assert bearer(mine["token"]).get("/api/experiments/").status_code == 200


@pytest.mark.parametrize(("body", "field"), [
    ({}, "name"), ({"name": ""}, "name"), ({"name": "x" * 81}, "name"), ({"name": "t", "scope": "all"}, "scope"),
    ({"name": "t", "expires_in_days": 0}, "expires_in_days"), ({"name": "t", "expires_in_days": "soon"}, "expires_in_days"),
])
def test_bad_input_is_refused_by_name_and_makes_nothing(api, body, field):
    response = api.post("/api/auth/tokens/", body, format="json")
    assert response.status_code == 400 and field in problem_fields(response)
    assert ApiToken.objects.count() == 1  # the api fixture's own


def test_an_active_name_is_not_taken_twice_and_unknown_filters_are_refused(api):
    make(api, "notebook")
    again = api.post("/api/auth/tokens/", {"name": "notebook"}, format="json")
    assert again.status_code == 400 and "name" in problem_fields(again) and ApiToken.objects.count() == 2
    for params, field in (({"status": "live"}, "status"), ({"user": "bob"}, "user")):
        refused = api.get("/api/auth/tokens/", params)
        assert refused.status_code == 400 and field in problem_fields(refused)


def test_an_idempotent_retry_makes_one_token_and_never_stores_the_secret(api):
    headers = {"HTTP_IDEMPOTENCY_KEY": "token-once"}
    first = api.post("/api/auth/tokens/", {"name": "ci"}, format="json", **headers)
    again = api.post("/api/auth/tokens/", {"name": "ci"}, format="json", **headers)
    assert first.status_code == again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"] and again.json()["token"] is None
    assert ApiToken.objects.count() == 2  # and the api fixture's own
    assert first.json()["token"] not in str(IdempotencyKey.objects.get(key="token-once").body)


def login(username: str = "alice") -> dict:
    response = APIClient().post("/api/auth/token/", {"username": username, "password": "pw-concord"})
    assert response.status_code == 200, response.content
    return response.json()


def test_the_login_endpoint_issues_a_hashed_token_listed_with_the_named_ones_and_revocable(api, user):
    issued = login()
    assert issued["token"].startswith("cnc_") and issued["name"].startswith("login ")
    stored = ApiToken.objects.get(pk=issued["id"])
    assert (stored.user, stored.kind, stored.key_hash) == (user, "login", key_hash(issued["token"]))
    assert issued["token"] not in str(list(ApiToken.objects.values()))
    by_login = bearer(issued["token"])
    assert by_login.get("/api/experiments/").status_code == 200
    listed = {t["id"]: t for t in api.get("/api/auth/tokens/").json()["results"]}
    assert (listed[issued["id"]]["kind"], listed[issued["id"]]["status"]) == ("login", "active")
    assert {t["kind"] for t in listed.values()} == {"login", "named"}  # the api fixture's own token is named
    assert api.delete(f"/api/auth/tokens/{issued['id']}/").status_code == 204
    refused = by_login.get("/api/experiments/")
    assert refused.status_code == 401 and "revoked" in refused.json()["detail"]
    assert api.get("/api/experiments/").status_code == 200  # the other token is untouched


def test_each_login_is_a_token_of_its_own_and_the_earlier_keep_working(user):
    first, second = login(), login()
    assert first["token"] != second["token"] and first["name"] != second["name"]
    assert all(bearer(t["token"]).get("/api/experiments/").status_code == 200 for t in (first, second))


def test_a_user_keeps_the_newest_login_tokens_only(user, monkeypatch):
    monkeypatch.setattr(tokens, "TOKENS_PER_USER_MAX", 2)
    issued = [login_token_issue(user=user) for _ in range(LOGIN_TOKENS_MAX + 1)]
    assert bearer(issued[0].secret).get("/api/experiments/").status_code == 401  # the oldest made room
    assert bearer(issued[1].secret).get("/api/experiments/").status_code == 200
    assert ApiToken.objects.filter(user=user, kind="login").count() == LOGIN_TOKENS_MAX
    assert make(client_of(user), "second named")["kind"] == "named"  # login tokens count not among the named


def test_another_user_can_neither_see_nor_revoke_a_login_token(user, other_user):
    issued = login()
    bob = client_of(other_user)
    assert issued["id"] not in [t["id"] for t in bob.get("/api/auth/tokens/").json()["results"]]
    assert bob.get(f"/api/auth/tokens/{issued['id']}/").status_code == 404
    assert bob.delete(f"/api/auth/tokens/{issued['id']}/").status_code == 404
    assert ApiToken.objects.get(pk=issued["id"]).revoked_at is None
    assert bearer(issued["token"]).get("/api/experiments/").status_code == 200


def test_a_key_without_the_cnc_prefix_is_found_by_its_hash(user):
    legacy = "0123456789abcdef0123456789abcdef01234567"  # DRF's shape: 40 hexadecimal characters
    ApiToken.objects.create(user=user, kind="login", name="login token", prefix=legacy[:8], key_hash=key_hash(legacy))
    assert bearer(legacy).get("/api/experiments/").status_code == 200
    assert bearer(legacy[:-1] + "8").get("/api/experiments/").status_code == 401
