"""The audit's Low findings: bad input gets a clear 4xx naming the field, never a 500,
and changes nothing."""
import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from studies.designs.common import target_key
from studies.models import AssignmentItem, Study
from studies.rating import form_tokens
from tests.factories import prolific_id
from tests.problems import problem_fields
from tests.studies.test_rater_views import enter


def key(slot, target):
    """The letter a rater page names ``target`` by on ``slot``'s screen (its fields never carry an id)."""
    return target_key(slot.response_order, target)


pytestmark = pytest.mark.django_db


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.fixture
def rater(make_study):
    study = make_study("likert", platform="prolific")
    client = Client()
    assignment = enter(client, study, f"PROLIFIC_PID={prolific_id('hostile')}&SESSION_ID={prolific_id('s')}")
    return client, assignment


def test_an_autosave_field_name_over_80_characters_is_a_400_naming_it(rater):
    client, assignment = rater
    response = client.post(f"/r/a/{assignment.token}/items/0/draft/", data=json.dumps({"r" * 81: "3"}),
                           content_type="application/json",
                           headers={form_tokens.HEADER: form_tokens.form_token(assignment.token, "draft")})
    assert response.status_code == 400 and "longer than 80" in response.json()["error"]
    assert AssignmentItem.objects.get(assignment=assignment, position=0).draft == {}


def test_a_nul_in_a_rater_address_is_a_404_before_any_query():
    from django.urls import Resolver404, resolve

    for path in ("/r/a/\x00/", "/r/a/abc\x00def/items/0/", "/r/a/\x00/items/0/chat/"):
        with pytest.raises(Resolver404):  # the token never reaches a query (PostgreSQL refuses NUL: a 500)
            resolve(path)
    assert Client().get("/r/a/%00/").status_code == 404
    assert Client().get("/r/a/abc%00def/items/0/").status_code == 404
    assert Client().get("/r/%00/?PROLIFIC_PID=x").status_code == 404


@pytest.mark.parametrize("path", ["/api/studies/create/", "/api/experiments/create/", "/api/auth/token/"])
def test_deeply_nested_json_to_the_api_is_a_400(api, path):
    response = api.post(path, data=nested(100_000), content_type="application/json")
    assert response.status_code == 400, response.content[:200]
    assert "nested" in response.content.decode()


def test_an_active_time_beyond_a_day_is_refused(rater):
    client, assignment = rater
    slot = assignment.assignment_items.get(position=0)
    answers = {f"r{key(slot, r)}-{c}": 4 for r in slot.response_order for c in ("readability", "coherence")}
    response = client.post(f"/r/a/{assignment.token}/items/0/",
                           {**answers, "active_ms": "9e307", "form_token": form_tokens.form_token(assignment.token, "item")})
    assert response.status_code == 400 and "active_ms" in response.content.decode()
    slot.refresh_from_db()
    assert slot.answered_at is None


def test_raters_per_item_of_1e30_is_a_400_naming_it(api, user):
    experiment = api.post("/api/experiments/create/", {"title": "E"}, format="json").json()["slug"]
    for value in (10**30, 1e30, "1" * 5000):
        response = api.post("/api/studies/create/", {"experiment": experiment, "title": "T", "design": "likert",
                                                      "raters_per_item": value}, format="json")
        assert response.status_code == 400 and "raters_per_item" in problem_fields(response), response.content[:300]
    assert not Study.objects.exists()


def _import(api, name: str, body: bytes, fmt: str = "auto"):
    return api.post("/api/imports/", {"file": _named(name, body), "format": fmt},
                    format="multipart")


def _named(name: str, body: bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, body)


def test_an_integer_of_more_than_4300_digits_in_an_import_is_a_400(api):
    line = '{"id": "c1", "turns": ["hi", "hello"], "responses": {"a": "x"}, "metadata": {"n": ' + "9" * 5000 + "}}"
    response = _import(api, "big.jsonl", (line + "\n").encode())
    assert response.status_code == 400, response.content[:300]
    assert "line 1" in response.content.decode() or '"line": 1' in response.content.decode()


def test_a_dstc9_score_too_large_for_a_float_is_a_400(api):
    records = [{"context": "User: hi\nSystem: hello", "coherent": int("9" * 400), "model": "m"}]
    response = _import(api, "dstc9.json", json.dumps(records).encode(), fmt="dstc9")
    assert response.status_code == 400, response.content[:300]
    assert "coherent" in response.content.decode()


def test_load_demo_refuses_production_settings(settings):
    settings.DEMO_ALLOWED = False
    with pytest.raises(CommandError, match="production"):
        call_command("load_demo", stdout=io.StringIO())
    from django.contrib.auth import get_user_model

    assert not get_user_model().objects.filter(is_superuser=True).exists()


def test_production_settings_do_not_allow_the_demo():
    from pathlib import Path

    source = Path("config/settings/production.py").read_text()
    assert "DEMO_ALLOWED = False" in source


@pytest.mark.parametrize("title", ["Costs $5 or $\\frac{a}$", "Wording $x^{2}$"])
def test_a_title_with_dollars_is_drawn_as_typed_in_report_figures(title):
    """matplotlib's mathtext read "$...$" in a condition's title as TeX: a 500 for a malformed one, a
    superscript for "$x^{2}$"."""
    from studies.reports import plots

    cell = {"value": 0.5, "ci95": [0.3, 0.7]}
    table = [{"condition": "c", "criterion": "fluency", "icc": {"ICC(C,k)": cell, "ICC(A,k)": cell}}]
    svg = plots.icc_bars(table, {"c": title})
    assert title in svg


# Found by the fuzz pass (benchmarks/fuzz_api.py).

@pytest.mark.parametrize(("body", "message"), [
    (b'{"experiment": "e", "title": "T", "design": "\\ud800"}', "surrogate"),
    (b'{"title": "a\\u0000b"}', "NUL"),
    (b'{"\\u0000": 1}', "NUL"),
])
def test_json_strings_that_cannot_be_stored_are_a_400(api, body, message):
    response = api.post("/api/studies/create/", data=body, content_type="application/json")
    assert response.status_code == 400 and message in response.json()["detail"]


def test_positions_and_ids_beyond_a_64_bit_integer_are_a_404(api, rater):
    client, assignment = rater
    huge = "9" * 20
    assert client.get(f"/r/a/{assignment.token}/items/{huge}/").status_code == 404
    assert client.post(f"/r/a/{assignment.token}/items/{huge}/").status_code == 404
    assert api.get(f"/api/imports/{huge}/").status_code == 404
    assert api.post(f"/api/crowd/publications/{huge}/sync/").status_code == 404


def test_a_csv_header_over_the_field_limit_is_a_400(api):
    response = _import(api, "wide.csv", b'"' + b"x" * 200_000 + b'"\n', fmt="csv")
    assert response.status_code == 400 and "header row" in response.content.decode()


def test_an_offset_beyond_a_64_bit_integer_is_a_400_naming_it(api, make_study):
    study = make_study("likert")
    response = api.get(f"/api/studies/{study.slug}/items/", {"offset": "9" * 30, "limit": "9" * 30})
    assert response.status_code == 400 and "limit" in problem_fields(response)
    response = api.get(f"/api/studies/{study.slug}/items/", {"offset": "9" * 30})
    assert response.status_code == 400 and "offset" in problem_fields(response)
    past_the_end = api.get(f"/api/studies/{study.slug}/items/", {"offset": str(10**9), "limit": "1000"})
    assert past_the_end.status_code == 200 and past_the_end.json()["results"] == []
    assert len(api.get(f"/api/studies/{study.slug}/items/", {"limit": "1000"}).json()["results"]) == study.items.count()


def _plain_digits_cases():
    return ["\u00b2", "\u0663", "9" * 5000]  # superscript two: isdigit() but int() refuses it; Arabic-Indic three; 5,000 digits


@pytest.mark.parametrize("raw", _plain_digits_cases())
def test_a_bws_rank_in_odd_digits_is_refused_naming_the_field(make_study, raw):
    study = make_study("bws", platform="prolific")
    client = Client()
    assignment = enter(client, study, f"PROLIFIC_PID={prolific_id('ranker')}&SESSION_ID={prolific_id('r')}")
    slot = assignment.assignment_items.get(position=0)
    answers = {f"r{key(slot, r)}-{c}": str(i + 1) for i, r in enumerate(slot.response_order) for c in ("readability", "coherence")}
    first = f"r{key(slot, slot.response_order[0])}-readability"
    response = client.post(f"/r/a/{assignment.token}/items/0/", {**answers, first: raw,
                                                                 "form_token": form_tokens.form_token(assignment.token, "item")})
    assert response.status_code == 400 and "is not a rank" in response.content.decode()


@pytest.mark.parametrize("raw", _plain_digits_cases())
def test_odd_digits_in_a_time_limit_or_a_rater_filter_are_no_500(api, make_study, raw):
    study = make_study("likert")
    response = api.post(f"/api/studies/{study.slug}/rater-settings/", {"time_limit_minutes": raw[:10]}, format="json")
    assert response.status_code == 400 and "time_limit_minutes" in problem_fields(response)
    browse = api.get(f"/api/studies/{study.slug}/browse/", {"rater": raw})
    assert browse.status_code == 400 and "rater" in problem_fields(browse)  # a filter that would be ignored
