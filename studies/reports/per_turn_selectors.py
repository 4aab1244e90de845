"""The report's per-turn section (``studies.designs.kinds.per_turn``): per criterion, each behaviour's rate
per system with its Wilson and dialogue-bootstrap 95 % intervals, the test between systems, and agreement per
behaviour (nominal α with raw agreement beside it). Statistics are ``studies.analysis.per_turn``; this module
reads the ratings (one query per report) and hands in plain frames."""
from __future__ import annotations

from collections.abc import Collection
from typing import Any

from django.db.models import QuerySet

from studies.designs.common import DONE as DONE_STATUSES
from studies.designs.kinds.per_turn import PER_TURN
from studies.models import Criterion, Rating, Study
from studies.reports import targets

SHEET = "Per-turn behaviours"


def per_turn_criteria(studies: QuerySet[Study]) -> list[Criterion]:
    return list(Criterion.objects.filter(study__in=studies, kind=PER_TURN.key).select_related("study")
                .order_by("study_id", "position"))


def per_turn_report(studies: QuerySet[Study], *, exclude_flagged: bool = False,
                    excluded_raters: Collection[Any] = ()) -> list[dict[str, Any]]:
    """One entry per study and per-turn criterion; [] when the studies have none."""
    from studies.analysis import per_turn as stats

    criteria = per_turn_criteria(studies)
    if not criteria:
        return []
    ratings = Rating.objects.filter(criterion__in=criteria, item__check_kind="", assignment__status__in=DONE_STATUSES,
                                    assignment__excluded=False, turns__isnull=False)
    if exclude_flagged:
        ratings = ratings.exclude(assignment__checks_failed=True)
    if excluded_raters:
        ratings = ratings.exclude(assignment__rater_id__in=list(excluded_raters))
    rows: dict[int, list] = {c.pk: [] for c in criteria}
    for criterion_id, unit, system, rater, turns in targets.with_targets(ratings).order_by("id").values_list(
            "criterion_id", "target_id", "target_system", "assignment__rater_id", "turns"):
        rows[criterion_id].append((unit, system or "(unknown)", rater, turns))
    out = []
    for criterion in criteria:
        options = criterion.options or {}
        labels, mode = list(options.get("labels") or []), options.get("mode", "binary")
        frame = stats.turns_frame(rows[criterion.pk])
        out.append({"study": criterion.study.title, "criterion": criterion.name, "question": criterion.question,
                    "mode": mode, "labels": labels, "turns": len(frame), "dialogues": int(frame["unit"].nunique()),
                    "raters": int(frame["rater"].nunique()),
                    "rates": stats.behaviour_rates(frame, labels),
                    "agreement": stats.behaviour_agreement(frame, labels, categorical=mode == "categorical")})
    return out


def per_turn_sheet_rows(report: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The section as one spreadsheet row per criterion, behaviour and system (the report's XLSX)."""
    rows = []
    for entry in report:
        agreement = {a["label"]: a for a in entry["agreement"]["per_label"]}
        for behaviour in entry["rates"]:
            test = behaviour["test"]
            for row in behaviour["systems"]:
                rows.append({
                    "study": entry["study"], "criterion": entry["criterion"], "behaviour": behaviour["label"],
                    "system": row["system"], "turns": row["n"], "dialogues": row["dialogues"], "count": row["count"],
                    "rate": row["rate"], "wilson_low": row["ci95"][0], "wilson_high": row["ci95"][1],
                    "dialogue_bootstrap_low": row["ci95_dialogues"][0],
                    "dialogue_bootstrap_high": row["ci95_dialogues"][1],
                    "chi2": test["chi2"], "df": test["df"], "p": test["p"], "fisher_p": test["fisher_p"],
                    "alpha_nominal": agreement[behaviour["label"]]["alpha"],
                    "raw_agreement": agreement[behaviour["label"]]["raw_agreement"]})
    return rows
