"""Named API tokens (issue 39): several per user, the secret shown once and stored only hashed, listed
by prefix, revoked by DELETE (then 401); another user's token is a 404 and stays valid; bad input is
refused by name; the login tokens issued before (DRF's) keep working."""
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from studies.api.tokens import key_hash
from studies.models import ApiToken, IdempotencyKey
from tests.api.test_convention import client_of
from tests.problems import problem_fields

pytestmark = pytest.mark.django_db


def bearer(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    return client


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
    assert [t["name"] for t in listed["results"]] == ["nightly script", "notebook"]
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
    assert [t["name"] for t in api.get("/api/auth/tokens/", {"status": "active"}).json()["results"]] == ["second"]
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
    assert bob.get("/api/auth/tokens/").json()["count"] == 0
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
    assert not ApiToken.objects.exists()


def test_an_active_name_is_not_taken_twice_and_unknown_filters_are_refused(api):
    make(api, "notebook")
    again = api.post("/api/auth/tokens/", {"name": "notebook"}, format="json")
    assert again.status_code == 400 and "name" in problem_fields(again) and ApiToken.objects.count() == 1
    for params, field in (({"status": "live"}, "status"), ({"user": "bob"}, "user")):
        refused = api.get("/api/auth/tokens/", params)
        assert refused.status_code == 400 and field in problem_fields(refused)


def test_an_idempotent_retry_makes_one_token_and_never_stores_the_secret(api):
    headers = {"HTTP_IDEMPOTENCY_KEY": "token-once"}
    first = api.post("/api/auth/tokens/", {"name": "ci"}, format="json", **headers)
    again = api.post("/api/auth/tokens/", {"name": "ci"}, format="json", **headers)
    assert first.status_code == again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"] and again.json()["token"] is None
    assert ApiToken.objects.count() == 1
    assert first.json()["token"] not in str(IdempotencyKey.objects.get(key="token-once").body)


def test_login_tokens_issued_before_named_tokens_keep_working(user):
    legacy = Token.objects.create(user=user)
    assert bearer(legacy.key).get("/api/experiments/").status_code == 200
    assert bearer(legacy.key).get("/api/auth/tokens/").json()["count"] == 0
