"""The fuzz pass's part that needs no hand list (``benchmarks/fuzz_api.py`` runs it): every JSON route the
URLconf serves, and the rater API answered by a real rater.

1. **Routes from the URLconf** (``api_routes``): every pattern under ``/api/`` as Django resolves it, so a
   route added tomorrow is fuzzed without anyone listing it. Each gets the hostile query strings with GET
   and DELETE and every whole hostile body (``HOSTILE_BODIES``) with POST, PUT and PATCH, with the
   parameters of real objects where the world has them; a route under ``/api/rate/assignments/`` is called
   as the rater of a real API session (``X-Concord-Rater-Key``), the others as the researcher.
2. **The rater API's answers** (``rater_api_pass``): a rater who entered through ``/api/rate/`` answers each
   of their items with one field at a time replaced by each hostile value (``HOSTILE_VALUES``: integers of
   5,000 and 401 digits, 1e400, nesting 100,000 deep, NUL, lone surrogates, wrong types, a million
   characters), then submits a hostile questionnaire; the practice API's answer takes the same bodies.
"""
from __future__ import annotations

import itertools
import json
import re
import time
from typing import Any

from benchmarks.fuzz_api import HOSTILE_BODIES, HOSTILE_VALUES, HUGE_DIGITS, Tally, World, _client

_TOKENS = itertools.count(1)
SKIPPED = ("/api/schema/", "/api/docs/")  # the schema and its viewer take no input
RATER_PREFIX = "/api/rate/assignments/"
KEY_HEADER = "HTTP_X_CONCORD_RATER_KEY"
EXTRA_VALUES = {"401-digit-integer": "9" * 401, "negative-huge-integer": "-" + "9" * 401, "1e308": "1e308",
                "list-of-huge": "[1, " + "9" * 401 + "]", "deep-object": '{"a":' * 100_000 + "1" + "}" * 100_000}


def api_routes() -> list[str]:
    """Every route of the URLconf under ``/api/`` as a template (``/api/studies/{slug}/``), in order."""
    from django.urls import URLPattern, URLResolver, get_resolver

    found: list[str] = []

    def walk(patterns, prefix: str) -> None:
        for pattern in patterns:
            route = prefix + str(pattern.pattern).lstrip("^").rstrip("$")
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, route)
            elif isinstance(pattern, URLPattern):
                found.append("/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route))

    walk(get_resolver().url_patterns, "")
    return [r for r in dict.fromkeys(found) if r.startswith("/api/") and r not in SKIPPED]


def rater_api_session(world: World, label: str = "") -> None:
    """A rater enters the world's published (Prolific) study through the rater API, with its link's
    parameters, consent and a secret: ``world.rater_key``, ``api_token`` and ``api_key``."""
    import hashlib

    from studies.models import Study

    study = Study.objects.get(slug=world.study)
    pid, session = (hashlib.sha256(f"fuzz-api{label}{p}".encode()).hexdigest()[:24] for p in ("pid", "session"))
    body = {"link": {"PROLIFIC_PID": pid, "SESSION_ID": session}, "consent": True,
            "client_secret": "fuzz-rater-secret-0001"}
    for _ in range(4):  # the passes before may have used up the entry's rate limit: wait as told
        entered = _client().post(f"/api/rate/studies/{study.rater_key}/sessions/", json.dumps(body),
                                 content_type="application/json")
        if entered.status_code != 429:
            break
        time.sleep(min(int(entered.headers.get("Retry-After") or 10), 70))
    assert entered.status_code in (200, 201), entered.content[:300]
    answer = entered.json()
    world.rater_key, world.api_token, world.api_key = study.rater_key, answer["token"], answer["key"]


def researcher_token_fresh(world: World) -> None:
    """The world's researcher token, made again when a pass revoked it (the passes send DELETE to
    ``/api/auth/tokens/{pk}/`` too); a valid one is kept (a user holds at most 100 active tokens)."""
    from django.contrib.auth import get_user_model

    from studies.api.tokens import TokenRefused, api_token_create, token_authenticate

    try:
        token_authenticate(world.token)
    except TokenRefused:
        world.token = api_token_create(user=get_user_model().objects.get(username="fuzzer"),
                                       name=f"fuzz-{next(_TOKENS)}").secret


def route_fill(route: str, world: World) -> str:
    known = world.path_parameters([name for name in re.findall(r"\{(\w+)\}", route)])
    if route.startswith(RATER_PREFIX):
        known["token"] = world.api_token
    return re.sub(r"\{(\w+)\}", lambda m: str(known.get(m.group(1), "x")), route)


def route_auth(route: str, world: World) -> dict[str, str]:
    if route.startswith(RATER_PREFIX):
        return {KEY_HEADER: world.api_key}
    return {"HTTP_AUTHORIZATION": f"Token {world.token}"}


def route_pass(tally: Tally, world: World, routes: list[str] | None = None) -> None:
    """Hostile queries and whole bodies to every URLconf route under ``/api/`` (``api_routes``)."""
    client = _client()
    for route in routes if routes is not None else api_routes():
        researcher_token_fresh(world)  # a DELETE of /api/auth/tokens/{pk}/ may have revoked the last one
        url, auth = route_fill(route, world), route_auth(route, world)
        for kind, value in (("nul-query", "a\x00b"), ("huge-query", HUGE_DIGITS), ("arabic-digits", "\u0661")):
            for method in ("get", "delete"):
                response = getattr(client, method)(url, {"limit": value, "offset": value, "format": value}, **auth)
                tally.note(method, route, f"route-{kind}", response.status_code)
        for method in ("post", "put", "patch"):
            for kind, (body, content_type) in HOSTILE_BODIES.items():
                response = getattr(client, method)(url, data=body, content_type=content_type, **auth)
                tally.note(method, route, f"route-{kind}", response.status_code)


def _put(client, url: str, body: str, auth: dict[str, str]):
    return client.put(url, data=body.encode("utf-8", "surrogatepass"), content_type="application/json", **auth)


def rater_api_pass(tally: Tally, world: World) -> None:
    """The API rater answers every item with each field made hostile in turn, and submits hostile
    questionnaires (JSON text, so numbers beyond any float are sent as written)."""
    client = _client()
    auth = {KEY_HEADER: world.api_key}
    base = f"{RATER_PREFIX}{world.api_token}/"
    items = client.get(base + "items/?limit=1000", **auth).json()["results"]
    values = {**HOSTILE_VALUES, **EXTRA_VALUES}
    route = RATER_PREFIX + "{token}/items/{position}/answer/"
    for position, item in enumerate(items):
        names = [field["name"] for field in item["fields"]]
        for name in [*names, "\u0000", "x" * 1000]:
            for kind, value in values.items():
                body = '{"answers": {' + json.dumps(name) + ": " + value + "}, \"active_ms\": 1000}"
                response = _put(client, f"{base}items/{position}/answer/", body, auth)
                tally.note("put", route, f"answers.{kind}", response.status_code)
        for kind, value in values.items():  # the answers object itself, and active_ms
            for body in ('{"answers": ' + value + "}",
                         '{"answers": {' + json.dumps(names[0]) + ': 1}, "active_ms": ' + value + "}"):
                response = _put(client, f"{base}items/{position}/answer/", body, auth)
                tally.note("put", route, f"body.{kind}", response.status_code)
    questions = client.get(base, **auth).json().get("questionnaire") or []
    for kind, value in values.items():
        for name in [q.get("name", "x") for q in questions] + ["\ud800"]:
            body = '{"questionnaire": {' + json.dumps(name) + ": " + value + "}}"
            response = client.post(base + "submit/", data=body.encode("utf-8", "surrogatepass"),
                                   content_type="application/json", **auth)
            tally.note("post", RATER_PREFIX + "{token}/submit/", f"questionnaire.{kind}", response.status_code)


def routes_reached(tally: Tally, routes: list[str]) -> dict[str, Any]:
    """Which discovered routes got a request (a route with none is a gap in the pass)."""
    return {"routes": len(routes), "routes_not_sent": [r for r in routes if r not in tally.routes],
            # a route that only ever answered 401 was never past its door: the pass lost its identity
            "routes_only_401": [r for r in routes if set(tally.routes.get(r, ())) == {401}]}
