"""Login and API-token hardening.

- Wrong passwords: django-axes counts failures per (username, client address) on every login path
  that calls ``authenticate`` with the request (the login page, the admin, the token endpoint) and
  locks that pair out for ``AXES_COOLOFF_TIME`` after ``AXES_FAILURE_LIMIT`` failures (HTTP 429).
- The token endpoint is also rate limited per client (DRF ``ScopedRateThrottle``, scope ``auth``).
- API tokens (``studies.api.tokens``: login tokens from ``config.token_views`` and named ones, all
  stored hashed) are checked there, whatever the key looks like: a revoked, expired or unknown one gets
  401 saying so. DRF's token model is not used: ``ApiTokenAuthentication`` takes from DRF's
  ``TokenAuthentication`` only the reading of the ``Authorization: Token <key>`` header (and with it the
  schema's ``tokenAuth``).

This module imports no DRF view: DRF imports it while loading its settings.
"""
from __future__ import annotations

from django.conf import settings
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication


def client_ip(request) -> str | None:
    """The client's address for lockouts. Behind ``TRUSTED_PROXIES`` proxies (Caddy in docker compose)
    REMOTE_ADDR is the proxy's, and the last proxy appends the real client to X-Forwarded-For; entries
    further left were written by the client and are not trusted."""
    proxies = getattr(settings, "TRUSTED_PROXIES", 0)
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    if proxies and len(forwarded) >= proxies:
        return forwarded[-proxies]
    return request.META.get("REMOTE_ADDR")


class ApiTokenAuthentication(TokenAuthentication):
    def authenticate_credentials(self, key):
        from studies.api.tokens import TokenRefused, token_authenticate

        try:
            return token_authenticate(key)
        except TokenRefused as refused:
            raise exceptions.AuthenticationFailed(str(refused)) from None
