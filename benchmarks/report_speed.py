"""The demo experiment's reliability report, from the database, on a throw-away SQLite database.

    python benchmarks/report_speed.py [--repeats 5]

Prints JSON: median seconds for the whole report computed from the database (cache cleared each
time), the page served from the cache, each figure, and the ICC part of Tables 1-7 against a
baseline that computes the same 56 cells with pingouin.intraclass_corr in the same process."""
from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import django_on_throwaway_database, median_seconds  # noqa: E402

warnings.filterwarnings("ignore")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    django_on_throwaway_database()

    import pingouin as pg
    from django.core.cache import cache
    from django.test import Client

    from studies.analysis.report import TABLES, _subset, icc_tables
    from studies.authoring.demo import DEMO_USER, demo_load, demo_user
    from studies.models import Study
    from studies.reports import selectors

    experiment = demo_load() or Study.objects.get(slug="demo-likert").experiment
    studies = experiment.studies.all()
    client = Client()
    client.force_login(demo_user())
    url = f"/experiments/{experiment.slug}/report/"
    client.get(url, HTTP_HOST="127.0.0.1")  # imports, font cache

    def cold_report():
        cache.clear()
        selectors.reliability_report(studies)

    def cold_page():
        cache.clear()
        assert client.get(url, HTTP_HOST="127.0.0.1").status_code == 200

    frame = selectors.ratings_frame(studies)
    slugs, criteria = [s.slug for s in studies], ["readability", "coherence"]

    def pingouin_tables():
        for _, split in TABLES.values():
            part = _subset(frame, split)
            for study in slugs:
                for criterion in criteria:
                    cell = part[(part["study"] == study) & (part["criterion"] == criterion)]
                    if cell["rater"].nunique() > 1:
                        pg.intraclass_corr(cell, "unit", "rater", "score")

    cache.clear()
    client.get(url, HTTP_HOST="127.0.0.1")
    figures = {name: median_seconds(lambda n=name: client.get(f"{url}figures/{n}.svg", HTTP_HOST="127.0.0.1"), args.repeats)
               for name in ("icc", "distributions-readability", "ranking-readability", "completion")}
    concord_tables = median_seconds(lambda: icc_tables(frame, slugs, criteria), args.repeats)
    baseline_tables = median_seconds(pingouin_tables, args.repeats)
    print(json.dumps({
        "benchmark": "demo experiment reliability report (4 conditions x 2 criteria, Tables 1-9 and more)",
        "ratings": len(frame), "user": DEMO_USER,
        "report_from_database_s": round(median_seconds(cold_report, args.repeats), 4),
        "page_with_report_computed_s": round(median_seconds(cold_page, args.repeats), 4),
        "page_from_cache_s": round(median_seconds(lambda: client.get(url, HTTP_HOST="127.0.0.1"), args.repeats), 4),
        "figure_s": {k: round(v, 4) for k, v in figures.items()},
        "icc_tables_1_to_7": {"concord_s": round(concord_tables, 4), "pingouin_baseline_s": round(baseline_tables, 4),
                              "speedup": round(baseline_tables / concord_tables, 1)},
    }, indent=2))


if __name__ == "__main__":
    main()
