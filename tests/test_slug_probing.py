"""Slugs of another researcher's objects cannot be probed: every researcher page and API endpoint with
a slug in its address answers the same status for "not yours" as for "does not exist" (GET and POST),
the rater's public link of a published study aside."""
import re

import pytest
from django.test import Client
from django.urls import get_resolver
from rest_framework.test import APIClient

from tests.factories import token_for

pytestmark = pytest.mark.django_db


def patterns(resolver, prefix=""):
    for pattern in resolver.url_patterns:
        if hasattr(pattern, "url_patterns"):
            yield from patterns(pattern, prefix + str(pattern.pattern))
        else:
            yield prefix + str(pattern.pattern)


def address(pattern: str, study: str, experiment: str) -> str:
    path = re.sub(r"<slug:(study|slug)>", study, pattern)
    path = re.sub(r"<slug:experiment>", experiment, path)
    path = re.sub(r"<int:\w+>", "1", path)
    path = re.sub(r"<(str|token):\w+>", "x", path)
    path = re.sub(r"<slug:\w+>", "m", path)
    return "/" + path.replace("^", "").replace("$", "")


def test_others_slugs_answer_as_missing_ones(make_study, other_user):
    study = make_study("likert")
    browser = Client()
    browser.force_login(other_user)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_for(other_user)}")
    differ = []
    checked = 0
    for pattern in patterns(get_resolver()):
        if "<slug:" not in pattern:
            continue
        for method in ("get", "post"):
            theirs = address(pattern, study.slug, study.experiment.slug)
            missing = address(pattern, "no-such-study", "no-such-experiment")
            client = api if theirs.startswith("/api/") else browser
            first, second = getattr(client, method)(theirs), getattr(client, method)(missing)
            checked += 1
            if first.status_code != second.status_code:
                differ.append((method, pattern, first.status_code, second.status_code))
    assert checked > 60
    assert differ == [(m, "r/<slug:slug>/", 400, 404) for m in ("get", "post")]  # the public rater link only
