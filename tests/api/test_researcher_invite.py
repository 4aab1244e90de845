"""An admin invites a researcher (``manage.py researcher_invite``): the account signs in with its
one-time password, holds the permission bot endpoints need (the endpoints API answers it), and may get
an API token; an existing account keeps its password; a bad name is refused."""
import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def _invite(*args) -> str:
    out = io.StringIO()
    call_command("researcher_invite", *args, stdout=out)
    return out.getvalue()


def test_researcher_invite_makes_an_account_that_can_use_the_endpoints_api():
    out = _invite("carol", "--email", "carol@example.org", "--token-days", "30")
    carol = get_user_model().objects.get(username="carol")
    password = out.split("one-time password ")[1].split(" ")[0]
    assert carol.check_password(password) and carol.email == "carol@example.org" and not carol.is_staff
    assert carol.has_perm("studies.change_systemendpoint")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {out.split('(shown once): ')[1].strip()}")
    assert client.get("/api/systems/endpoints/").status_code == 200


def test_researcher_invite_keeps_an_existing_password_and_can_leave_endpoints_out(user):
    _invite("dave", "--no-endpoints")
    dave = get_user_model().objects.get(username="dave")
    assert not dave.has_perm("studies.change_systemendpoint")
    out = _invite("alice")
    user.refresh_from_db()
    assert "password unchanged" in out and user.check_password("pw-concord")
    assert get_user_model().objects.get(pk=user.pk).has_perm("studies.change_systemendpoint")


def test_researcher_invite_refuses_a_bad_name():
    with pytest.raises(CommandError, match="username"):
        _invite("no spaces allowed!")
    assert not get_user_model().objects.exists()
