"""The item and rating browser: per item, who rated it and how, with each rater's quality flags.

One page of items at a time (``PAGE_SIZE``); the ratings of that page come in one query, and the
raters' flags from the assignments (attention checks, screened out) and from the reliability report
(leave-one-out correlation, straight-lining), which is computed once per version of the ratings and
cached (``report_selectors.reliability_report``). Raters are pseudonyms unless ``raw_ids``.

What a "cell" holds follows the design: a rating's value (or rank) per response; in a dialogue-unit
study the columns are the item's dialogues (``Rating.conversation``), in a chat study the systems
chatted with (each rater rated their own conversation, whose transcript the item lists); ``bws_tuples`` picks show
"best"/"worst" under the picked responses and ``pairwise`` choices "better"/"worse" (or "tie" twice),
since those designs store choices (BestWorstChoice, Comparison) rather than Rating rows.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Exists, OuterRef, Q

from studies.designs import KINDS, unit_for
from studies.designs.common import DONE, number_text
from studies.models import (
    Assignment,
    BestWorstChoice,
    Comparison,
    Rater,
    Rating,
    Study,
    StudyItem,
)
from studies.pseudonyms import rater_pseudonym
from studies.reports import selectors as report_selectors

PAGE_SIZE = 20


@dataclass
class RaterFlags:
    failed_checks: bool = False
    screened_out: bool = False
    low_agreement: bool = False
    straight_lining: bool = False
    loo_r: float | None = None

    @property
    def any(self) -> bool:
        return self.failed_checks or self.screened_out or self.low_agreement or self.straight_lining

    @property
    def labels(self) -> list[str]:
        return [label for flag, label in (
            (self.failed_checks, "failed checks"), (self.screened_out, "screened out"),
            (self.low_agreement, "low agreement"), (self.straight_lining, "straight-lining")) if flag]


@dataclass
class ItemRow:
    item: StudyItem
    responses: list[dict[str, Any]] = field(default_factory=list)
    ratings: list[dict[str, Any]] = field(default_factory=list)
    transcripts: list[dict[str, Any]] = field(default_factory=list)  # dialogues raters made on it (chats)
    aggregated: list[dict[str, Any]] = field(default_factory=list)  # label criteria: the aggregated label per column


def rater_flags(study: Study) -> dict[int, RaterFlags]:
    """rater id -> flags for every rater with an assignment in the study."""
    flags: dict[int, RaterFlags] = {}
    for rater_id, checks_failed, platform_data in (
        Assignment.objects.filter(study=study).values_list("rater_id", "checks_failed", "platform_data")
    ):
        flags[rater_id] = RaterFlags(failed_checks=bool(checks_failed),
                                     screened_out=bool((platform_data or {}).get("screened_out")))
    if flags and Rating.objects.filter(assignment__study=study, assignment__status__in=DONE).exists():
        try:
            report = report_selectors.reliability_report(Study.objects.filter(pk=study.pk))
        except Exception:  # noqa: BLE001 - quality figures are a courtesy here; the browser works without them
            report = None
        from studies.analysis.report import ReportOptions

        options = ReportOptions()
        for row in (report.raters if report is not None else []):
            entry = flags.get(int(row["rater"]))
            if entry is None:
                continue
            loo = row.get("loo_r")
            entry.loo_r = None if loo is None or loo != loo else float(loo)
            entry.low_agreement = entry.loo_r is not None and entry.loo_r < options.min_loo
            straight = row.get("straight_lining")
            entry.straight_lining = straight is not None and straight == straight and straight > options.max_straight
    return flags


def rater_choices(study: Study, *, raw_ids: bool) -> list[tuple[int, str]]:
    """(rater id, shown name) for the filter, in order of the shown name."""
    rows = Assignment.objects.filter(study=study).values_list("rater_id", "rater__platform", "rater__external_id")
    named = [(rid, f"{platform}:{external}" if raw_ids else rater_pseudonym(study.experiment_id, rid))
             for rid, platform, external in rows]
    return sorted(named, key=lambda pair: pair[1])


def item_page(study: Study, *, page: int | str = 1, rater: int | None = None, flagged_only: bool = False,
              raw_ids: bool = False, flags: dict[int, RaterFlags] | None = None) -> tuple[Page, list[ItemRow]]:
    """A page of the study's items (check items included, marked) with their responses and ratings.
    ``rater`` keeps items that rater rated and only their ratings; ``flagged_only`` keeps ratings of
    flagged raters (and the items they rated)."""
    flags = rater_flags(study) if flags is None else flags
    wanted_raters = _wanted_raters(flags, rater=rater, flagged_only=flagged_only)
    current = Paginator(_items_judged_by(study, wanted_raters), PAGE_SIZE).get_page(page)
    return current, _rows(study, current.object_list, wanted_raters, raw_ids=raw_ids, flags=flags)


def item_slice(study: Study, *, offset: int = 0, limit: int = PAGE_SIZE, rater: int | None = None,
               flagged_only: bool = False, raw_ids: bool = False) -> tuple[int, list[ItemRow]]:
    """(how many items there are, the rows of ``limit`` items from ``offset``): ``item_page`` by offset, as
    the API pages every list."""
    flags = rater_flags(study)
    wanted_raters = _wanted_raters(flags, rater=rater, flagged_only=flagged_only)
    items = _items_judged_by(study, wanted_raters)
    return items.count(), _rows(study, list(items[offset:offset + limit]), wanted_raters, raw_ids=raw_ids, flags=flags)


def _rows(study: Study, items, wanted_raters, *, raw_ids: bool, flags: dict[int, RaterFlags]) -> list[ItemRow]:
    rows = {item.pk: ItemRow(item=item) for item in items}
    unit = unit_for(study)
    columns = unit.item_columns([row.item for row in rows.values()])  # responses, dialogues, a chat's systems
    for item_id, row in rows.items():
        row.responses = columns.get(item_id, [])
    lines = _Lines(study=study, raw_ids=raw_ids, flags=flags, rows=rows)
    only = Q() if wanted_raters is None else Q(assignment__rater_id__in=wanted_raters)
    _ratings_read(lines, only)
    _best_worst_read(lines, only)
    _comparisons_read(lines, only)
    _transcripts_read(lines, unit.browser_transcripts(list(rows)))  # the dialogues raters made on an item (a chat's)
    _cells_fill(rows, unit.browser_column_of({t for line in lines.lines.values() for t in line["values"]}))
    _aggregated_fill(study, rows, unit.browser_column_of)
    return list(rows.values())


def _aggregated_fill(study: Study, rows: dict[int, ItemRow], columns) -> None:
    """Each label criterion's aggregated label and its probability under each column (``aggregated_labels``)."""
    from studies.reports import aggregated_labels

    if not rows or not study.criteria.filter(kind__in=("categorical", "multilabel")).exists():
        return
    for item_id, lines in aggregated_labels.browser_lines(study, list(rows), columns).items():
        row = rows[item_id]
        row.aggregated = [{**line, "cells": [line["values"].get(r["id"]) for r in row.responses]} for line in lines]


def _wanted_raters(flags: dict[int, RaterFlags], *, rater: int | None, flagged_only: bool) -> list[int] | None:
    """The raters whose ratings the page keeps (flagged ones, one rater, or both), None for all."""
    wanted: list[int] | None = None
    if flagged_only:
        wanted = [rid for rid, f in flags.items() if f.any]
    if rater is not None:
        wanted = [rater] if wanted is None else [r for r in wanted if r == rater]
    return wanted


def _items_judged_by(study: Study, wanted_raters: list[int] | None):
    """The study's items in order; with ``wanted_raters``, only those one of them rated, picked or compared."""
    items = StudyItem.objects.filter(study=study).select_related("conversation").order_by("position")
    if wanted_raters is None:
        return items
    judged = (Exists(Rating.objects.filter(item=OuterRef("pk"), assignment__rater_id__in=wanted_raters))
              | Exists(BestWorstChoice.objects.filter(item=OuterRef("pk"), assignment__rater_id__in=wanted_raters))
              | Exists(Comparison.objects.filter(item=OuterRef("pk"), assignment__rater_id__in=wanted_raters)))
    return items.filter(judged)


@dataclass
class _Lines:
    """A page's rating lines, one per item, rater and criterion, in the order first met, and the raters' shown names."""
    study: Study
    raw_ids: bool
    flags: dict[int, RaterFlags]
    rows: dict[int, ItemRow]
    names: dict[int, str] = field(default_factory=dict)
    lines: dict[tuple[int, int, str], dict[str, Any]] = field(default_factory=dict)

    def name(self, rater_id: int, platform: str, external: str) -> str:
        if rater_id not in self.names:
            self.names[rater_id] = f"{platform}:{external}" if self.raw_ids \
                else rater_pseudonym(self.study.experiment_id, rater_id)
        return self.names[rater_id]

    def line(self, item_id, rater_id, platform, external, status, criterion, seconds) -> dict[str, Any]:
        line = self.lines.get((item_id, rater_id, criterion))
        if line is None:
            line = self.lines[(item_id, rater_id, criterion)] = {
                "rater_id": rater_id, "rater": self.name(rater_id, platform, external), "status": status,
                "criterion": criterion, "values": {}, "seconds": seconds,
                "flags": self.flags.get(rater_id, RaterFlags()), "choice": False}
            self.rows[item_id].ratings.append(line)
        return line


_WHO = ("item_id", "assignment__rater_id", "assignment__rater__platform", "assignment__rater__external_id",
        "assignment__status", "criterion__name")
_ORDER = ("item_id", "assignment__rater_id", "criterion__position")


def _ratings_read(lines: _Lines, only: Q) -> None:
    """Rating rows: a value or rank per response (or dialogue), a label, labels or free text shown as text."""
    ratings = Rating.objects.filter(only, item_id__in=list(lines.rows)).order_by(*_ORDER, "response_id", "conversation_id")
    for *key, seconds, response_id, conversation_id, value, rank, kind, label, labels, text, why, spans, turns in \
            ratings.values_list(*_WHO, "seconds", "response_id", "conversation_id", "value", "rank",
                                "criterion__kind", "label", "labels", "text", "rationale", "spans", "turns"):
        # A dialogue-unit rating has no response: its target is the conversation.
        target = response_id if response_id is not None else conversation_id
        line = lines.line(*key, seconds)
        if value is None and rank is None:  # a label, labels or free text (studies.designs.kinds): shown as text
            line["choice"] = True
            given = KINDS[kind].export_text({"label": label, "labels": labels, "text": text, "spans": spans, "turns": turns})
            line["values"][target] = f"{given} (why: {why})" if why else given
        elif why:  # a number with the rater's reason beside it
            line["choice"] = True
            line["values"][target] = f"{number_text(value if value is not None else rank)} (why: {why})"
        else:
            line["values"][target] = value if value is not None else rank


def _best_worst_read(lines: _Lines, only: Q) -> None:
    """Best-worst picks: "best" and "worst" under the picked responses."""
    for *key, seconds, best, worst in BestWorstChoice.objects.filter(only, item_id__in=list(lines.rows)) \
            .order_by(*_ORDER).values_list(*_WHO, "seconds", "best_id", "worst_id"):
        line = lines.line(*key, seconds)
        line["values"].update({best: "best", worst: "worst"})
        line["choice"] = True


def _comparisons_read(lines: _Lines, only: Q) -> None:
    """Pairwise choices: "better" and "worse", or "tie" twice; ACUTE-Eval compares two whole conversations."""
    for *key, seconds, left, right, left_dialogue, right_dialogue, choice in Comparison.objects.filter(
            only, item_id__in=list(lines.rows)).order_by(*_ORDER).values_list(
            *_WHO, "seconds", "left_id", "right_id", "left_conversation_id", "right_conversation_id", "choice"):
        if left is None:  # two whole conversations compared (ACUTE-Eval)
            left, right = left_dialogue, right_dialogue
        winner = {Comparison.Choice.LEFT: left, Comparison.Choice.RIGHT: right}.get(choice)
        line = lines.line(*key, seconds)
        line["values"].update(
            {left: "tie", right: "tie"} if winner is None else {winner: "better", (right if winner == left else left): "worse"})
        line["choice"] = True


def _transcripts_read(lines: _Lines, made: dict[int, list[dict[str, Any]]]) -> None:
    """The dialogues raters made on each item, under their shown names (raters with no rating named here)."""
    unnamed = {t["rater_id"] for found in made.values() for t in found} - set(lines.names)
    for rater_id, platform, external in Rater.objects.filter(pk__in=unnamed).values_list("pk", "platform", "external_id"):
        lines.name(rater_id, platform, external)
    for item_id, found in made.items():
        lines.rows[item_id].transcripts = [{**t, "rater": lines.names[t["rater_id"]]} for t in found]


def _cells_fill(rows: dict[int, ItemRow], column_of: dict) -> None:
    """One cell per shown response (or column), in the item's order."""
    for row in rows.values():
        for line in row.ratings:
            values = {column_of.get(target, target): value for target, value in line["values"].items()}
            line["cells"] = [values.get(r["id"]) for r in row.responses]
            if line["choice"]:  # shown as text (a reason, a label): a number beside it reads as the rater gave it
                line["cells"] = [number_text(v) if isinstance(v, float) else v for v in line["cells"]]
