"""The export of a pairwise study: one tidy row per judgment (left/right as shown, the choice, the winning
system, the reason), as CSV or JSON lines, streamed. studies.reports.exporting hands pairwise studies here.

An experiment that mixes a pairwise condition with others exports one file: the ratings columns and
then ``MIXED_FIELDS``; a judgment fills the columns it shares with a rating (experiment, study,
design, criterion, conversation, rater, platform, seconds, status, submitted_at) and its own, and
leaves value/rank/response empty (a choice between two responses is not a score of one)."""
from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator

from django.db.models import QuerySet

from studies.models import Design, Study
from studies.pairwise_selectors import EXPORT_FIELDS, comparisons_export_rows
from studies.reports.exporting import _plain, spreadsheet_safe


def only_pairwise(studies: QuerySet[Study]) -> bool:
    return studies.filter(design=Design.PAIRWISE).exists() and not studies.exclude(design=Design.PAIRWISE).exists()


MIXED_FIELDS = ("left_response", "right_response", "left_system", "right_system", "choice", "winner_system", "reason")
SHARED_FIELDS = ("experiment", "study", "criterion", "conversation", "rater", "platform", "seconds", "assignment_status",
                 "submitted_at")


def mixed_with_pairwise(studies: QuerySet[Study]) -> bool:
    """A pairwise condition beside conditions of other designs (one export holds both kinds of rows)."""
    return studies.filter(design=Design.PAIRWISE).exists() and studies.exclude(design=Design.PAIRWISE).exists()


def comparison_rows_as_ratings(studies: QuerySet[Study], fields: tuple[str, ...], *,
                               raw_ids: bool = False) -> Iterator[dict]:
    """The pairwise conditions' judgments as rows of a mixed export with columns ``fields`` (see the
    module docstring)."""
    for row in comparisons_export_rows(studies.filter(design=Design.PAIRWISE), raw_ids=raw_ids):
        entry = dict.fromkeys(fields)
        entry.update({k: row[k] for k in (*SHARED_FIELDS, *MIXED_FIELDS)}, design=Design.PAIRWISE.value)
        yield entry


def export_lines(studies: QuerySet[Study], export_format: str, *, raw_ids: bool = False) -> Iterator[str]:
    """Like studies.reports.exporting.export_lines: JSON lines verbatim, CSV text cells spreadsheet-safe (a
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
