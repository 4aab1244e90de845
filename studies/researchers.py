"""Researcher accounts made by an admin (``manage.py researcher_invite``): an account that signs in at
``/accounts/login/`` with a one-time password it should change, optionally with an API token, and the
``studies.change_systemendpoint`` permission the bot-endpoint pages and API need (chat studies,
self-chats and LLM judges call a researcher's own endpoints)."""
from __future__ import annotations

import secrets
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.exceptions import ValidationError
from django.db import transaction

ENDPOINT_PERMISSION = ("studies", "change_systemendpoint")


@dataclass(frozen=True)
class Invited:
    user: object
    password: str | None  # None: the account existed and kept its password
    created: bool


def endpoint_permission() -> Permission:
    app_label, codename = ENDPOINT_PERMISSION
    return Permission.objects.get(content_type__app_label=app_label, codename=codename)


@transaction.atomic
def researcher_invite(*, username: str, email: str = "", endpoints: bool = True) -> Invited:
    """Make the account ``username`` (a random one-time password) or, if it exists, leave its password;
    grant the endpoint permission when ``endpoints``. A bad user name is refused, naming the field."""
    user_model = get_user_model()
    username = (username or "").strip()
    field = user_model._meta.get_field(user_model.USERNAME_FIELD)
    try:
        field.run_validators(username)
        if not username:
            raise ValidationError("give a user name")
    except ValidationError as error:
        raise ValidationError({"username": error.messages}) from None
    user = user_model.objects.filter(**{user_model.USERNAME_FIELD: username}).first()
    password = None
    created = user is None
    if created:
        password = secrets.token_urlsafe(12)
        user = user_model.objects.create_user(username=username, email=email, password=password)
    if endpoints:
        user.user_permissions.add(endpoint_permission())
    return Invited(user=user, password=password, created=created)
