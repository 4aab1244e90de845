"""Existing ratings from a long-format table (one rating per row: ``rater, conversation, system, criterion,
value``; CSV or XLSX) imported into a study of the matching design, which is then closed, so that its
reliability, aggregation, reports and exports run on ratings collected elsewhere.

The study must rate values (not ranks or A/B choices), have its items built and no rater yet (a draft, or a
closed study nobody rated). Each row names the item's conversation by its id in the corpus and the system
whose response was rated (empty in a dialogue-unit study: the whole conversation is rated); ``value`` is a
number on the criterion's scale, as the design allows it, or, for a label criterion, the label (a label
set: labels separated by ";", an empty cell for "none of these"), or the text of a free-text criterion. All or nothing: every problem is
named by row (the header is row 1, as a spreadsheet numbers it) and column, and nothing is stored if any
row is refused."""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any, BinaryIO

from django.db import transaction
from django.utils import timezone

from studies.designs import design_for, kind_for, unit_for
from studies.errors import StudyStateError
from studies.models import Assignment, AssignmentItem, Rating, Study, StudyItemResponse
from studies.rating.entry import rater_get_or_create

COLUMNS = ("rater", "conversation", "system", "criterion", "value")
MAX_ROWS = 200_000
MAX_PROBLEMS = 50


class RatingsImportFailed(Exception):
    """The table was refused; ``problems`` lists each as "row N, column: message". Nothing was stored."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("; ".join(problems))


@dataclass
class RatingsImportSummary:
    study: Study
    ratings: int
    raters: int


def table_rows(stream: BinaryIO, name: str) -> list[tuple[int, dict[str, str]]]:
    """(row number, {column: text}) of a CSV or XLSX table whose header names the columns (any case, any
    order, other columns ignored); RatingsImportFailed when a column is missing or the file unreadable."""
    if name.lower().endswith(".xlsx"):
        from openpyxl import load_workbook  # only for spreadsheets: the web process does not need it otherwise

        try:
            sheet = load_workbook(stream, read_only=True, data_only=True).worksheets[0]
        except Exception as error:  # noqa: BLE001 - any unreadable workbook is the uploader's problem, named
            raise RatingsImportFailed([f"file: not a readable XLSX workbook ({type(error).__name__})"]) from None
        raw = [["" if v is None else (str(int(v)) if isinstance(v, float) and v.is_integer() else str(v))
                for v in row] for row in sheet.iter_rows(values_only=True)]
    else:
        try:
            text = stream.read().decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise RatingsImportFailed([f"file: not UTF-8 text (byte {error.start})"]) from None
        raw = list(csv.reader(io.StringIO(text)))
    if not raw:
        raise RatingsImportFailed(["file: the table is empty; give a header row " + ", ".join(COLUMNS)])
    header = [h.strip().lower() for h in raw[0]]
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise RatingsImportFailed([f"row 1: missing column(s) {', '.join(missing)} (the header must name "
                                   f"{', '.join(COLUMNS)})"])
    if len(raw) - 1 > MAX_ROWS:
        raise RatingsImportFailed([f"file: {len(raw) - 1} rows; at most {MAX_ROWS}"])
    where = {c: header.index(c) for c in COLUMNS}
    return [(n, {c: (row[i].strip() if i < len(row) else "") for c, i in where.items()})
            for n, row in enumerate(raw[1:], 2) if any(cell.strip() for cell in row)]


def _study_refusal(study: Study) -> str | None:
    design = design_for(study)
    if design.ranks or design.compares_pairs:
        return ("this study's design records ranks or choices between targets; import a table of values into a "
                "study that rates values (e.g. Likert or magnitude estimation)")
    if study.status == Study.Status.PUBLISHED:
        return "the study is published; import into a draft or closed study"
    if study.assignments.exists():
        return "the study already has raters; import into a study nobody has rated"
    if not study.items.filter(check_kind="").exists():
        return "the study has no items yet; build its items from the corpus first"
    return None


def _answer(study: Study, criterion, text: str) -> tuple[dict[str, Any] | None, str | None]:
    """The Rating fields of one cell's value for this criterion, or the problem."""
    kind = kind_for(criterion)
    if criterion.kind == "scale" or kind.numeric:
        try:
            value = float(text)
        except ValueError:
            return None, f"must be a number, got {text[:30]!r}"
        problem = design_for(study).value_problem(study.design_config, value, scale_min=criterion.scale_min,
                                                  scale_max=criterion.scale_max)
        return (None, problem) if problem else ({"value": value}, None)
    if criterion.kind == "multilabel":
        given: Any = kind.api_given([part.strip() for part in text.split(";") if part.strip()])  # empty: none
    else:
        given = text
    answer, problem = kind.answer(criterion, given)
    if problem:
        return None, problem
    return kind.rating_fields(design_for(study), answer), None


def _targets(study: Study) -> tuple[dict[str, Any], dict[tuple[str, str], int]]:
    """conversation external id -> its regular item, and (external id, system) -> the response rated."""
    items = {item.conversation.external_id: item for item in
             study.items.filter(check_kind="", conversation__isnull=False).select_related("conversation")}
    responses = {(external, system): rid for external, system, rid in StudyItemResponse.objects.filter(
        item__study=study, item__check_kind="").values_list("item__conversation__external_id",
                                                            "response__system__name", "response_id")}
    return items, responses


@transaction.atomic
def ratings_table_import(*, study: Study, stream: BinaryIO, source_name: str) -> RatingsImportSummary:
    """Import the table into ``study`` (see the module's docstring) and close it."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    if refusal := _study_refusal(study):
        raise StudyStateError(refusal)
    rows = table_rows(stream, source_name)
    if not rows:
        raise RatingsImportFailed(["file: the table has a header but no rows"])
    dialogue = unit_for(study).level == "dialogue"
    criteria = {c.name: c for c in study.criteria.all()}
    items, responses = _targets(study)
    problems: list[str] = []
    parsed: list[tuple[str, Any, int | None, Any, dict[str, Any]]] = []
    seen: dict[tuple, int] = {}
    for n, row in rows:
        def refuse(column: str, message: str, n: int = n) -> None:
            problems.append(f"row {n}, {column}: {message}")
        if not row["rater"]:
            refuse("rater", "is empty")
            continue
        item = items.get(row["conversation"])
        if item is None:
            refuse("conversation", f"no item of this study shows conversation {row['conversation'][:60]!r}")
            continue
        response_id = None
        if not dialogue:
            response_id = responses.get((row["conversation"], row["system"]))
            if response_id is None:
                refuse("system", f"conversation {row['conversation'][:60]!r} has no rated response of system "
                                 f"{row['system'][:60]!r} in this study")
                continue
        criterion = criteria.get(row["criterion"])
        if criterion is None:
            refuse("criterion", f"unknown criterion {row['criterion'][:60]!r} (the study has {', '.join(criteria)})")
            continue
        fields, problem = _answer(study, criterion, row["value"])
        if problem:
            refuse("value", problem)
            continue
        key = (row["rater"], item.pk, response_id, criterion.pk)
        if key in seen:
            refuse("value", f"rater {row['rater'][:40]!r} already rated this on row {seen[key]}")
            continue
        seen[key] = n
        parsed.append((row["rater"], item, response_id, criterion, fields))
    if problems:
        transaction.set_rollback(True)
        more = len(problems) - MAX_PROBLEMS
        raise RatingsImportFailed(problems[:MAX_PROBLEMS] + ([f"… and {more} more"] if more > 0 else []))
    return _store(study, parsed, dialogue)


def _store(study: Study, parsed: list, dialogue: bool) -> RatingsImportSummary:
    now = timezone.now()
    assignments: dict[str, Assignment] = {}
    for name in dict.fromkeys(p[0] for p in parsed):
        rater = rater_get_or_create(platform=Study.Platform.BENCHMARK, external_id=f"{study.slug}:{name}"[:120])
        assignments[name] = Assignment.objects.create(
            study=study, rater=rater, experiment=study.experiment, status=Assignment.Status.SUBMITTED, seed=0,
            started_at=now, submitted_at=now)
    slots: dict[tuple[int, int], AssignmentItem] = {}
    ratings = []
    for name, item, response_id, criterion, fields in parsed:
        assignment = assignments[name]
        slot = slots.setdefault((assignment.pk, item.pk), AssignmentItem(
            assignment=assignment, item=item, position=item.position, response_order=[], answered_at=now))
        target = item.conversation_id if dialogue else response_id
        if target not in slot.response_order:
            slot.response_order.append(target)
        ratings.append(Rating(assignment=assignment, item=item, criterion=criterion,
                              **({"conversation_id": target} if dialogue else {"response_id": target}), **fields))
    AssignmentItem.objects.bulk_create(list(slots.values()), batch_size=2000)
    Rating.objects.bulk_create(ratings, batch_size=2000)
    Study.objects.filter(pk=study.pk).update(status=Study.Status.CLOSED, published_at=study.published_at or now,
                                             closed_at=now)
    study.refresh_from_db()
    return RatingsImportSummary(study=study, ratings=len(ratings), raters=len(assignments))
