"""A small, seeded slice of the fuzz pass (benchmarks/fuzz_api.py): schemathesis cases for the first
operations of the API schema, hand-written hostile bodies to them, and every rater POST and entry
link with hostile fields; no answer may be a 500. The whole pass: ``python benchmarks/fuzz_api.py``."""
import pytest

from benchmarks import fuzz_api

pytestmark = pytest.mark.django_db


def test_a_seeded_slice_of_the_fuzz_pass_gets_no_500(settings):
    settings.DEBUG = False
    summary = fuzz_api.fuzz(examples=1, seed=26, limit=10)
    assert summary["answers_500"] == 0, summary["errors"]
    assert summary["requests"] > 500
    statuses = {int(code) for code in summary["by_status"]}
    assert {400, 404} <= statuses and any(200 <= code < 300 for code in statuses)  # refused and served both


def test_the_tally_reports_500s_with_their_routes():
    tally = fuzz_api.Tally()
    tally.note("post", "/api/x/", "nul", 500)
    tally.note("get", "/api/y/", "address", 404)
    summary = tally.summary()
    assert summary["answers_500"] == 1 and summary["requests"] == 2
    assert summary["errors"] == [{"method": "POST", "route": "/api/x/", "input": "nul", "status": 500}]
