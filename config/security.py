"""Site-wide security headers and the production secret-key check.

- ``SecurityHeadersMiddleware`` adds a Content-Security-Policy (``default-src 'self'``,
  ``frame-ancestors 'none'``: no inline script, no foreign origin, no framing) to every response
  that does not carry one already. Convention: a view that needs another policy sets its own header
  and is left alone (the rater pages do, so that Mechanical Turk can frame them). Every response to
  an authenticated user also gets ``Cache-Control: private, no-store``: exports, reports and API
  answers hold research data and worker ids that must not stay in a shared or browser cache.
- ``checked_secret_key`` refuses to start production with a missing, public or guessable key
  (Django signs sessions, password-reset links and rater invite links with it).
"""
from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.cache import patch_cache_control

DEFAULT_CSP = "; ".join([
    "default-src 'self'",
    "img-src 'self' data:",  # Swagger UI's icons are data: URLs
    "object-src 'none'",
    "base-uri 'self'",
    "frame-ancestors 'none'",
])

# Keys that have been public (committed defaults, the docker build step): never accepted in production.
PUBLIC_SECRET_KEYS = frozenset({
    "concord-insecure-development-key-change-me",
    "change-me-in-production",
    "build-only",
})
MIN_SECRET_KEY_LENGTH = 50
MIN_SECRET_KEY_CHARACTERS = 5


def checked_secret_key(value: str | None) -> str:
    """``value`` if it is fit to sign production sessions and links; otherwise a clear error."""
    how = ("Set DJANGO_SECRET_KEY to a long random value, e.g. the output of "
           "`python -c \"import secrets; print(secrets.token_urlsafe(50))\"` (in docker/.env for docker compose).")
    if not value:
        raise ImproperlyConfigured(f"DJANGO_SECRET_KEY is not set. {how}")
    if value in PUBLIC_SECRET_KEYS or value.startswith("django-insecure"):
        raise ImproperlyConfigured(f"DJANGO_SECRET_KEY is a public default key. {how}")
    if len(value) < MIN_SECRET_KEY_LENGTH or len(set(value)) < MIN_SECRET_KEY_CHARACTERS:
        raise ImproperlyConfigured(
            f"DJANGO_SECRET_KEY is too short or too simple ({len(value)} characters; at least "
            f"{MIN_SECRET_KEY_LENGTH}, with at least {MIN_SECRET_KEY_CHARACTERS} different ones). {how}")
    return value


class SecurityHeadersMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response
        self.policy = getattr(settings, "CONTENT_SECURITY_POLICY", DEFAULT_CSP)

    def __call__(self, request):
        response = self.get_response(request)
        if self.policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = self.policy
        user = getattr(request, "user", None)  # DRF copies a token-authenticated user onto the HttpRequest
        if user is not None and user.is_authenticated:
            patch_cache_control(response, private=True, no_store=True)
        return response
