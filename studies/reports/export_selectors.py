"""The rows of the ratings export (CSV, JSON lines, XLSX): one per rating, streamed in chunks.

The columns of ``studies.reports.selectors.EXPORT_FIELDS`` (kept first and in order, so existing scripts keep
working) and then what a position-bias or context analysis needs:

- ``item_order``: the item's place in the rater's sequence (1-based), for order and fatigue effects;
- ``shown_position`` / ``shown_letter``: where this response stood on the rater's screen (1-based) and
  the letter it was shown under ("Response B"), from ``AssignmentItem.response_order``, the shuffle that
  rater saw (not the item's canonical order);
- ``active_seconds``: the seconds the rater spent on the item's screen with the page visible (the item,
  not this one rating: every rating of one screen carries the same value);
- ``response_text`` and ``context`` (the conversation's turns, one per line, "speaker: text");
- ``kind``, ``answer`` and ``rationale``: how the criterion is answered (``studies.designs.kinds``), the
  answer of a criterion that is not a number (a label, labels joined by "; ", free text; ``value`` is
  empty then) and the rater's reason where the criterion asks for one.
- ``checks_shown`` / ``checks_passed`` / ``failed_checks``: the rater's attention checks and gold
  items in this assignment (set at submit; ``failed_checks`` is the flag the report's "exclude flagged
  raters" leaves out) and ``screened_out`` (failed checks, or screened out by hand), so an analysis
  outside Concord can drop the same raters; ``excluded`` / ``excluded_reason``: a reviewer left the rater
  out of the results (``studies.rating.decisions``): every report does, the export keeps the rows and says why.
- ``aggregated_label`` / ``aggregated_probability`` / ``aggregation_method``: on a label criterion's rows, the
  target's label aggregated over the raters (excluded raters left out) with its posterior probability and the
  method (``studies.reports.aggregated_labels``); empty elsewhere.

Texts and contexts are looked up once per response and per item (a study has far fewer of them than
ratings), not fetched with every rating row.
"""
from __future__ import annotations

import string
from collections.abc import Iterator
from typing import Any

from django.db.models import IntegerField, JSONField, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from studies.designs import KINDS, designs_of, unit_for
from studies.models import Assignment, AssignmentItem, Criterion, Response, Study, StudyItem, StudyItemResponse
from studies.pseudonyms import rater_pseudonym
from studies.reports import aggregated_labels, aggregation_selectors
from studies.reports.selectors import EXPORT_FIELDS, normalised_ratings

EXTRA_FIELDS = ("item_order", "shown_position", "shown_letter", "active_seconds", "response_text", "context",
                "kind", "answer", "rationale", "checks_shown", "checks_passed", "failed_checks", "screened_out",
                "excluded", "excluded_reason", "aggregated_label", "aggregated_probability", "aggregation_method")
_CHECK_FIELDS = ("assignment__checks_shown", "assignment__checks_passed", "assignment__checks_failed",
                 "assignment__platform_data", "assignment__excluded", "assignment__exclusion_reason")
RATINGS_EXPORT_FIELDS = (*EXPORT_FIELDS, *EXTRA_FIELDS)
CHUNK = 5000


def shown_letter(position: int | None) -> str | None:
    """1 -> "A" (as the rater page labels responses), 26 -> "Z", 27 -> "AA"; None stays None."""
    if not position:
        return None
    letters = ""
    while position:
        position, rest = divmod(position - 1, 26)
        letters = string.ascii_uppercase[rest] + letters
    return letters


def context_text(turns: Any) -> str:
    """A conversation's turns as one text: a line per turn, "speaker: text" where a speaker is named."""
    lines = []
    for turn in turns or []:
        if isinstance(turn, dict):
            speaker, text = str(turn.get("speaker") or "").strip(), str(turn.get("text") or "")
            lines.append(f"{speaker}: {text}" if speaker else text)
        else:
            lines.append(str(turn))
    return "\n".join(lines)


def ratings_export_rows(studies: QuerySet[Study], *, raw_ids: bool = False) -> Iterator[dict[str, Any]]:
    """One dict per rating with ``RATINGS_EXPORT_FIELDS`` (values as stored: numbers, booleans, None,
    datetimes); raters by their per-experiment pseudonym unless ``raw_ids``."""
    slot = AssignmentItem.objects.filter(assignment=OuterRef("assignment"), item=OuterRef("item"))
    queryset = (
        normalised_ratings(studies, numeric_only=False, with_excluded=True)
        .annotate(shown_order=Subquery(slot.values("response_order")[:1], output_field=JSONField()),
                  item_order=Subquery(slot.values("position")[:1]),
                  active_seconds=Subquery(slot.values("active_seconds")[:1]),
                  tuple_position=Value(None, output_field=IntegerField()),  # only best-worst tuples have one
                  # a dialogue-unit rating names the dialogue it rated (several may share one ranking item)
                  rated_conversation=Coalesce("conversation__external_id", "item__conversation__external_id"))
        .order_by("assignment__study_id", "assignment_id", "item__position", "criterion__position", "response_id")
        .values_list(
            "assignment__study__experiment__slug", "assignment__study__slug", "assignment__study__design",
            "criterion__name", "rated_conversation", "target_system", "response_id",
            "assignment__rater__external_id", "assignment__rater__platform", "value", "normalised_value",
            "normalisation", "rank", "seconds", "item__reference_value", "assignment__rater__prior_rating_experience",
            "assignment__rater__prior_agent_experience", "assignment__rater__questionnaire", "assignment__status",
            "assignment__submitted_at", "tuple_position",
            "item_order", "shown_order", "active_seconds", "item_id",
            "assignment__study__experiment_id", "assignment__rater_id", "conversation_id",
            "criterion__kind", "label", "labels", "text", "rationale", "spans", "turns", *_CHECK_FIELDS,
        )
    )
    items = StudyItem.objects.filter(study__in=studies)
    contexts = {pk: context_text(turns) for pk, turns in items.values_list("pk", "conversation__turns")}
    # A dialogue the rater made (a chat) is no item's conversation: its transcript is the context.
    made = {pk: context_text(turns) for study in studies if unit_for(study).collects_dialogues
            for pk, turns in unit_for(study).conversations(study).values_list("pk", "turns")}
    texts = dict(StudyItemResponse.objects.filter(item__in=items).values_list("response_id", "response__text"))
    names: dict[tuple[int, int], str] = {}
    aggregated = aggregated_labels.lookup(studies) if Criterion.objects.filter(
        study__in=studies, kind__in=aggregation_selectors.LABEL_KINDS).exists() else {}
    width = len(EXPORT_FIELDS)
    for row in queryset.iterator(chunk_size=CHUNK):
        entry = dict(zip(EXPORT_FIELDS, row[:width], strict=True))
        item_order, order, active, item_id, experiment_id, rater_id, conversation_id, kind, *rest = row[width:]
        given, spans, turns, checks = rest[:4], rest[4], rest[5], rest[6:]
        answer = KINDS[kind].export_text({**dict(zip(("label", "labels", "text"), given[:3], strict=True)),
                                          "spans": spans, "turns": turns})
        if not raw_ids:
            key = (experiment_id, rater_id)
            entry["rater"] = names.get(key) or names.setdefault(key, rater_pseudonym(*key))
        response = entry["response"]
        position = order.index(response) + 1 if isinstance(order, list) and response in order else None
        entry.update(item_order=(item_order + 1) if item_order is not None else None, shown_position=position,
                     shown_letter=shown_letter(position), active_seconds=active, response_text=texts.get(response),
                     context=contexts.get(item_id) or made.get(conversation_id), kind=kind, answer=answer,
                     rationale=given[3], **_check_columns(*checks))
        label, probability, method = aggregated.get(
            (entry["study"], entry["criterion"], item_id, response if response is not None else conversation_id),
            (None, None, None))
        entry.update(aggregated_label=label, aggregated_probability=probability, aggregation_method=method)
        yield entry
    for design in designs_of(studies):
        if design.export_fields() is None:  # its own judgments in these columns (best-worst tuple picks)
            yield from _judgment_rows(design.export_rows(design.studies_of(studies), raw_ids=raw_ids))


def _check_columns(shown: int | None, passed: int | None, failed: bool, platform_data: Any, excluded: bool = False,
                   reason: str = "") -> dict[str, Any]:
    screened = bool(failed) or bool((platform_data or {}).get("screened_out"))
    return {"checks_shown": shown, "checks_passed": passed, "failed_checks": bool(failed), "screened_out": screened,
            "excluded": bool(excluded), "excluded_reason": reason if excluded else ""}


def _judgment_rows(judgments: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """A design's own judgments in the ratings columns (``StudyDesign.export_rows``, e.g. one row per
    best-worst tuple member) with the response's text and its own conversation; they have no screen
    position of their own."""
    rows = list(judgments)
    if not rows:
        return
    members = {pk: (text, context_text(turns)) for pk, text, turns in Response.objects.filter(
        pk__in={row["response"] for row in rows}).values_list("pk", "text", "conversation__turns")}
    checks = {pk: rest for pk, *rest in Assignment.objects.filter(pk__in={row["assignment"] for row in rows})
              .values_list("pk", *(f.removeprefix("assignment__") for f in _CHECK_FIELDS))}
    for row in rows:
        text, context = members.get(row["response"], (None, None))
        assignment = row.pop("assignment")
        yield {**row, "item_order": None, "shown_position": None, "shown_letter": None, "active_seconds": None,
               "response_text": text, "context": context, "kind": "scale", "answer": "", "rationale": "",
               **_check_columns(*checks[assignment])}
