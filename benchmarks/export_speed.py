"""The ratings export of the demo experiment (four conditions), on a throw-away SQLite database.

    python benchmarks/export_speed.py [--repeats 5] [--copies 10]

``--copies`` loads the demo that many times (each its own experiment) and exports them all, so the
export reads ``copies`` × 1,680 ratings. Prints JSON: median seconds and ratings per second of the
export with the position, text, context and active-seconds columns, as CSV, JSON lines and XLSX,
against a baseline in the same process: a plain values_list loop over the earlier export's columns
without those columns) written by the same CSV writer; and the same XLSX rows written by openpyxl's
write-only mode, which ``studies.reports.xlsx_stream`` replaces."""
from __future__ import annotations

import argparse
import csv
import io
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
    parser.add_argument("--copies", type=int, default=10)
    args = parser.parse_args()
    django_on_throwaway_database()

    from studies.authoring import demo
    from studies.models import Rating, Study
    from studies.reports.export_selectors import RATINGS_EXPORT_FIELDS
    from studies.reports.export_selectors import ratings_export_rows as ratings_export_rows_new
    from studies.reports.exporting import export_lines, export_xlsx, sheet_row
    from studies.reports.selectors import EXPORT_FIELDS, normalised_ratings

    for copy in range(args.copies):  # the demo loads under fixed slugs: rename each copy before the next
        experiment = demo.demo_load(seed=2019 + copy)
        for study in experiment.studies.all():
            Study.objects.filter(pk=study.pk).update(slug=f"{study.slug}-{copy}")
        type(experiment).objects.filter(pk=experiment.pk).update(slug=f"{experiment.slug}-{copy}")
    studies = Study.objects.all()
    ratings = Rating.objects.filter(item__check_kind="").count()

    def baseline_csv():
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        columns = ("assignment__study__experiment__slug", "assignment__study__slug", "assignment__study__design",
                   "criterion__name", "item__conversation__external_id", "target_system", "response_id",
                   "assignment__rater__external_id", "assignment__rater__platform", "value", "normalised_value",
                   "normalisation", "rank", "seconds", "item__reference_value",
                   "assignment__rater__prior_rating_experience", "assignment__rater__prior_agent_experience",
                   "assignment__rater__questionnaire", "assignment__status", "assignment__submitted_at")
        writer.writerow(EXPORT_FIELDS)
        for row in normalised_ratings(studies).values_list(*columns).iterator(chunk_size=5000):
            writer.writerow(["" if v is None else v for v in row])

    def lines(export_format):
        return lambda: sum(len(line) for line in export_lines(studies, export_format))

    def xlsx():
        export_xlsx(studies, io.BytesIO())

    def openpyxl_xlsx():  # the same rows through openpyxl's write-only mode (what studies.reports.xlsx_stream replaces)
        from openpyxl import Workbook

        book = Workbook(write_only=True)
        sheet = book.create_sheet("ratings")
        sheet.append(list(RATINGS_EXPORT_FIELDS))
        for row in ratings_export_rows_new(studies):
            sheet.append(sheet_row(row))
        book.save(io.BytesIO())

    timings = {"baseline_csv_without_new_columns": median_seconds(baseline_csv, args.repeats),
               "csv": median_seconds(lines("csv"), args.repeats),
               "jsonl": median_seconds(lines("jsonl"), args.repeats),
               "xlsx": median_seconds(xlsx, args.repeats),
               "xlsx_through_openpyxl_write_only": median_seconds(openpyxl_xlsx, args.repeats)}
    base = timings["baseline_csv_without_new_columns"]
    print(json.dumps({
        "benchmark": "ratings export of the demo experiment(s): CSV / JSON lines / XLSX with position, text, "
                     "context and active-seconds columns vs the earlier CSV rows",
        "ratings": ratings, "repeats": args.repeats,
        "seconds": {k: round(v, 4) for k, v in timings.items()},
        "ratings_per_second": {k: round(ratings / v) for k, v in timings.items()},
        "ratio_vs_baseline": {k: round(v / base, 2) for k, v in timings.items()},
    }, indent=2))


if __name__ == "__main__":
    main()
