"""The fuzz pass: every API operation and every rater POST, with bodies the world may send.

Two parts, both in-process against Django's WSGI application (the same handler gunicorn runs, so a
view's exception is the 500 a client would get):

1. **Schema-driven** (schemathesis over the OpenAPI schema drf-spectacular builds): for each operation,
   ``--examples`` positive and ``--examples`` negative cases (hypothesis, derandomised by ``--seed``),
   once with the path parameters schemathesis draws and once with those of real objects the researcher
   owns (so the views get past their 404s).
2. **Hand-written hostile bodies** for every API operation that takes a body, and for every rater POST
   (consent, an item, autosave, the questionnaire) and the entry links: JSON nested 100,000 deep,
   integers of 5,000 digits and 1e400, NUL bytes, bytes that are not UTF-8, wrong types, strings of a
   million characters, non-ASCII digits (Arabic-Indic, full-width), and each body field replaced by
   each of these in turn.

    python benchmarks/fuzz_api.py [--examples 10] [--seed 0]

Prints JSON: requests sent, answers by status code, and every 500 with its method, route and the kind
of input; exits 1 when there was a 500. Settings: config.settings.local on a throw-away SQLite database
(DATABASE_URL to run against PostgreSQL, which refuses NUL where SQLite stores it). ``fuzz()`` is also
what the fast test (tests/test_fuzz_api.py) runs, on a small seeded slice, inside the test database."""
from __future__ import annotations

import argparse
import io
import json
import logging
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))

DEEP = 100_000
HUGE_DIGITS = "9" * 5000
# What a body field is replaced by, one at a time (JSON text, so that numbers beyond Python's and
# JSON's limits can be sent as written).
HOSTILE_VALUES: dict[str, str] = {
    "nested": "[" * DEEP + "]" * DEEP,
    "huge-integer": HUGE_DIGITS,
    "1e400": "1e400",
    "2**63": str(2**63),
    "negative": "-1",
    "nul": json.dumps("a\u0000b"),
    "lone-surrogate": '"\\ud800"',
    "long-string": json.dumps("x" * 1_000_000),
    "arabic-digits": json.dumps("\u0661\u0662"),
    "full-width-digits": json.dumps("\uff11\uff12"),
    "list": "[]",
    "object": "{}",
    "true": "true",
    "null": "null",
    "string": json.dumps("not what you expected"),
    "nan": "NaN",
}
# Whole bodies.
HOSTILE_BODIES: dict[str, tuple[bytes, str]] = {
    "nested-array": (("[" * DEEP + "]" * DEEP).encode(), "application/json"),
    "nested-object": (('{"a":' * DEEP + "1" + "}" * DEEP).encode(), "application/json"),
    "huge-integer": (("{\"n\": " + HUGE_DIGITS + "}").encode(), "application/json"),
    "not-utf8": (b'{"title": "\xff\xfe\xfa"}', "application/json"),
    "not-json": (b"{'single': quotes", "application/json"),
    "nul-json": (b'{"title": "a\\u0000b"}', "application/json"),
    "empty": (b"", "application/json"),
    "array": (b"[1, 2, 3]", "application/json"),
    "form-nul": (b"title=a%00b&raters_per_item=%D9%A1", "application/x-www-form-urlencoded"),
    "form-not-utf8": (b"title=%FF%FE&slug=%C0%AF", "application/x-www-form-urlencoded"),
}
# A JSON lines import file in each hostile shape (the import endpoint takes multipart files).
HOSTILE_FILES: dict[str, bytes] = {
    "not-utf8": b'{"id": "c1", "turns": ["\xff"], "responses": {"a": "b"}}\n',
    "nested": ("[" * DEEP + "]" * DEEP + "\n").encode(),
    "huge-integer": ('{"id": "c1", "turns": ["hi"], "responses": {"a": "b"}, "metadata": {"n": ' + HUGE_DIGITS
                     + "}}\n").encode(),
    "nul": b'{"id": "c\\u0000", "turns": ["hi"], "responses": {"a": "b"}}\n',
    "dstc9-overflow": ('[{"context": "User: hi\\nSystem: hello", "coherent": ' + "9" * 400 + "}]").encode(),
    "empty": b"",
    "binary": bytes(range(256)) * 8,
}
RATER_VALUES = ["\u0000", "9" * 5000, "1e400", "NaN", "-Infinity", "\u0663", "\uff13", "x" * 100_000, "-0", "3.5",
                "", " "]  # lone surrogates go in raw bodies (HOSTILE_BODIES), a form cannot encode one


# A crowd route's documented answer when the platform itself cannot be reached (here, with no network, every
# MTurk or Prolific call): the outside service failed, not Concord; counted apart from the server's own errors.
GATEWAY = frozenset({502, 503, 504})


@dataclass
class Tally:
    """What was sent and what came back."""

    requests: int = 0
    statuses: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)  # cases schemathesis could not draw or send, by reason
    errors: list[dict[str, Any]] = field(default_factory=list)
    routes: dict[str, Counter] = field(default_factory=dict)  # route -> its answers by status

    def note(self, method: str, route: str, kind: str, status: int) -> None:
        self.requests += 1
        self.routes.setdefault(route, Counter())[status] += 1
        self.statuses[status] += 1
        if status >= 500 and status not in GATEWAY:
            self.errors.append({"method": method.upper(), "route": route, "input": kind, "status": status})

    def summary(self) -> dict[str, Any]:
        return {"requests": self.requests, "by_status": {str(k): v for k, v in sorted(self.statuses.items())},
                "answers_500": sum(v for k, v in self.statuses.items() if k >= 500 and k not in GATEWAY),
                "answers_gateway": sum(v for k, v in self.statuses.items() if k in GATEWAY),
                "not_sent": dict(self.skipped), "errors": self.errors[:200]}


@dataclass
class World:
    """The objects the fuzz pass aims at: a researcher (and their API token), a published study with a
    rater mid-way, a draft study, an experiment."""

    token: str
    experiment: str
    study: str
    draft: str
    rater_token: str
    positions: int
    fields: list[str]
    publication: int | None = None
    # one rater mid-way through a published study of every other design: (design, token, positions, fields)
    others: list[tuple[str, str, int, list[str]]] = field(default_factory=list)
    # a rater who entered through the rater API (benchmarks.fuzz_routes.rater_api_session)
    rater_key: str = ""
    api_token: str = ""
    api_key: str = ""

    def path_parameters(self, names: list[str]) -> dict[str, Any]:
        known = {"slug": self.study, "study": self.study, "experiment": self.experiment, "pk": self.publication or 1,
                 "position": 0, "token": self.rater_token, "key": self.rater_key, "user": "fuzzer"}
        return {name: known[name] for name in names if name in known}


def world_build() -> World:
    """The researcher, studies and rater the pass aims at, through the services (as a user would)."""
    import hashlib

    from django.contrib.auth import get_user_model
    from django.test import Client

    from studies.api.tokens import api_token_create
    from studies.authoring import services as authoring
    from studies.corpora import services as corpus_imports
    from studies.designs.ratings import field_name
    from studies.models import Assignment
    from studies.rating import form_tokens

    user = get_user_model().objects.create_user("fuzzer", password="fuzz-pass-123")
    header = {"concord": "dialogues/1", "systems": ["s1", "s2", "s3", "human"], "reference": "human"}
    lines = [json.dumps(header)] + [json.dumps({"id": f"c{i}", "turns": [f"hello {i}"],
                                                "responses": {"s1": f"a{i}", "s2": f"b{i}", "s3": f"d{i}",
                                                              "human": f"c{i}"}})
                                    for i in range(4)]
    corpus = corpus_imports.dialogues_import(stream=io.BytesIO("\n".join(lines).encode()), source_name="fuzz.jsonl",
                                             owner=user).corpus
    experiment = authoring.experiment_create(owner=user, title="Fuzz")
    studies = []
    for title in ("Fuzzed study", "Fuzzed draft"):
        study = authoring.study_create(experiment=experiment, title=title, design="likert", raters_per_item=50,
                                       items_per_assignment=4, platform="prolific")
        authoring.study_items_build(study=study, corpus=corpus, systems=["s1", "s2"], reference_system="human")
        studies.append(study)
    authoring.study_publish(study=studies[0])
    pid, session = (hashlib.sha256(f"fuzz{p}".encode()).hexdigest()[:24] for p in ("pid", "session"))
    entered = Client().get(f"/r/{studies[0].slug}/", {"PROLIFIC_PID": pid, "SESSION_ID": session})
    rater_token = entered["Location"].split("/")[3]
    Client().post(f"/r/a/{rater_token}/", {"agree": "yes", "form_token": form_tokens.form_token(rater_token, "consent")})
    assignment = Assignment.objects.get(token=rater_token)
    slot = assignment.assignment_items.order_by("position").first()
    criteria = list(studies[0].criteria.values_list("name", flat=True))
    fields = [field_name(r, c, slot.response_order) for r in slot.response_order for c in criteria]
    world = World(token=api_token_create(user=user, name="fuzz").secret, experiment=experiment.slug, study=studies[0].slug,
                  draft=studies[1].slug, rater_token=rater_token, positions=assignment.assignment_items.count(),
                  fields=fields)
    world.others = _other_designs(user, corpus)
    return world


def _other_designs(user, corpus) -> list[tuple[str, str, int, list[str]]]:
    """A published study of each other design, each with a rater who consented; the item page's own
    field names (whatever the design calls them)."""
    import hashlib
    import re

    from django.test import Client

    from studies.authoring import services as authoring
    from studies.models import Assignment
    from studies.rating import form_tokens

    raters = []
    for design in ("rme", "bme", "bws", "bws_tuples", "pairwise"):
        experiment = authoring.experiment_create(owner=user, title=f"Fuzz {design}")
        study = authoring.study_create(experiment=experiment, title=f"Fuzzed {design}", design=design,
                                       raters_per_item=50, items_per_assignment=4, platform="prolific")
        systems = ["s1", "s2"] if design == "pairwise" else ["s1", "s2", "s3"]
        authoring.study_items_build(study=study, corpus=corpus, systems=systems, reference_system="human")
        if design == "bme":
            authoring.study_item_reference_values_set(
                study=study, values={pk: 50.0 for pk in study.items.values_list("pk", flat=True)})
        authoring.study_publish(study=study)
        pid, session = (hashlib.sha256(f"fuzz-{design}{p}".encode()).hexdigest()[:24] for p in ("pid", "session"))
        client = Client()
        token = client.get(f"/r/{study.slug}/", {"PROLIFIC_PID": pid, "SESSION_ID": session})["Location"].split("/")[3]
        client.post(f"/r/a/{token}/", {"agree": "yes", "form_token": form_tokens.form_token(token, "consent")})
        page = client.get(f"/r/a/{token}/items/0/").content.decode()
        names = sorted(set(re.findall(r'name="([^"]+)"', page)) - {"form_token", "active_ms"})
        raters.append((design, token, Assignment.objects.get(token=token).assignment_items.count(), names))
    return raters


def _schema():
    """The API's OpenAPI schema (as /api/schema/ serves it) for schemathesis, bound to the WSGI app."""
    from django.core.wsgi import get_wsgi_application
    from drf_spectacular.generators import SchemaGenerator
    from schemathesis.openapi import from_dict

    raw = json.loads(json.dumps(SchemaGenerator().get_schema(request=None, public=True), default=str))
    schema = from_dict(raw)
    schema.app = get_wsgi_application()
    return schema, raw


def _body_properties(raw: dict, operation: dict) -> list[str]:
    """The JSON body's property names of an operation (one $ref deep, as drf-spectacular writes them)."""
    content = (operation.get("requestBody") or {}).get("content") or {}
    schema = (content.get("application/json") or next(iter(content.values()), {})).get("schema") or {}
    if "$ref" in schema:
        schema = raw["components"]["schemas"].get(schema["$ref"].rsplit("/", 1)[-1], {})
    return list((schema.get("properties") or {}).keys())


def _client():
    from django.test import Client

    return Client(raise_request_exception=False, HTTP_HOST="127.0.0.1")


def _api_operations(raw: dict) -> Iterator[tuple[str, str, dict]]:
    for path, methods in raw["paths"].items():
        for method, operation in methods.items():
            if method in ("get", "post", "put", "patch", "delete"):
                yield method, path, operation


def _sender(tally: Tally, headers: dict, route: str, kind: str) -> Callable:
    def send(case) -> None:
        try:
            response = case.call(headers=headers)
        except Exception as error:  # noqa: BLE001 - the transport refused what it drew; not an answer
            tally.skipped[f"transport:{type(error).__name__}"] += 1
            return
        tally.note(case.method, route, kind, response.status_code)
    return send


def schema_pass(tally: Tally, world: World, *, examples: int, seed: int, limit: int | None = None) -> None:
    """schemathesis: positive and negative cases per operation, drawn and with real path parameters."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as seeded
    from schemathesis import GenerationMode

    schema, _ = _schema()
    headers = {"Authorization": f"Token {world.token}", "Host": "127.0.0.1"}
    operations = [result.ok() for result in schema.get_all_operations()][:limit]
    for operation in operations:
        names = [p.name for p in operation.path_parameters]
        rater = operation.path.startswith("/api/rate/assignments/")  # the rater API's own identity
        called = {"X-Concord-Rater-Key": world.api_key, "Host": "127.0.0.1"} if rater else headers
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            for real in (False, True):
                fixed = world.path_parameters(names) if real else None
                if fixed and rater:
                    fixed["token"] = world.api_token
                try:
                    strategy = operation.as_strategy(mode, path_parameters=fixed)
                except Exception:  # noqa: BLE001 - a schema schemathesis cannot draw from: skipped, counted
                    tally.skipped["strategy"] += 1
                    continue

                send = _sender(tally, called, operation.path, f"schemathesis-{mode.value}")
                try:
                    seeded(seed)(settings(max_examples=examples, database=None, deadline=None,
                                          suppress_health_check=list(HealthCheck), phases=[Phase.generate])(
                        given(case=strategy)(send)))()
                except Exception as error:  # noqa: BLE001 - hypothesis could not draw enough examples
                    tally.skipped[f"draw:{type(error).__name__}"] += 1



def hostile_api_pass(tally: Tally, world: World, *, limit: int | None = None) -> None:
    """Hand-written hostile bodies to every API operation that takes one (and every field of it)."""
    from benchmarks.fuzz_routes import researcher_token_fresh, route_auth, route_fill

    _, raw = _schema()
    client = _client()
    for method, path, operation in list(_api_operations(raw))[:limit]:
        researcher_token_fresh(world)  # the schema pass (or this one) may have revoked it: DELETE /api/auth/tokens/{pk}/
        url, auth = route_fill(path, world), route_auth(path, world)
        if method in ("get", "delete"):
            for kind, value in (("nul-query", "a\x00b"), ("huge-query", HUGE_DIGITS), ("arabic-digits", "\u0661")):
                response = getattr(client, method)(url, {"limit": value, "offset": value, "format": value,
                                                         "criterion": value}, **auth)
                tally.note(method, path, kind, response.status_code)
            continue
        if "multipart/form-data" in ((operation.get("requestBody") or {}).get("content") or {}) \
                and "application/json" not in operation["requestBody"]["content"]:
            for kind, content in HOSTILE_FILES.items():
                from django.core.files.uploadedfile import SimpleUploadedFile

                for name in ("hostile.jsonl", "hostile.json", "hostile.csv"):
                    upload = SimpleUploadedFile(name, content)
                    response = client.post(url, {"file": upload, "format": "auto"}, **auth)
                    tally.note(method, path, f"file-{kind}", response.status_code)
            continue
        send = getattr(client, method)
        for kind, (body, content_type) in HOSTILE_BODIES.items():
            response = send(url, data=body, content_type=content_type, **auth)
            tally.note(method, path, kind, response.status_code)
        for name in _body_properties(raw, operation):
            for kind, value in HOSTILE_VALUES.items():
                body = '{"' + name + '": ' + value + "}"
                response = send(url, data=body.encode("utf-8", "surrogatepass"), content_type="application/json", **auth)
                tally.note(method, path, f"{name}={kind}", response.status_code)


def hostile_rater_pass(tally: Tally, world: World) -> None:
    """Every rater POST (and the entry links) with hostile fields, tokens and bodies, for the Likert
    rater and for a rater of every other design (``World.others``)."""
    from dataclasses import replace

    _rater_pass(tally, world)
    for design, token, positions, fields in world.others:
        _rater_pass(tally, replace(world, rater_token=token, positions=positions, fields=fields or ["x"]),
                    label=f" [{design}]")


def _rater_pass(tally: Tally, world: World, label: str = "") -> None:
    from studies.rating import form_tokens

    client = _client()
    token = world.rater_token
    base = f"/r/a/{token}"
    post_routes: list[tuple[str, str, Callable[[str], dict]]] = [
        ("/r/a/<token>/", base + "/", lambda v: {"agree": v, "form_token": form_tokens.form_token(token, "consent")}),
        ("/r/a/<token>/questionnaire/", base + "/questionnaire/",
         lambda v: {"prior_rating_experience": v, "prior_agent_experience": v, "age_band": v,
                    "form_token": form_tokens.form_token(token, "questionnaire")}),
    ]
    for position in range(world.positions):
        post_routes.append(("/r/a/<token>/items/<position>/", f"{base}/items/{position}/",
                            lambda v: {**dict.fromkeys(world.fields, v), "active_ms": v,
                                       "form_token": form_tokens.form_token(token, "item")}))
    for route, url, data in post_routes:
        for value in RATER_VALUES:
            response = client.post(url, data(value))
            tally.note("post", route + label, f"field={value[:12]!r}", response.status_code)
        response = client.post(url, {"form_token": "\x00" * 10})
        tally.note("post", route + label, "form-token-nul", response.status_code)
        for kind, (body, content_type) in HOSTILE_BODIES.items():
            response = client.post(url, data=body, content_type=content_type)
            tally.note("post", route + label, kind, response.status_code)
    draft = f"{base}/items/0/draft/"
    header = {form_tokens.HEADER: form_tokens.form_token(token, "draft")}
    for kind, (body, _) in HOSTILE_BODIES.items():
        response = client.post(draft, data=body, content_type="application/json", headers=header)
        tally.note("post", "/r/a/<token>/items/<position>/draft/" + label, kind, response.status_code)
    for kind, value in HOSTILE_VALUES.items():
        for name in (world.fields[0], "x" * 81, "\u0000", "r1-\ud800"):
            body = "{" + json.dumps(name) + ": " + value + "}"
            response = client.post(draft, data=body.encode("utf-8", "surrogatepass"), content_type="application/json",
                                   headers=header)
            tally.note("post", "/r/a/<token>/items/<position>/draft/" + label, f"draft-{kind}", response.status_code)
    if label:  # the addresses and entry links once, with the Likert rater
        return
    # Addresses and entry links.
    for url in ("/r/a/%00/", "/r/a/%00/items/0/", f"{base}/items/99999999999999999999/", f"{base}/items/-1/",
                "/r/%00/", "/r/x/%00/", "/r/a/\u0661/", f"/r/{world.study}/?PROLIFIC_PID=%00&SESSION_ID=%00",
                f"/r/{world.study}/?PROLIFIC_PID={'a' * 5000}&SESSION_ID=b",
                f"/r/{world.study}/?PROLIFIC_PID=%ff%fe&SESSION_ID=%c0%af",
                f"/r/{world.study}/?PROLIFIC_PID=\uff15f3a0c9e1b2d4f6a8c0e1f2a&SESSION_ID=\u0661",
                f"/r/x/{world.experiment}/?PROLIFIC_PID=%00&SESSION_ID=x", f"/r/{world.study}/?invite=%00",
                f"/r/{world.study}/?workerId=%C3%9F&assignmentId=%00&hitId=x&turkSubmitTo=javascript:alert(1)"):
        for method in ("get", "post"):
            response = getattr(client, method)(url)
            tally.note(method, url.split("?")[0].replace(token, "<token>"), "address", response.status_code)


def fuzz(*, examples: int = 10, seed: int = 0, limit: int | None = None, world: World | None = None) -> dict[str, Any]:
    """Run the passes (schema, hostile API bodies, rater POSTs, the rater API, every URLconf route under
    /api/); ``limit`` keeps the first operations and routes only, without the rater API (the fast test's slice)."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    loggers = [logging.getLogger(name) for name in ("django.request", "django.security")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)  # the 500s are tallied, not logged
    # As Django's test client does: a request must not close the connection (it may hold the test's
    # transaction).
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        world = world or world_build()
        tally = Tally()
        from benchmarks import fuzz_routes

        fuzz_routes.rater_api_session(world)
        schema_pass(tally, world, examples=examples, seed=seed, limit=limit)
        hostile_api_pass(tally, world, limit=limit)
        hostile_rater_pass(tally, world)
        routes = fuzz_routes.api_routes()[:limit]
        if limit is None:  # a slice leaves these to their own test (tests/test_fuzz_api.py)
            fuzz_routes.rater_api_session(world, "again")  # the passes above may have ended the first
            fuzz_routes.rater_api_pass(tally, world)
        fuzz_routes.route_pass(tally, world, routes)
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
    return {**tally.summary(), **fuzz_routes.routes_reached(tally, routes)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=10, help="schemathesis cases per operation, mode and pass")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, default=None, help="only the first N operations")
    args = parser.parse_args()
    from benchmarks.common import django_on_throwaway_database

    django_on_throwaway_database()
    from django.conf import settings

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "127.0.0.1", "testserver"]
    settings.DEBUG = False  # answers as in production (the debug page of a 500 is not what a client gets)
    summary = fuzz(examples=args.examples, seed=args.seed, limit=args.limit)
    print(json.dumps(summary, indent=2))
    return 1 if summary["answers_500"] else 0


if __name__ == "__main__":
    sys.exit(main())
