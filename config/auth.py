"""Login and API-token hardening.

- Wrong passwords: django-axes counts failures per (username, client address) on every login path
  that calls ``authenticate`` with the request (the login page, the admin, the token endpoint) and
  locks that pair out for ``AXES_COOLOFF_TIME`` after ``AXES_FAILURE_LIMIT`` failures (HTTP 429).
- The token endpoint is also rate limited per client (DRF ``ScopedRateThrottle``, scope ``auth``).
- API tokens expire ``API_TOKEN_LIFETIME`` after they were issued: an expired token gets 401 with a
  message saying so, and asking the token endpoint again (``config.token_views``) issues a fresh one.
- Named tokens (``studies.api.tokens``, secrets starting ``cnc_``, stored hashed) are checked there: a
  revoked or expired one gets 401 saying so. Any other key is a login token, checked as before.

This module imports no DRF view: DRF imports it while loading its settings.
"""
from __future__ import annotations

from django.conf import settings
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token


def client_ip(request) -> str | None:
    """The client's address for lockouts. Behind ``TRUSTED_PROXIES`` proxies (Caddy in docker compose)
    REMOTE_ADDR is the proxy's, and the last proxy appends the real client to X-Forwarded-For; entries
    further left were written by the client and are not trusted."""
    proxies = getattr(settings, "TRUSTED_PROXIES", 0)
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    if proxies and len(forwarded) >= proxies:
        return forwarded[-proxies]
    return request.META.get("REMOTE_ADDR")


def token_expired(token: Token) -> bool:
    return token.created <= timezone.now() - settings.API_TOKEN_LIFETIME


class ExpiringTokenAuthentication(TokenAuthentication):
    def authenticate_credentials(self, key):
        from studies.api.tokens import SECRET_PREFIX, TokenRefused, token_authenticate

        if key.startswith(SECRET_PREFIX):
            try:
                return token_authenticate(key)
            except TokenRefused as refused:
                raise exceptions.AuthenticationFailed(str(refused)) from None
        user, token = super().authenticate_credentials(key)
        if token_expired(token):
            expired_at = (token.created + settings.API_TOKEN_LIFETIME).strftime("%Y-%m-%d %H:%M UTC")
            raise exceptions.AuthenticationFailed(
                f"Token expired at {expired_at}: POST your username and password to /api/auth/token/ for a new one.")
        return user, token

