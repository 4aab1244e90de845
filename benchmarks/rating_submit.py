"""Server cost of a rater's item, page by page: the item GET and its submit POST through the whole
Django stack (routing, form token, parsing, validation, the ratings_record transaction, the answer),
many items in one process, with the SQL queries each request runs
(``django.test.utils.CaptureQueriesContext``).

    python benchmarks/rating_submit.py [--submits 300] [--design likert]

Prints JSON: per GET (each item page's first visit) and per POST (a second rater's submits) the
median and p95 milliseconds and the queries (median, max); per item cycle (a submit until the next
item's page is there: the POST, and the GET of its redirect where it answers with one) the same and
the requests it takes; and the same answers stored by calling ratings_record directly (the
baseline), in the same process on a throw-away SQLite database (or DATABASE_URL)."""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import django_on_throwaway_database  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--submits", type=int, default=300)
    args = parser.parse_args()
    django_on_throwaway_database()
    import django
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from studies.authoring import services as authoring
    from studies.corpora import services as corpus_imports
    from studies.designs.ratings import field_name
    from studies.models import Assignment
    from studies.rating import answers as answering
    from studies.rating import entry as rater_entry
    from studies.rating.form_tokens import form_token

    owner = get_user_model().objects.create(username="bench")
    systems = ["seq2seq", "hred", "thred", "human"]
    lines = [json.dumps({"concord": "dialogues/1", "systems": systems, "reference": "human"})]
    lines += [json.dumps({"id": f"c{i}", "turns": ["Hello there.", "Hi, how are you today?"],
                          "responses": {s: f"{s} reply {i}" for s in systems}}) for i in range(args.submits)]
    corpus = corpus_imports.dialogues_import(stream=io.BytesIO("\n".join(lines).encode()), source_name="bench.jsonl",
                                       owner=owner).corpus

    def study(design: str):
        experiment = authoring.experiment_create(owner=owner, title=f"bench {design}")
        s = authoring.study_create(experiment=experiment, title=design, design=design, raters_per_item=2,
                                  items_per_assignment=args.submits, platform="prolific")
        authoring.study_items_build(study=s, corpus=corpus, systems=systems[:3], reference_system="human")
        return authoring.study_publish(study=s)

    def answers(slot):
        return {c: dict.fromkeys(slot.response_order, 4) for c in ("readability", "coherence")}

    def timed(call):
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            response = call()
            elapsed = (time.perf_counter() - started) * 1000
        return response, elapsed, len(queries.captured_queries)

    slug = study("likert").slug

    def begin(worker):
        client = Client(HTTP_HOST="127.0.0.1")
        pid, session = (hashlib.sha256(f"{worker}{part}".encode()).hexdigest()[:24] for part in ("", "-session"))
        token = client.get(f"/r/{slug}/?PROLIFIC_PID={pid}&SESSION_ID={session}")["Location"].split("/")[3]
        client.post(f"/r/a/{token}/", {"agree": "yes", "form_token": form_token(token, "consent")})
        return client, token, list(Assignment.objects.get(token=token).assignment_items.order_by("position"))

    # 1. Every item page opened once (the first visit: it notes started_at), the study's first rater.
    client, token, slots = begin("bench-get")
    get_ms, get_queries = [], []
    for slot in slots:
        page, ms, queries = timed(lambda: client.get(f"/r/a/{token}/items/{slot.position}/"))  # noqa: B023
        assert page.status_code == 200, page.status_code
        get_ms.append(ms)
        get_queries.append(queries)

    # 2. A second rater goes through the items as a browser does: the first item's page, then each
    # submit, following a redirect to the next item's page where the submit answers with one.
    client, token, slots = begin("bench-http")
    client.get(f"/r/a/{token}/items/0/")
    post_ms, post_queries, cycle_ms, cycle_queries, requests_per_item = [], [], [], [], []
    for slot in slots:
        url = f"/r/a/{token}/items/{slot.position}/"
        responses_per_item = len(slot.response_order)
        form = {field_name(r, c, slot.response_order): v for c, per in answers(slot).items() for r, v in per.items()}
        form["form_token"] = form_token(token, "item")
        answer, ms, queries = timed(lambda: client.post(url, form))  # noqa: B023
        assert answer.status_code in (200, 302, 303), answer.status_code
        post_ms.append(ms)
        post_queries.append(queries)
        requests = 1
        if answer.status_code in (302, 303) and "/items/" in answer["Location"]:
            followed, more_ms, more_queries = timed(lambda: client.get(answer["Location"]))  # noqa: B023
            assert followed.status_code == 200
            ms, queries, requests = ms + more_ms, queries + more_queries, 2
        if slot.position + 1 < len(slots):  # the last item goes on to the questionnaire
            cycle_ms.append(ms)
            cycle_queries.append(queries)
            requests_per_item.append(requests)

    direct = rater_entry.assignment_start(study=study("likert"), rater=rater_entry.rater_get_or_create(
        platform="prolific", external_id="bench-direct"))
    service_ms = []
    for slot in direct.assignment_items.order_by("position"):
        started = time.perf_counter()
        answering.ratings_record(assignment=direct, item_id=slot.item_id, answers=answers(slot))
        service_ms.append((time.perf_counter() - started) * 1000)

    def summary(values, queries=None):
        out = {"median_ms": round(statistics.median(values), 2),
               "p95_ms": round(statistics.quantiles(values, n=20)[18], 2), "requests": len(values)}
        if queries is not None:
            out |= {"queries_median": statistics.median(queries), "queries_max": max(queries)}
        return out

    print(json.dumps({
        "benchmark": f"rater item (Likert: {responses_per_item} responses x 2 criteria), GET then submit POST",
        "database": django.db.connection.vendor,
        "item_get": summary(get_ms, get_queries),
        "item_post": summary(post_ms, post_queries),
        "item_cycle": {**summary(cycle_ms, cycle_queries), "requests_per_item": statistics.median(requests_per_item),
                       "what": "submit until the next item's page is there (POST, and the GET of a redirect)"},
        "service_only_baseline": summary(service_ms),
        "post_over_service": round(statistics.median(post_ms) / statistics.median(service_ms), 2),
    }, indent=2))


if __name__ == "__main__":
    main()
