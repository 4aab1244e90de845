"""Live reliability on the study page: cold (computed from the database) vs cached (per ratings
version) at 10^5 and 10^6 ratings, on a throw-away SQLite database.

    python benchmarks/live_reliability.py [--sizes 100000 1000000] [--repeats 3]

A sparse crowd design: 1,250 conversations × 4 responses (5,000 rated units), two criteria, each
rater rates a random 1,000 of the units. Prints JSON per size: median seconds of the cold
computation (load + ICC + course over raters + figures), its parts, a cached view of the summary and
of the whole study page, the view right after one more rater submitted (the kept frame is brought up
to date with that assignment's ratings; ICC and figures recomputed), and the ratios of recomputing
from scratch on every view against the cached and the incremental view."""
from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import django_on_throwaway_database, median_seconds  # noqa: E402

warnings.filterwarnings("ignore")
CONVERSATIONS, UNITS_PER_RATER = 1_250, 1_000


def add_raters(study, count: int, rng, *, tag: str) -> None:
    """``count`` submitted assignments of new raters, each rating a random 1,000 units on every
    criterion (inserted with executemany: building 10^6 ratings through the services would take hours)."""
    from django.db import connection, transaction
    from django.utils import timezone

    from studies.models import Assignment, Rater, StudyItemResponse

    pairs = np.array(list(StudyItemResponse.objects.filter(item__study=study).order_by("pk")
                          .values_list("item_id", "response_id")))
    criteria = list(study.criteria.values_list("pk", flat=True))
    now = timezone.now()
    raters = Rater.objects.bulk_create(Rater(platform="prolific", external_id=f"{tag}-{j}") for j in range(count))
    assignments = Assignment.objects.bulk_create(
        Assignment(study=study, experiment=study.experiment, rater=r, seed=j, status=Assignment.Status.SUBMITTED,
                   started_at=now, submitted_at=now, total_seconds=600.0) for j, r in enumerate(raters))
    truth, stamp = np.random.default_rng(study.pk).normal(3.5, 1.0, len(pairs)), now.isoformat()
    with transaction.atomic(), connection.cursor() as cursor:
        for assignment in assignments:
            units = rng.choice(len(pairs), UNITS_PER_RATER, replace=False)
            bias = rng.normal(0, 0.4)
            rows = [(assignment.pk, int(pairs[u, 0]), int(pairs[u, 1]), c,
                     float(np.clip(np.round(truth[u] + bias + rng.normal(0, 1.0)), 1, 6)), stamp, stamp)
                    for c in criteria for u in units]
            cursor.executemany("INSERT INTO studies_rating (assignment_id, item_id, response_id, criterion_id, value,"
                               " created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s)", rows)


def build(size: int, owner, corpus, rng):
    from studies.authoring import services as authoring

    experiment = authoring.experiment_create(owner=owner, title=f"live {size}")
    study = authoring.study_create(experiment=experiment, title=f"live {size}", design="likert", raters_per_item=100)
    authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred", "thred"], reference_system="human")
    study = authoring.study_publish(study=study)
    add_raters(study, size // (UNITS_PER_RATER * study.criteria.count()), rng, tag=str(size))
    return study


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    django_on_throwaway_database()
    from django.contrib.auth import get_user_model
    from django.core.cache import cache
    from django.test import Client

    from studies.analysis import live
    from studies.corpora import services as corpus_imports
    from studies.models import Rating, Study
    from studies.reports import live_selectors, selectors

    owner = get_user_model().objects.create(username="bench-live")
    systems = ["seq2seq", "hred", "thred", "human"]
    lines = [json.dumps({"concord": "dialogues/1", "systems": systems, "reference": "human"})]
    lines += [json.dumps({"id": f"c{i}", "turns": ["Hello there.", "Hi, how are you today?"],
                          "responses": {s: f"{s} reply {i}" for s in systems}}) for i in range(CONVERSATIONS)]
    corpus = corpus_imports.dialogues_import(stream=io.BytesIO("\n".join(lines).encode()), source_name="live.jsonl",
                                       owner=owner).corpus
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(owner)
    rng = np.random.default_rng(16)
    results = []
    for size in args.sizes:
        started = time.perf_counter()
        study = build(size, owner, corpus, rng)
        build_s = time.perf_counter() - started
        study = Study.objects.get(pk=study.pk)

        def cold(s=study):
            cache.clear()
            live_selectors.live_reliability(s)

        cold_s = median_seconds(cold, args.repeats)
        cached_s = median_seconds(lambda s=study: live_selectors.live_reliability(s), max(10, args.repeats))
        frame = live_selectors.live_frame(study)
        url = f"/studies/{study.slug}/"
        client.get(url)
        page_cached_s = median_seconds(lambda u=url: client.get(u), max(5, args.repeats))
        after_submit = []
        for n in range(args.repeats):  # one more rater submits, then the page is viewed
            live_selectors.live_reliability(study)
            add_raters(study, 1, rng, tag=f"{size}-late-{n}")
            started = time.perf_counter()
            live_selectors.live_reliability(study)
            after_submit.append(time.perf_counter() - started)
        after_submit_s = statistics.median(after_submit)
        entry = live_selectors.live_reliability(study)["criteria"][0]
        results.append({
            "ratings": Rating.objects.filter(assignment__study=study).count(),  # incl. the late raters
            "raters": int(frame["rater"].nunique()), "units": int(frame["unit"].nunique()),
            "k0": round(entry["k0"], 2), "ICC(A,k)": round(entry["forms"]["ICC(A,k)"]["value"], 4),
            "build_s": round(build_s, 1),
            "cold_s": round(cold_s, 3),
            "cold_parts_s": {
                "ratings_version": round(median_seconds(
                    lambda s=study: selectors.ratings_version(Study.objects.filter(pk=s.pk)), args.repeats), 3),
                "load_all_ratings": round(median_seconds(lambda s=study: live_selectors._load(s), args.repeats), 3),
                "frame_kept_up_to_date": round(median_seconds(lambda s=study: live_selectors.live_frame(s),
                                                              args.repeats), 3),
                "summary_with_course": round(median_seconds(lambda f=frame: live.live_summary(f), args.repeats), 3),
            },
            "after_one_submit_s": round(after_submit_s, 3),
            "cached_s": round(cached_s, 4),
            "page_cached_s": round(page_cached_s, 4),
            "recompute_each_view_over_cached": round(cold_s / cached_s, 1),
            "recompute_each_view_over_incremental": round(cold_s / after_submit_s, 1),
        })
    print(json.dumps({"benchmark": "live_reliability", "results": results}, indent=1))


if __name__ == "__main__":
    main()
