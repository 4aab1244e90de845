"""Ratings export as tidy CSV or JSON lines, streamed (one line at a time) for any number of ratings,
and ``spreadsheet_safe``: the one guard every CSV/XLSX export applies to its text cells."""
from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any

import pandas as pd
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet

from studies.models import Study
from studies.selectors import EXPORT_FIELDS, ratings_export_rows, raw_ids_allowed

RAW_IDS_TRUE = ("1", "true", "yes")


def raw_ids_requested(request, experiment_ids) -> bool:
    """``?raw_ids=1``: show raters' platform ids instead of pseudonyms; only the owners, collaborators
    and staff of every experiment involved may ask (403 otherwise)."""
    params = getattr(request, "query_params", request.GET)
    if params.get("raw_ids", "").lower() not in RAW_IDS_TRUE:
        return False
    if not raw_ids_allowed(request.user, experiment_ids):
        raise PermissionDenied("raw worker ids are shown only to the study's owners")
    return True


def no_store(response):
    """Exports hold personal data: no browser or proxy may keep a copy."""
    response["Cache-Control"] = "no-store"
    return response

EXPORT_FORMATS = ("csv", "jsonl")
# A text cell starting with one of these is read as a formula by Excel, LibreOffice and Google Sheets
# (OWASP "CSV injection"); worker and conversation ids come from outside and may start with any.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value: Any) -> Any:
    """A text cell that a spreadsheet would evaluate, prefixed with ``'`` so it stays text; numbers,
    dates and other values unchanged (they stay numeric)."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def spreadsheet_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``spreadsheet_safe`` on every text cell of a DataFrame (column names too)."""
    safe = frame.rename(columns=spreadsheet_safe)
    for column in safe.columns:
        if not pd.api.types.is_numeric_dtype(safe[column]):
            safe[column] = safe[column].map(spreadsheet_safe)
    return safe


def _plain(value):
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def export_lines(studies: QuerySet[Study], export_format: str, *, raw_ids: bool = False) -> Iterator[str]:
    """Yield the export text, line by line; raters by pseudonym unless ``raw_ids``. JSON lines are
    verbatim (JSON is not evaluated); CSV text cells go through ``spreadsheet_safe``."""
    from studies import pairwise_exporting  # late: it imports this module

    if pairwise_exporting.only_pairwise(studies):  # one row per A/B judgment instead of per rating
        yield from pairwise_exporting.export_lines(studies, export_format, raw_ids=raw_ids)
        return
    if export_format == "jsonl":
        for row in ratings_export_rows(studies, raw_ids=raw_ids):
            yield json.dumps({k: _plain(v) for k, v in row.items()}, ensure_ascii=False) + "\n"
        return
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(EXPORT_FIELDS)
    for row in ratings_export_rows(studies, raw_ids=raw_ids):
        row["questionnaire"] = json.dumps(row["questionnaire"], ensure_ascii=False) if row["questionnaire"] else ""
        writer.writerow([spreadsheet_safe(_plain(row[k])) if row[k] is not None else "" for k in EXPORT_FIELDS])
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()
