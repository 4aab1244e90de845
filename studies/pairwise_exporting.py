"""The export of a pairwise study: one tidy row per judgment (left/right as shown, the choice, the winning
system, the reason), as CSV or JSON lines, streamed. studies.exporting hands pairwise studies here."""
from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator

from django.db.models import QuerySet

from studies.exporting import _plain, spreadsheet_safe
from studies.models import Design, Study
from studies.pairwise_selectors import EXPORT_FIELDS, comparisons_export_rows


def only_pairwise(studies: QuerySet[Study]) -> bool:
    return studies.filter(design=Design.PAIRWISE).exists() and not studies.exclude(design=Design.PAIRWISE).exists()


def export_lines(studies: QuerySet[Study], export_format: str, *, raw_ids: bool = False) -> Iterator[str]:
    """Like studies.exporting.export_lines: JSON lines verbatim, CSV text cells spreadsheet-safe (a
    rater's reason is free text and may start with "=")."""
    if export_format == "jsonl":
        for row in comparisons_export_rows(studies, raw_ids=raw_ids):
            yield json.dumps({k: _plain(v) for k, v in row.items()}, ensure_ascii=False) + "\n"
        return
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(EXPORT_FIELDS)
    for row in comparisons_export_rows(studies, raw_ids=raw_ids):
        writer.writerow([spreadsheet_safe(_plain(row[k])) if row[k] is not None else "" for k in EXPORT_FIELDS])
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()
