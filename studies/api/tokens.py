"""Named API tokens (issue 39): made, listed, revoked, and checked on each request.

A secret is ``cnc_`` + 43 URL-safe characters (256 random bits); only its SHA-256 is stored
(``ApiToken.key_hash``) with its first ``PREFIX_LENGTH`` characters to tell tokens apart, so a secret is
shown once, when it is made, and never again. ``token_authenticate`` is what ``config.auth`` asks for a
secret that starts with ``cnc_``: the user, or why not (revoked, expired, unknown). Keys without the
prefix are DRF's login tokens (``/api/auth/token/``) and are checked as before, so every token issued
before named tokens existed stays valid. This module imports no DRF view (``config.auth`` loads it)."""
from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from studies.models import ApiToken

SECRET_PREFIX = "cnc_"
PREFIX_LENGTH = 12  # "cnc_" and 8 characters of the secret: enough to tell a user's tokens apart
NAME_MAX = 80
TOKENS_PER_USER_MAX = 100  # active ones; far above any person's scripts
DAYS_MAX = 3650
LAST_USED_EVERY = timedelta(minutes=1)  # last_used_at is written at most this often per token


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
    if not errors and active.count() >= TOKENS_PER_USER_MAX:
        errors["name"] = f"you have {TOKENS_PER_USER_MAX} active tokens; revoke some first"
    if errors:
        raise ValidationError(errors)
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    expires_at = timezone.now() + timedelta(days=expires_in_days) if expires_in_days else None
    try:
        token = ApiToken.objects.create(user=user, name=name, prefix=secret[:PREFIX_LENGTH], key_hash=key_hash(secret),
                                        expires_at=expires_at)
    except IntegrityError:  # the same name made concurrently
        raise ValidationError({"name": f"you have an active token named {name!r}"}) from None
    return Issued(token=token, secret=secret)


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
        raise TokenRefused(f"Token {token.prefix}… ({token.name}) expired at {token.expires_at:%Y-%m-%d %H:%M} UTC: "
                           "make a new one at /api/auth/tokens/.")
    if token.last_used_at is None or token.last_used_at < now - LAST_USED_EVERY:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token.user, token
