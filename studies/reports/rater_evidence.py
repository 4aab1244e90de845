"""The evidence about one rater of a study: what the rater's page and the review queue show.

Every flag carries its figure, its threshold (``settings.RATER_FLAGS``, each documented with its source
in config/settings/base.py) and which side of it raises the flag, so a flag is never shown without its
reason. Figures:

- attention checks and gold items: shown, passed, the study's pass mark, each check item passed or not;
- agreement with the others (leave one out): Spearman ρ with the others' mean for scales (the reliability
  report's ``loo_r``), Gwet's AC1 with the others' majority for labels (raw agreement and Cohen's κ beside
  it; κ is not the flag's figure because a prevalent label breaks it), agreement with the Bradley–Terry
  order for A/B choices (``studies.analysis.rater_quality``);
- straight-lining (share of screens with one value throughout: the reliability report's figure);
- an excluded rater's agreement, ρ, straight-lining and competence are those from before the exclusion: computed with
  that rater's answers put back (every other excluded rater still out), so the page keeps its evidence;
- position habit: the top answer at the first shown position (A/B: the left side) against chance;
- speed: the rater's median active seconds per item against the study's median;
- competence on each label criterion by majority vote, Dawid–Skene and MACE (``aggregation_selectors``).
"""
from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import Q, QuerySet

from studies.designs import design_for
from studies.designs.common import DONE as DONE_STATUSES
from studies.designs.pairwise_report import comparisons_frame
from studies.designs.rater_reads import study_criteria
from studies.models import Assignment, AssignmentItem, Comparison, Rating, Study
from studies.pseudonyms import rater_pseudonym
from studies.rating.checks import check_passed, checks_config
from studies.reports import aggregation_selectors
from studies.reports import selectors as report_selectors


@dataclass(frozen=True)
class Flag:
    """One quality figure beside its threshold. ``raised``: on the wrong side of it."""

    key: str
    label: str
    figure: float | None
    threshold: float
    below: bool  # raised when the figure is below the threshold (else above)
    detail: str = ""

    @property
    def raised(self) -> bool:
        if self.figure is None:
            return False
        return self.figure < self.threshold if self.below else self.figure > self.threshold

    @property
    def rule(self) -> str:
        return f"{'below' if self.below else 'above'} {self.threshold:g}"


def thresholds() -> dict[str, float]:
    return dict(settings.RATER_FLAGS)


def rater_name(study: Study, assignment: Assignment, *, raw_ids: bool) -> str:
    rater = assignment.rater
    if not raw_ids:
        return rater_pseudonym(study.experiment_id, rater.pk)
    # An invite's rater is named after the invite ("invite-13"): "invite:invite-13" would say it twice.
    if rater.platform == "invite" and rater.external_id.startswith("invite-"):
        return f"invite {rater.external_id.removeprefix('invite-')}"
    return f"{rater.platform}:{rater.external_id}"


def _finite(value: Any) -> float | None:
    return None if value is None or value != value else float(value)


def _checks(study: Study, assignment: Assignment) -> list[dict[str, Any]]:
    """Each check item of the assignment with its kind and whether the rater's answer passed."""
    slots = list(assignment.assignment_items.filter(item__check_kind__gt="").order_by("position")
                 .values_list("item_id", "position", "item__check_kind", "item__check_rules", "response_order"))
    if not slots or assignment.status not in DONE_STATUSES:
        return [{"item": item, "position": pos + 1, "kind": kind, "passed": None} for item, pos, kind, _, _ in slots]
    answers = design_for(study).check_answers(assignment=assignment, item_ids=[s[0] for s in slots])
    criteria = [c.name for c in study_criteria(study)]
    return [{"item": item, "position": pos + 1, "kind": kind,
             "passed": check_passed(rules, answers.get(item, {}), criteria, len(order))}
            for item, pos, kind, rules, order in slots]


def _screens(assignment_ids: list[int]) -> dict[int, list[list[tuple[int, float]]]]:
    """assignment -> screens of (shown position, value) per item and scale criterion (check items out)."""
    orders = {(a, i): order for a, i, order in AssignmentItem.objects.filter(assignment_id__in=assignment_ids)
              .values_list("assignment_id", "item_id", "response_order")}
    screens: dict[tuple[int, int, int], list[tuple[int, float]]] = defaultdict(list)
    for a, item, criterion, response, value in Rating.objects.filter(
            assignment_id__in=assignment_ids, item__check_kind="", value__isnull=False, response__isnull=False) \
            .values_list("assignment_id", "item_id", "criterion_id", "response_id", "value"):
        order = orders.get((a, item)) or []
        if response in order:
            screens[(a, item, criterion)].append((order.index(response), value))
    out: dict[int, list[list[tuple[int, float]]]] = defaultdict(list)
    for (a, _, _), screen in screens.items():
        out[a].append(screen)
    return out


def rater_position(assignment: Assignment) -> list[dict[str, Any]]:
    """The rater's position habit. A/B choices: per criterion, the left side chosen among the decisive
    judgments by ``studies.analysis.pairwise.rater_sides``, the very test the report's side-preference
    count uses (exact two-sided binomial against ½), so the queue and the report agree. Scales: the top
    value shown first against chance 1/m, pooled over criteria."""
    from studies.analysis.pairwise import rater_sides
    from studies.analysis.rater_quality import position_habit as habit
    from studies.analysis.rater_quality import top_first

    picks = list(Comparison.objects.filter(assignment=assignment, item__check_kind="")
                 .order_by("criterion__position").values_list("criterion__name", "choice"))
    if picks:
        import pandas as pd

        frame = pd.DataFrame(picks, columns=["criterion", "choice"]).assign(rater=assignment.rater_id)
        out = []
        for criterion, part in frame.groupby("criterion", sort=False):
            (row,) = rater_sides(part)
            if row["decisive"]:
                out.append({"criterion": criterion, "what": "chose the left side", "first": row["left_wins"],
                            "screens": row["decisive"], "share": row["left_share"], "chance": 0.5, "p": row["p"]})
        return out
    first, counted, chance = top_first(_screens([assignment.pk]).get(assignment.pk, []))
    if not counted:
        return []
    return [{"criterion": "", "what": "rated the first response highest", **habit(first, counted, chance)}]


def study_seconds(study: Study) -> dict[int, list[float]]:
    """assignment id -> active seconds per item, for the submitted and approved assignments."""
    seconds: dict[int, list[float]] = defaultdict(list)
    for a, s in AssignmentItem.objects.filter(assignment__study=study, assignment__status__in=DONE_STATUSES,
                                              active_seconds__isnull=False).values_list("assignment_id", "active_seconds"):
        seconds[a].append(s)
    return seconds


def rater_speed(study: Study, assignment: Assignment, seconds: dict[int, list[float]] | None = None
                ) -> dict[str, Any] | None:
    """The rater's median active seconds per item beside the study's (``seconds``: ``study_seconds``)."""
    seconds = study_seconds(study) if seconds is None else seconds
    if assignment.pk not in seconds:
        return None
    mine = statistics.median(seconds[assignment.pk])
    everyone = statistics.median([s for values in seconds.values() for s in values])
    return {"median": mine, "study_median": everyone, "share": mine / everyone if everyone else None}


def label_agreement(study: Study, *, keep: int | None = None) -> dict[int, list[dict[str, Any]]]:
    """rater id -> per label criterion, agreement, AC1 and κ with the others' majority (a multi-label
    answer's set as one label)."""
    from studies.analysis.rater_quality import label_agreement_loo

    out: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for criterion in study.criteria.filter(kind__in=aggregation_selectors.LABEL_KINDS).order_by("position"):
        rows = Rating.objects.filter(Q(assignment__excluded=False) | Q(assignment__rater_id=keep), criterion=criterion,
                                     item__check_kind="", assignment__status__in=DONE_STATUSES)
        if criterion.kind == "multilabel":
            answers = [(r, (i, t, c), "; ".join(sorted(labels))) for r, i, t, c, labels in rows.values_list(
                "assignment__rater_id", "item_id", "response_id", "conversation_id", "labels") if labels is not None]
        else:
            answers = [(r, (i, t, c), label) for r, i, t, c, label in rows.values_list(
                "assignment__rater_id", "item_id", "response_id", "conversation_id", "label") if label]
        categories = [str(o) for o in (criterion.options or {}).get("labels") or []] \
            if criterion.kind == "categorical" else []
        for rater, found in label_agreement_loo(answers, categories).items():
            out[rater].append({"criterion": criterion.name, **found})
    return out


def order_agreement(study: Study, *, keep: int | None = None) -> dict[int, list[dict[str, Any]]]:
    """rater id -> per criterion, the share of decisive A/B choices agreeing with the Bradley–Terry order."""
    from studies.analysis.pairwise import BTError, bradley_terry_mm
    from studies.analysis.rater_quality import order_agreement as agreement_of

    frame = comparisons_frame(Study.objects.filter(pk=study.pk))
    if keep is not None and keep not in set(frame["rater"] if len(frame) else []):
        frame = _with_rater(study, frame, keep)
    out: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for criterion, part in (frame.groupby("criterion") if len(frame) else []):
        try:
            strengths = bradley_terry_mm(part)
        except (BTError, ValueError, ZeroDivisionError):
            continue
        for rater, mine in part.groupby("rater"):
            found = agreement_of(mine[["left_system", "right_system", "choice"]].itertuples(index=False), strengths)
            out[int(rater)].append({"criterion": criterion, **found})
    return out


def _with_rater(study: Study, frame: Any, rater_id: int) -> Any:
    """``frame`` with an excluded rater's own A/B choices added back (their page keeps its evidence)."""
    import pandas as pd

    from studies.designs.pairwise_report import FRAME_COLUMNS, comparisons

    rows = comparisons(Study.objects.filter(pk=study.pk), with_excluded=True).filter(
        assignment__rater_id=rater_id).values_list(*FRAME_COLUMNS.values())
    return pd.concat([frame, pd.DataFrame.from_records(list(rows), columns=list(FRAME_COLUMNS))], ignore_index=True)


def quality_rows(study: Study, *, keep: int | None = None) -> dict[int, dict[str, Any]]:
    """rater id -> the reliability report's row (leave-one-out ρ, straight-lining); ``keep``: an
    excluded rater put back beside the others (the others' excluded raters stay out)."""
    try:
        report = report_selectors.reliability_report(Study.objects.filter(pk=study.pk), keep=keep)
    except Exception:  # noqa: BLE001 - the page shows the other evidence without the report's figures
        return {}
    return {int(row["rater"]): row for row in report.raters}


def rater_flags(study: Study, assignment: Assignment, *, quality: dict[str, Any] | None = None,
                labels: list[dict[str, Any]] | None = None, order: list[dict[str, Any]] | None = None,
                position: list[dict[str, Any]] | None = None, speed: dict[str, Any] | None = None) -> list[Flag]:
    """The rater's flags, each with its figure and threshold (figures not given are computed)."""
    limits = thresholds()
    rater_id = assignment.rater_id
    quality = quality_rows(study).get(rater_id, {}) if quality is None else quality
    labels = label_agreement(study).get(rater_id, []) if labels is None else labels
    order = order_agreement(study).get(rater_id, []) if order is None else order
    position = rater_position(assignment) if position is None else position
    speed = rater_speed(study, assignment) if speed is None else speed
    flags = []
    if assignment.checks_shown:
        pass_mark = checks_config(study)["min_pass_rate"]  # the study's own setting (studies.rating.checks)
        flags.append(Flag("checks", "attention checks and gold items passed", assignment.checks_passed / assignment.checks_shown,
                          pass_mark, True, f"{assignment.checks_passed} of {assignment.checks_shown}"))
    if (loo := _finite(quality.get("loo_r"))) is not None:
        flags.append(Flag("loo_r", "Spearman ρ with the others' mean (leave one out)", loo, limits["min_loo_r"], True))
    if (straight := _finite(quality.get("straight_lining"))) is not None:
        flags.append(Flag("straight_lining", "share of screens with one value throughout", straight,
                          limits["max_straight_lining"], False))
    for found in labels:
        if found["ac1"] is not None:
            kappa = "undefined" if found["kappa"] is None else f"{found['kappa']:.3f}"
            flags.append(Flag(f"ac1-{found['criterion']}", f"{found['criterion']}: Gwet's AC1 with the others' majority",
                              found["ac1"], limits["min_ac1"], True,
                              f"raw agreement {found['agreement']:.2f} over {found['n']} shared targets; "
                              f"Cohen's κ {kappa}, not used: a prevalent label makes it 0 at high agreement"))
    for found in order:
        if found["share"] is not None:
            flags.append(Flag(f"order-{found['criterion']}", f"{found['criterion']}: choices agreeing with the "
                              "Bradley–Terry order", found["share"], limits["min_order_agreement"], True,
                              f"{found['agree']} of {found['n']}"))
    for found in position:
        if found["p"] is None:
            continue
        key = f"position-{found['criterion']}" if found["criterion"] else "position"
        where = f"{found['criterion']}: " if found["criterion"] else ""
        flags.append(Flag(key, f"{where}{found['what']}: exact two-sided binomial p against chance", found["p"],
                          limits["position_p"], True,
                          f"{found['first']} of {found['screens']}, chance {found['chance']:.2f}; p is the chance "
                          "of a split at least this uneven if the rater answered without regard to position"))
    if speed and speed["share"] is not None:
        flags.append(Flag("speed", "median active seconds per item, share of the study's median", speed["share"],
                          limits["min_speed_share"], True,
                          f"{speed['median']:.1f} s against {speed['study_median']:.1f} s"))
    return flags


def rater_assignment(study: Study, rater_id: int) -> Assignment | None:
    return Assignment.objects.filter(study=study, rater_id=rater_id).select_related("rater").first()


def rater_evidence(study: Study, rater_id: int, *, raw_ids: bool = False) -> dict[str, Any] | None:
    """Everything the rater's page shows but the answers (``browser_selectors.item_page(rater=...)``
    pages those), or None when the rater has no assignment in the study."""
    assignment = rater_assignment(study, rater_id)
    if assignment is None:
        return None
    # an excluded rater's figures are computed with their answers put back beside the others' (whom
    # they still leave alone), so the page keeps the evidence that justified the exclusion
    keep = rater_id if assignment.excluded else None
    quality = quality_rows(study, keep=keep).get(rater_id, {})
    labels = label_agreement(study, keep=keep).get(rater_id, [])
    order = order_agreement(study, keep=keep).get(rater_id, [])
    position, speed = rater_position(assignment), rater_speed(study, assignment)
    competence = [{"criterion": found["criterion"], "method": found["method_title"],
                   "values": [(m["title"], found["competence"].get(rater_id, {}).get(m["method"])) for m in found["methods"]]}
                  for found in aggregation_selectors.study_aggregation(study, keep=keep)
                  if rater_id in found["competence"]]
    times = list(assignment.assignment_items.order_by("position").values_list(
        "position", "item__position", "active_seconds", "item__check_kind"))
    return {
        "assignment": assignment, "name": rater_name(study, assignment, raw_ids=raw_ids),
        "with_own_answers": keep is not None,
        "flags": rater_flags(study, assignment, quality=quality, labels=labels, order=order, position=position,
                             speed=speed),
        "checks": _checks(study, assignment), "labels": labels, "order": order, "position": position, "speed": speed,
        "competence": competence, "seconds": [{"position": p + 1, "item": i, "seconds": s, "check": bool(k)}
                                              for p, i, s, k in times],
        "decisions": list(assignment.decisions.select_related("decided_by", "reverted_by")),
    }


def exclusions(studies: QuerySet[Study]) -> list[dict[str, Any]]:
    """Who a reviewer excluded from these studies' results and why (pseudonyms), for reports and the
    live panel."""
    rows = Assignment.objects.filter(study__in=studies, excluded=True).order_by("study_id", "pk") \
        .values_list("study__slug", "study__experiment_id", "rater_id", "exclusion_reason")
    return [{"study": slug, "rater": rater_pseudonym(experiment, rater), "reason": reason}
            for slug, experiment, rater, reason in rows]
