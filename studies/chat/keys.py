"""Endpoint keys: read from the environment or stored encrypted, never shown again.

- From the environment: the endpoint names a variable, which must start with ``CONCORD_BOT_KEY_``. The
  prefix matters: without it a researcher could name ``DJANGO_SECRET_KEY`` or ``DATABASE_URL`` and have
  the server post it to a URL of their choosing.
- Stored: a Fernet token (AES-128-CBC + HMAC-SHA256, ``cryptography``). The Fernet key is
  ``CHAT_ENDPOINT_KEYS_SECRET`` when the deployment sets one (a Fernet key: 32 url-safe base64 bytes), else
  derived from ``SECRET_KEY`` with HKDF-SHA256 (RFC 5869) under its own label, so the site's signing key
  is never used directly as an encryption key. Changing either makes stored keys unreadable: the
  endpoint then says so and asks for the key again.
"""
from __future__ import annotations

import base64
import os
import re

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

ENV_PREFIX = "CONCORD_BOT_KEY_"
ENV_NAME = re.compile(r"^CONCORD_BOT_KEY_[A-Z0-9_]{1,80}$")
KEY_MAX_LENGTH = 4000


class KeyUnavailable(Exception):
    """The endpoint's key cannot be had; the message says why and what to do."""


def _fernet() -> Fernet:
    configured = getattr(settings, "CHAT_ENDPOINT_KEYS_SECRET", "")
    if configured:
        return Fernet(configured)
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"concord", info=b"chat-endpoint-keys/1")
    return Fernet(base64.urlsafe_b64encode(derived.derive(settings.SECRET_KEY.encode())))


def key_encrypt(plain: str) -> str:
    return _fernet().encrypt(plain.encode()).decode()


def key_decrypt(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode()).decode()
    except (InvalidToken, ValueError):
        raise KeyUnavailable("the stored key cannot be decrypted (the site's secret changed?): "
                             "enter the key again") from None


def env_name_problem(name: str) -> str | None:
    """Why ``name`` may not be used as the key's environment variable, or None."""
    if not ENV_NAME.match(name):
        return (f"must be an environment variable named {ENV_PREFIX}<NAME> (capitals, digits and _), "
                f"got {name[:40]!r}")
    return None


def key_problem(plain: str) -> str | None:
    if len(plain) > KEY_MAX_LENGTH:
        return f"is longer than {KEY_MAX_LENGTH} characters"
    if any(ord(c) < 32 or ord(c) == 127 for c in plain):
        return "contains spaces, line breaks or control characters"  # it travels in an HTTP header
    if " " in plain:
        return "contains spaces, line breaks or control characters"
    return None


def endpoint_key(*, key_env: str, key_encrypted: str) -> str:
    """The plain key for one call ("" when the endpoint has none)."""
    if key_env:
        if env_name_problem(key_env):
            raise KeyUnavailable(f"the key's environment variable {env_name_problem(key_env)}")
        value = os.environ.get(key_env, "")
        if not value:
            raise KeyUnavailable(f"the environment variable {key_env} is not set on this server")
        return value
    if key_encrypted:
        return key_decrypt(key_encrypted)
    return ""
