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
    wanted_raters: list[int] | None = None
    if flagged_only:
        wanted_raters = [rid for rid, f in flags.items() if f.any]
    if rater is not None:
        wanted_raters = [rater] if wanted_raters is None else [r for r in wanted_raters if r == rater]
    items = StudyItem.objects.filter(study=study).select_related("conversation").order_by("position")
    if wanted_raters is not None:
        judged = (Exists(Rating.objects.filter(item=OuterRef("pk"), assignment__rater_id__in=wanted_raters))
                  | Exists(BestWorstChoice.objects.filter(item=OuterRef("pk"), assignment__rater_id__in=wanted_raters))
                  | Exists(Comparison.objects.filter(item=OuterRef("pk"), assignment__rater_id__in=wanted_raters)))
        items = items.filter(judged)
    current = Paginator(items, PAGE_SIZE).get_page(page)
    rows = {item.pk: ItemRow(item=item) for item in current.object_list}
    unit = unit_for(study)
    columns = unit.item_columns([row.item for row in rows.values()])  # responses, dialogues, a chat's systems
    for item_id, row in rows.items():
        row.responses = columns.get(item_id, [])
    only = Q() if wanted_raters is None else Q(assignment__rater_id__in=wanted_raters)
    names: dict[int, str] = {}
    lines: dict[tuple[int, int, str], dict[str, Any]] = {}

    def line_for(item_id, rater_id, platform, external, status, criterion, seconds) -> dict[str, Any]:
        if rater_id not in names:
            names[rater_id] = f"{platform}:{external}" if raw_ids else rater_pseudonym(study.experiment_id, rater_id)
        line = lines.get((item_id, rater_id, criterion))
        if line is None:
            line = lines[(item_id, rater_id, criterion)] = {
                "rater_id": rater_id, "rater": names[rater_id], "status": status, "criterion": criterion,
                "values": {}, "seconds": seconds, "flags": flags.get(rater_id, RaterFlags()), "choice": False}
            rows[item_id].ratings.append(line)
        return line

    who = ("item_id", "assignment__rater_id", "assignment__rater__platform", "assignment__rater__external_id",
           "assignment__status", "criterion__name")
    order = ("item_id", "assignment__rater_id", "criterion__position")
    ratings = Rating.objects.filter(only, item_id__in=list(rows)).order_by(*order, "response_id", "conversation_id")
    for *key, seconds, response_id, conversation_id, value, rank, kind, label, labels, text, why in ratings.values_list(
        *who, "seconds", "response_id", "conversation_id", "value", "rank",
        "criterion__kind", "label", "labels", "text", "rationale",
    ):
        # A dialogue-unit rating has no response: its target is the conversation.
        target = response_id if response_id is not None else conversation_id
        line = line_for(*key, seconds)
        if value is None and rank is None:  # a label, labels or free text (studies.designs.kinds): shown as text
            line["choice"] = True
            given = KINDS[kind].export_text({"label": label, "labels": labels, "text": text})
            line["values"][target] = f"{given} (why: {why})" if why else given
        elif why:  # a number with the rater's reason beside it
            line["choice"] = True
            line["values"][target] = f"{number_text(value if value is not None else rank)} (why: {why})"
        else:
            line["values"][target] = value if value is not None else rank
    for *key, seconds, best, worst in BestWorstChoice.objects.filter(only, item_id__in=list(rows)).order_by(*order) \
            .values_list(*who, "seconds", "best_id", "worst_id"):
        line = line_for(*key, seconds)
        line["values"].update({best: "best", worst: "worst"})
        line["choice"] = True
    for *key, seconds, left, right, left_dialogue, right_dialogue, choice in Comparison.objects.filter(
            only, item_id__in=list(rows)).order_by(*order).values_list(
            *who, "seconds", "left_id", "right_id", "left_conversation_id", "right_conversation_id", "choice"):
        if left is None:  # two whole conversations compared (ACUTE-Eval)
            left, right = left_dialogue, right_dialogue
        winner = {Comparison.Choice.LEFT: left, Comparison.Choice.RIGHT: right}.get(choice)
        line = line_for(*key, seconds)
        line["values"].update(
            {left: "tie", right: "tie"} if winner is None else {winner: "better", (right if winner == left else left): "worse"})
        line["choice"] = True
    column_of = unit.browser_column_of({t for line in lines.values() for t in line["values"]})
    made = unit.browser_transcripts(list(rows))  # the dialogues raters made on an item (a chat's), per rater
    unnamed = {t["rater_id"] for found in made.values() for t in found} - set(names)
    for rater_id, platform, external in Rater.objects.filter(pk__in=unnamed).values_list("pk", "platform", "external_id"):
        names[rater_id] = f"{platform}:{external}" if raw_ids else rater_pseudonym(study.experiment_id, rater_id)
    for item_id, found in made.items():
        rows[item_id].transcripts = [{**t, "rater": names[t["rater_id"]]} for t in found]
    for row in rows.values():  # one cell per shown response (or column), in the item's order
        for line in row.ratings:
            values = {column_of.get(target, target): value for target, value in line["values"].items()}
            line["cells"] = [values.get(r["id"]) for r in row.responses]
            if line["choice"]:  # shown as text (a reason, a label): a number beside it reads as the rater gave it
                line["cells"] = [number_text(v) if isinstance(v, float) else v for v in line["cells"]]
    return current, list(rows.values())
