"""Per-assignment form tokens: the rater pages' protection against cross-site form posts.

Inside MTurk's cross-site iframe the browser may send no cookies at all (SameSite=Lax, or
third-party cookies blocked), so Django's cookie-based CSRF check cannot work there. The
assignment token in the URL is already the rater's capability; each rater form also carries
``HMAC(secret key, assignment token + purpose)`` (``salted_hmac``), which only a page this server
rendered for that assignment can contain. The rater POST views are ``csrf_exempt`` and check this
token instead; every other view keeps Django's CSRF protection.
"""
from __future__ import annotations

from django.utils.crypto import constant_time_compare, salted_hmac

FIELD = "form_token"
HEADER = "X-Concord-Form-Token"
PURPOSES = ("consent", "item", "draft", "questionnaire", "chat", "practice", "practice-consent", "practice-continue",
            "practice-retake",
            "api", "api-practice")  # the rater API's keys (studies.api.rater_views, rater_practice), in a header
_SALT = "concord.rater-form"


def form_token(assignment_token: str, purpose: str) -> str:
    if purpose not in PURPOSES:
        raise ValueError(f"unknown form purpose {purpose!r}")
    return salted_hmac(f"{_SALT}.{purpose}", assignment_token, algorithm="sha256").hexdigest()


def form_token_valid(assignment_token: str, purpose: str, given: str | None) -> bool:
    return bool(given) and constant_time_compare(form_token(assignment_token, purpose), given)
