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


def test_the_tally_counts_an_unreachable_platforms_502_apart_from_server_errors():
    # A crowd route answers 502 when MTurk or Prolific cannot be reached (always, with no network): the
    # outside service failed, which the route says; a 500 or 501 is Concord's own failure and still counts.
    tally = fuzz_api.Tally()
    tally.note("get", "/api/crowd/publications/{pk}/balance/", "nul-query", 502)
    tally.note("get", "/api/x/", "nul", 501)
    summary = tally.summary()
    assert summary["answers_gateway"] == 1 and summary["answers_500"] == 1
    assert [error["status"] for error in summary["errors"]] == [501]


def test_the_fuzz_pass_finds_every_api_route_in_the_urlconf():
    from benchmarks.fuzz_routes import api_routes

    routes = api_routes()
    assert "/api/rate/assignments/{token}/items/{position}/answer/" in routes
    assert "/api/metrics/runs/{pk}/cancel/" in routes and "/api/crowd/publications/{pk}/publish/" in routes
    assert "/api/schema/" not in routes and all(r.startswith("/api/") for r in routes)


def test_hostile_bodies_to_the_rater_api_and_every_api_route_get_no_500(settings):
    """The rater API answered by a real API rater, each answer field hostile in turn (a 401-digit integer
    among them), and every URLconf route under /api/ with every hostile body: no 500, every route sent."""
    from benchmarks import fuzz_routes

    settings.DEBUG = False
    world = fuzz_api.world_build()
    fuzz_routes.rater_api_session(world)
    tally = fuzz_api.Tally()
    fuzz_routes.rater_api_pass(tally, world)
    answers = fuzz_routes.RATER_PREFIX + "{token}/items/{position}/answer/"
    assert tally.statuses[400] > 100 and answers in tally.routes  # the answers reached validation
    routes = fuzz_routes.api_routes()
    fuzz_routes.route_pass(tally, world, routes)
    assert tally.summary()["answers_500"] == 0, tally.errors[:20]
    reached = fuzz_routes.routes_reached(tally, routes)
    assert reached["routes_not_sent"] == [] and reached["routes_only_401"] == []
