"""Ratings export as tidy CSV or JSON lines, streamed (one line at a time) for any number of ratings."""
from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator

from django.db.models import QuerySet

from studies.models import Study
from studies.selectors import EXPORT_FIELDS, ratings_export_rows

EXPORT_FORMATS = ("csv", "jsonl")


def _plain(value):
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def export_lines(studies: QuerySet[Study], export_format: str) -> Iterator[str]:
    """Yield the export text, line by line."""
    if export_format == "jsonl":
        for row in ratings_export_rows(studies):
            yield json.dumps({k: _plain(v) for k, v in row.items()}, ensure_ascii=False) + "\n"
        return
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(EXPORT_FIELDS)
    for row in ratings_export_rows(studies):
        row["questionnaire"] = json.dumps(row["questionnaire"], ensure_ascii=False) if row["questionnaire"] else ""
        writer.writerow([_plain(row[k]) if row[k] is not None else "" for k in EXPORT_FIELDS])
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()
