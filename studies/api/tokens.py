"""API tokens: made, listed, revoked, and checked on each request. One system for both kinds:

- ``named`` tokens, made at ``/api/auth/tokens/`` (``api_token_create``), one per script or notebook,
  valid until revoked or until their own expiry;
- ``login`` tokens, issued by ``POST /api/auth/token/`` for a username and password (``login_token_issue``),
  expiring ``API_TOKEN_LIFETIME`` after; a user keeps at most ``LOGIN_TOKENS_MAX`` of them active (each
  login deletes the user's dead login tokens and the oldest live ones beyond that).

A secret is ``cnc_`` + 43 URL-safe characters (256 random bits); only its SHA-256 is stored
(``ApiToken.key_hash``) with its first ``PREFIX_LENGTH`` characters to tell tokens apart, so a secret is
shown once, when it is made, and never again. ``token_authenticate`` is what ``config.auth`` asks for
every key: the user, or why not (revoked, expired, unknown). It looks any key up by its hash, so the
40-character login keys DRF issued before (hashed into ``ApiToken`` by migration 0023) keep working.
Both kinds are listed and revoked at ``/api/auth/tokens/``. This module imports no DRF view
(``config.auth`` loads it)."""
from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from studies.models import ApiToken

SECRET_PREFIX = "cnc_"
PREFIX_LENGTH = 12  # "cnc_" and 8 characters of the secret: enough to tell a user's tokens apart
NAME_MAX = 80
TOKENS_PER_USER_MAX = 100  # active ones; far above any person's scripts
DAYS_MAX = 3650
LAST_USED_EVERY = timedelta(minutes=1)  # last_used_at is written at most this often per token
LOGIN_TOKENS_MAX = 20  # live login tokens per user: one per client that logs in, far above a person's machines


def key_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True)
class Issued:
    token: ApiToken
    secret: str


@transaction.atomic
def api_token_create(*, user, name: str, expires_in_days: int | None = None) -> Issued:
    """A new named token; the secret is in the answer only. Names are unique among the user's active
    tokens; ``expires_in_days`` None: valid until revoked."""
    name = (name or "").strip()
    errors = {}
    if not name:
        errors["name"] = "give the token a name (what script or notebook uses it)"
    elif len(name) > NAME_MAX:
        errors["name"] = f"at most {NAME_MAX} characters"
    if expires_in_days is not None and (isinstance(expires_in_days, bool) or not isinstance(expires_in_days, int)
                                        or not 1 <= expires_in_days <= DAYS_MAX):
        errors["expires_in_days"] = f"a whole number of days from 1 to {DAYS_MAX}, or null for none"
    active = ApiToken.objects.select_for_update().filter(user=user, revoked_at__isnull=True)
    if not errors and active.filter(name=name).exists():
        errors["name"] = f"you have an active token named {name!r}; revoke it or choose another name"
    if not errors and active.filter(kind=ApiToken.Kind.NAMED).count() >= TOKENS_PER_USER_MAX:
        errors["name"] = f"you have {TOKENS_PER_USER_MAX} active tokens; revoke some first"
    if errors:
        raise ValidationError(errors)
    expires_at = timezone.now() + timedelta(days=expires_in_days) if expires_in_days else None
    try:
        return _issue(user=user, name=name, kind=ApiToken.Kind.NAMED, expires_at=expires_at)
    except IntegrityError:  # the same name made concurrently
        raise ValidationError({"name": f"you have an active token named {name!r}"}) from None


def _issue(*, user, name: str, kind: str, expires_at) -> Issued:
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(user=user, name=name, kind=kind, prefix=secret[:PREFIX_LENGTH],
                                    key_hash=key_hash(secret), expires_at=expires_at)
    return Issued(token=token, secret=secret)


@transaction.atomic
def login_token_issue(*, user) -> Issued:
    """A login token (``POST /api/auth/token/``, the password already checked), named ``login <UTC time>``
    and expiring ``API_TOKEN_LIFETIME`` from now. The user's login tokens that are revoked or expired are
    deleted first (they authenticate nothing and would pile up, one per login), and so are the oldest
    live ones beyond ``LOGIN_TOKENS_MAX - 1``: the newest logins keep working."""
    list(get_user_model().objects.select_for_update().filter(pk=user.pk).values_list("pk"))  # one login at a time
    now = timezone.now()
    logins = ApiToken.objects.select_for_update().filter(user=user, kind=ApiToken.Kind.LOGIN)
    logins.filter(Q(revoked_at__isnull=False) | Q(expires_at__lte=now)).delete()
    oldest = list(logins.order_by("-created_at", "-pk").values_list("pk", flat=True)[LOGIN_TOKENS_MAX - 1:])
    ApiToken.objects.filter(pk__in=oldest).delete()
    taken = set(ApiToken.objects.filter(user=user, revoked_at__isnull=True).values_list("name", flat=True))
    wanted = name = f"login {now:%Y-%m-%d %H:%M:%S} UTC"
    n = 1
    while name in taken:  # several logins in one second, or a named token called so
        n += 1
        name = f"{wanted} ({n})"
    return _issue(user=user, name=name, kind=ApiToken.Kind.LOGIN, expires_at=now + settings.API_TOKEN_LIFETIME)


@transaction.atomic
def api_token_revoke(*, token: ApiToken) -> ApiToken:
    """The token answers 401 from now on; revoking twice changes nothing more."""
    token = ApiToken.objects.select_for_update().get(pk=token.pk)
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def token_status(token: ApiToken, now=None) -> str:
    now = now or timezone.now()
    if token.revoked_at is not None:
        return "revoked"
    if token.expires_at is not None and token.expires_at <= now:
        return "expired"
    return "active"


class TokenRefused(Exception):
    """Why a secret does not authenticate (the message is the 401's detail)."""


def token_authenticate(secret: str) -> tuple[object, ApiToken]:
    """(user, token) for a valid secret; ``TokenRefused`` saying why otherwise."""
    token = ApiToken.objects.select_related("user").filter(key_hash=key_hash(secret)).first()
    if token is None or not token.user.is_active:
        raise TokenRefused("Invalid token.")
    now = timezone.now()
    status = token_status(token, now)
    if status == "revoked":
        raise TokenRefused(f"Token {token.prefix}… ({token.name}) was revoked at {token.revoked_at:%Y-%m-%d %H:%M} UTC.")
    if status == "expired":
        renew = ("POST your username and password to /api/auth/token/ for a new one" if token.kind == ApiToken.Kind.LOGIN
                 else "make a new one at /api/auth/tokens/")
        raise TokenRefused(f"Token {token.prefix}… ({token.name}) expired at {token.expires_at:%Y-%m-%d %H:%M} UTC: "
                           f"{renew}.")
    if token.last_used_at is None or token.last_used_at < now - LAST_USED_EVERY:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token.user, token
