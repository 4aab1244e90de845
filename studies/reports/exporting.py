"""Ratings export as tidy CSV or JSON lines, streamed (one line at a time) for any number of ratings, or
as XLSX written row by row (``studies.reports.xlsx_stream``: memory does not grow with the study); and
``spreadsheet_safe``: the one guard every CSV/XLSX export applies to its text cells.

Columns: ``studies.reports.export_selectors.RATINGS_EXPORT_FIELDS``. CSV and XLSX rows come from one builder
(``sheet_row``); JSON lines keep the values verbatim (JSON is not evaluated)."""
from __future__ import annotations

import csv
import io
import itertools
import json
import tempfile
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, BinaryIO

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import FileResponse, StreamingHttpResponse

from studies.access import raw_ids_allowed
from studies.designs import designs_of
from studies.models import Study
from studies.reports.export_selectors import RATINGS_EXPORT_FIELDS, ratings_export_rows
from studies.reports.xlsx_stream import MAX_CELL, MAX_ROWS, write_xlsx

if TYPE_CHECKING:
    import pandas as pd

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

EXPORT_FORMATS = ("csv", "jsonl", "xlsx")
LINE_FORMATS = ("csv", "jsonl")  # text formats that stream line by line (XLSX is a zip, written whole)
CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson; charset=utf-8",
                 "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"}
# A text cell starting with one of these is read as a formula by Excel, LibreOffice and Google Sheets
# (OWASP "CSV injection"); worker and conversation ids come from outside and may start with any.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
XLSX_MAX_ROWS = MAX_ROWS  # Excel's rows per sheet, header included: longer exports go on to "ratings 2"
XLSX_MAX_CELL = MAX_CELL  # Excel's characters per cell: longer texts are cut, and say so
CUT_MARK = " … [cut: Excel holds 32,767 characters a cell; the CSV and JSON lines exports keep it all]"


def spreadsheet_safe(value: Any) -> Any:
    """A text cell that a spreadsheet would evaluate, prefixed with ``'`` so it stays text; numbers,
    dates and other values unchanged (they stay numeric)."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def spreadsheet_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``spreadsheet_safe`` on every text cell of a DataFrame (column names too)."""
    import pandas as pd

    safe = frame.rename(columns=spreadsheet_safe)
    for column in safe.columns:
        if not pd.api.types.is_numeric_dtype(safe[column]):
            safe[column] = safe[column].map(spreadsheet_safe)
    return safe


def _plain(value):
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def sheet_row(row: dict[str, Any], fields: tuple[str, ...] = RATINGS_EXPORT_FIELDS) -> list[Any]:
    """One rating as spreadsheet cells in ``fields`` order: numbers stay numbers, dates
    become ISO 8601 text (UTC), the questionnaire JSON text, every text cell ``spreadsheet_safe``."""
    cells = []
    for name in fields:
        value = row.get(name)
        if name == "questionnaire":
            value = json.dumps(value, ensure_ascii=False) if value else None
        cells.append(spreadsheet_safe(_plain(value)))
    return cells


def export_lines(studies: QuerySet[Study], export_format: str, *, raw_ids: bool = False) -> Iterator[str]:
    """Yield the export text, line by line; raters by pseudonym unless ``raw_ids``. JSON lines are
    verbatim (JSON is not evaluated); CSV text cells go through ``spreadsheet_safe``."""
    if export_format not in LINE_FORMATS:
        raise ValueError(f"export format {export_format!r} is not a text format: use one of {', '.join(LINE_FORMATS)}")
    fields, rows, _ = _rows(studies, raw_ids=raw_ids)
    if export_format == "jsonl":
        for row in rows:
            yield json.dumps({k: _plain(v) for k, v in {**dict.fromkeys(fields), **row}.items()}, ensure_ascii=False) + "\n"
        return
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(fields)
    for row in rows:
        writer.writerow(["" if cell is None else cell for cell in sheet_row(row, fields)])
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()


def export_xlsx(studies: QuerySet[Study], output: BinaryIO, *, raw_ids: bool = False) -> int:
    """Write the ratings as an XLSX workbook to ``output`` (a binary file); returns the number of rows.

    Rows stream into the workbook one at a time (``studies.reports.xlsx_stream``), so a study of any size needs
    memory for one chunk of rows; the header row is bold, frozen and filterable; a sheet holds Excel's
    1,048,576 rows, and further rows go on to "ratings 2", "ratings 3", ... with the same header."""
    fields, rows, sheet = _rows(studies, raw_ids=raw_ids)
    return write_xlsx(output, fields, (sheet_row(row, fields) for row in rows), sheet_name=sheet, cut_mark=CUT_MARK,
                      max_rows=XLSX_MAX_ROWS)


def _rows(studies: QuerySet[Study], *, raw_ids: bool) -> tuple[tuple[str, ...], Iterator[dict[str, Any]], str]:
    """The export's columns, rows and XLSX sheet name. Studies of one design with its own export
    (``StudyDesign.export_fields``: pairwise, one row per A/B judgment) get that; otherwise the ratings
    (``export_selectors.ratings_export_rows``, with the judgments of designs that fit its columns), and
    where designs with their own columns sit beside others (an experiment export) their judgments
    too, with their columns added at the end (``mixed_export_fields``)."""
    designs = designs_of(studies)
    if len(designs) == 1 and (own := designs[0].export_fields()) is not None:
        return own, designs[0].export_rows(studies, raw_ids=raw_ids), designs[0].export_sheet_name()
    fields = tuple(dict.fromkeys([*RATINGS_EXPORT_FIELDS, *(f for d in designs for f in d.mixed_export_fields())]))
    mixed = [d.mixed_export_rows(d.studies_of(studies), fields, raw_ids=raw_ids) for d in designs
             if d.mixed_export_fields()]
    return fields, itertools.chain(ratings_export_rows(studies, raw_ids=raw_ids), *mixed), "ratings"


def ratings_response(studies: QuerySet[Study], export_format: str, name: str, *, raw_ids: bool = False):
    """The ratings export as a download, never cached: CSV and JSON lines streamed as they are read;
    XLSX written to a temporary file (spilled to disk past 16 MB) and then streamed from it."""
    filename = f"{name}-ratings.{export_format}"
    if export_format == "xlsx":
        spool = tempfile.SpooledTemporaryFile(max_size=16 * 1024 * 1024)  # noqa: SIM115 (FileResponse closes it)
        export_xlsx(studies, spool, raw_ids=raw_ids)
        spool.seek(0)
        response = FileResponse(spool, content_type=CONTENT_TYPES["xlsx"], as_attachment=True, filename=filename)
    else:
        response = StreamingHttpResponse(export_lines(studies, export_format, raw_ids=raw_ids),
                                         content_type=CONTENT_TYPES[export_format])
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return no_store(response)
