"""Login and API-token hardening: lockout after wrong passwords (django-axes), a throttled token
endpoint, the full set of password validators, and login tokens that expire."""
from datetime import timedelta
from unittest import mock

import pytest
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from rest_framework.test import APIClient

from studies.models import ApiToken
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db
PASSWORD = "pw-concord"


@pytest.fixture
def lockout(settings):
    settings.AXES_ENABLED = True
    settings.AXES_FAILURE_LIMIT = 5
    return settings


def login(client, password, ip="203.0.113.7"):
    return client.post("/accounts/login/", {"username": "alice", "password": password}, REMOTE_ADDR=ip)


def test_five_wrong_passwords_lock_the_login_out_even_for_the_right_one(lockout, client, user):
    for _ in range(4):
        assert login(client, "wrong-guess").status_code == 200  # the form again, with its error
    assert login(client, "wrong-guess").status_code == 429  # the fifth failure locks
    locked = login(client, PASSWORD)
    assert locked.status_code == 429
    assert "_auth_user_id" not in client.session
    # the lockout is per (username, address): the owner elsewhere can still log in
    assert login(client, PASSWORD, ip="198.51.100.2").status_code == 302


def test_a_right_password_before_the_limit_resets_the_count(lockout, client, user):
    for _ in range(4):
        login(client, "wrong-guess")
    assert login(client, PASSWORD).status_code == 302
    client.logout()
    for _ in range(4):
        login(client, "wrong-guess")
    assert login(client, PASSWORD).status_code == 302


def test_the_token_endpoint_counts_wrong_passwords_too(lockout, user):
    api = APIClient(REMOTE_ADDR="203.0.113.9")
    for _ in range(4):
        assert api.post("/api/auth/token/", {"username": "alice", "password": "nope"}).status_code == 400
    assert api.post("/api/auth/token/", {"username": "alice", "password": "nope"}).status_code == 429
    locked = api.post("/api/auth/token/", {"username": "alice", "password": PASSWORD})
    assert locked.status_code == 429 and "locked out for 15 minutes" in locked.json()["detail"]
    assert "token" not in locked.json()


def test_the_token_endpoint_is_rate_limited_per_client(settings, user):
    api = APIClient(REMOTE_ADDR="203.0.113.10")
    answers = [api.post("/api/auth/token/", {"username": "alice", "password": "nope"}).status_code for _ in range(11)]
    assert answers[:10] == [400] * 10
    assert answers[10] == 429


def test_client_address_behind_the_proxy_is_the_one_it_appended(settings, rf):
    from config.auth import client_ip

    request = rf.get("/", REMOTE_ADDR="172.18.0.5", HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.7")
    assert client_ip(request) == "172.18.0.5"  # no trusted proxy configured: the header is the client's word
    settings.TRUSTED_PROXIES = 1
    assert client_ip(request) == "203.0.113.7"  # not the spoofed first entry


@pytest.mark.parametrize("password", ["short1!", "password1234", "83920175463", "alice@example.org1"])
def test_weak_passwords_are_refused(password):
    with pytest.raises(ValidationError):
        validate_password(password, user=UserFactory.build(username="alice", email="alice@example.org",
                                                           first_name="alice", last_name="researcher"))


def test_a_strong_password_is_accepted():
    validate_password("tangerine-Vortex-1931-quill")


def logged_in() -> dict:
    response = APIClient().post("/api/auth/token/", {"username": "alice", "password": PASSWORD})
    assert response.status_code == 200, response.content
    return response.json()


def bearer(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    return client


def test_an_expired_login_token_gets_401_saying_so_and_a_new_one_is_issued(user):
    issued = logged_in()
    api = bearer(issued["token"])
    assert api.get("/api/experiments/").status_code == 200
    ApiToken.objects.filter(pk=issued["id"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    expired = api.get("/api/experiments/")
    assert expired.status_code == 401
    assert "expired" in expired.json()["detail"] and "/api/auth/token/" in expired.json()["detail"]
    again = logged_in()
    assert again["token"] != issued["token"]
    assert bearer(again["token"]).get("/api/experiments/").status_code == 200
    assert not ApiToken.objects.filter(pk=issued["id"]).exists()  # the next login cleared the dead one


def test_token_lifetime_is_configurable(settings, user):
    settings.API_TOKEN_LIFETIME = timedelta(hours=1)
    issued = logged_in()
    expires = parse_datetime(issued["expires"])
    assert ApiToken.objects.get(pk=issued["id"]).expires_at == expires
    assert timedelta(minutes=59) < expires - timezone.now() <= timedelta(hours=1)
    api = bearer(issued["token"])
    with mock.patch("django.utils.timezone.now", return_value=expires - timedelta(minutes=1)):
        assert api.get("/api/experiments/").status_code == 200
    with mock.patch("django.utils.timezone.now", return_value=expires + timedelta(minutes=1)):
        assert api.get("/api/experiments/").status_code == 401
