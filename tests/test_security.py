"""Security headers on every page, no-store for authenticated answers, and production settings that
refuse a public or weak secret key and insist on HTTPS."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.http import HttpResponse
from django.test import RequestFactory

from config.security import SecurityHeadersMiddleware

ROOT = Path(__file__).resolve().parents[1]
INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>", re.I)
INLINE_HANDLER = re.compile(r"\son[a-z]+\s*=|\sstyle\s*=|javascript:", re.I)


@pytest.mark.django_db
def test_every_page_gets_a_self_only_policy_that_forbids_framing(client):
    response = client.get("/accounts/login/")
    policy = response["Content-Security-Policy"]
    assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert response["X-Content-Type-Options"] == "nosniff"


def test_a_response_with_its_own_policy_is_left_alone():
    """Convention with the rater pages: they set a policy that lets Mechanical Turk frame them."""
    own = "default-src 'self'; frame-ancestors https://*.mturk.com"

    def view(request):
        response = HttpResponse("ok")
        response["Content-Security-Policy"] = own
        return response

    request = RequestFactory().get("/r/some-study/")
    assert SecurityHeadersMiddleware(view)(request)["Content-Security-Policy"] == own


@pytest.mark.django_db
def test_authenticated_answers_are_never_cached(api, researcher_client):
    answer = api.get("/api/experiments/")
    assert answer.status_code == 200
    assert "no-store" in answer["Cache-Control"] and "private" in answer["Cache-Control"]
    page = researcher_client.get("/")
    assert page.status_code == 200 and "no-store" in page["Cache-Control"]


@pytest.fixture
def researcher_client(client, user):
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_pages_and_api_docs_carry_no_inline_script_or_style_the_policy_would_block(researcher_client, make_study):
    study = make_study("likert")
    pages = ["/", f"/studies/{study.slug}/",
             f"/experiments/{study.experiment.slug}/studies/new/", "/import/", "/api/docs/", "/metrics/"]
    checked = 0
    for url in pages:
        response = researcher_client.get(url)
        if response.status_code == 404:
            continue
        assert response.status_code == 200, url
        html = response.content.decode()
        assert not INLINE_SCRIPT.search(html), f"{url}: inline <script>"
        assert not INLINE_HANDLER.search(html), f"{url}: inline handler or style attribute"
        checked += 1
    assert checked >= 6


def production_settings(**env):
    code = ("import django, json; django.setup(); from django.conf import settings as s; "
            "print(json.dumps([s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE]))")
    clean = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SECRET_KEY", "SECURE_COOKIES", "SECURE_SSL_REDIRECT")}
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings.production", "ALLOWED_HOSTS": "example.org",
                               **env})


@pytest.mark.parametrize(("key", "message"), [
    (None, "DJANGO_SECRET_KEY is not set"),
    ("change-me-in-production", "public default key"),
    ("concord-insecure-development-key-change-me", "public default key"),
    ("s3cr3t-but-short", "too short"),
    ("a" * 64, "too simple"),
])
def test_production_refuses_to_start_without_a_real_secret_key(key, message):
    result = production_settings(**({"DJANGO_SECRET_KEY": key} if key else {}))
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and message in result.stderr


def test_production_with_a_real_key_redirects_to_https_sends_hsts_and_secures_cookies():
    result = production_settings(DJANGO_SECRET_KEY="k8J-2vQz_x9LmN4pR7tY1wE3uI6oP0aS5dF8gH2jK4lZ7xC9vB1nM3q")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[true, 31536000, true, true]"
