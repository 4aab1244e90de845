"""Server time of a rater's item submit (the whole Django stack: routing, CSRF, session, parsing,
validation, the ratings_record transaction, redirect), many submits in one process.

    python benchmarks/rating_submit.py [--submits 300]

Prints JSON: median and p95 milliseconds per submit through the view, and the same answers stored
by calling the service directly (the baseline), in the same process on a throw-away SQLite database."""
from __future__ import annotations

import argparse
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
    from django.test import Client

    from studies import services
    from studies.form_tokens import form_token
    from studies.models import Assignment
    from studies.rater_views import field_name

    owner = get_user_model().objects.create(username="bench")
    systems = ["seq2seq", "hred", "thred", "human"]
    lines = [json.dumps({"concord": "dialogues/1", "systems": systems, "reference": "human"})]
    lines += [json.dumps({"id": f"c{i}", "turns": ["Hello there.", "Hi, how are you today?"],
                          "responses": {s: f"{s} reply {i}" for s in systems}}) for i in range(args.submits)]
    corpus = services.dialogues_import(stream=io.BytesIO("\n".join(lines).encode()), source_name="bench.jsonl",
                                       owner=owner).corpus

    def study(design: str):
        experiment = services.experiment_create(owner=owner, title=f"bench {design}")
        s = services.study_create(experiment=experiment, title=design, design=design, raters_per_item=1,
                                  items_per_assignment=args.submits, platform="prolific")
        services.study_items_build(study=s, corpus=corpus, systems=systems[:3], reference_system="human")
        return services.study_publish(study=s)

    def answers(slot):
        return {c: dict.fromkeys(slot.response_order, 4) for c in ("readability", "coherence")}

    client = Client(HTTP_HOST="127.0.0.1")
    entry = f"/r/{study('likert').slug}/?PROLIFIC_PID=bench-http&SESSION_ID=bench-session"
    token = client.get(entry)["Location"].split("/")[3]
    client.post(f"/r/a/{token}/", {"agree": "yes", "form_token": form_token(token, "consent")})
    assignment = Assignment.objects.get(token=token)
    http_ms = []
    for slot in assignment.assignment_items.order_by("position"):
        form = {field_name(r, c): v for c, per in answers(slot).items() for r, v in per.items()}
        form["form_token"] = form_token(token, "item")
        started = time.perf_counter()
        response = client.post(f"/r/a/{token}/items/{slot.position}/", form)
        http_ms.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 302, response.status_code

    direct = services.assignment_start(study=study("likert"), rater=services.rater_get_or_create(
        platform="prolific", external_id="bench-direct"))
    service_ms = []
    for slot in direct.assignment_items.order_by("position"):
        started = time.perf_counter()
        services.ratings_record(assignment=direct, item_id=slot.item_id, answers=answers(slot))
        service_ms.append((time.perf_counter() - started) * 1000)

    def summary(values):
        return {"median_ms": round(statistics.median(values), 2),
                "p95_ms": round(statistics.quantiles(values, n=20)[18], 2), "submits": len(values)}

    print(json.dumps({
        "benchmark": "rating submit (Likert item: 4 responses x 2 criteria = 8 ratings)",
        "database": django.db.connection.vendor,
        "view_submit": summary(http_ms), "service_only_baseline": summary(service_ms),
        "view_over_service": round(statistics.median(http_ms) / statistics.median(service_ms), 2),
    }, indent=2))


if __name__ == "__main__":
    main()
