"""A study's review queue: the flagged raters, each with the flags that put them there
(figure and threshold, ``rater_evidence``) and their standing decision, undecided first; and the most
disputed items, each with its figure and the answers that disagree.

How disputed an item is, on a scale of 0 to 1 whatever the judgement:

- scales: the standard deviation of the raters' normalised scores of one target, divided by the
  largest possible for the scores seen on that criterion (half their range), the item's worst target;
- labels: 1 − the share of the most common label among the raters of one target (multi-label: the set);
- A/B choices: 1 − the share of the most common winner (a tie counts as its own answer).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from django.conf import settings

from studies.designs.common import DONE as DONE_STATUSES
from studies.designs.pairwise_report import comparisons_frame
from studies.models import Assignment, Comparison, RaterDecision, Rating, Study, StudyItem
from studies.pseudonyms import rater_pseudonym
from studies.reports import rater_evidence
from studies.reports import selectors as report_selectors


def flagged_raters(study: Study, *, raw_ids: bool = False) -> list[dict[str, Any]]:
    """Raters of submitted or approved assignments with a raised flag or failed checks, and every
    rater a reviewer has excluded; undecided first, then by how many flags are raised."""
    quality = rater_evidence.quality_rows(study)
    labels, order = rater_evidence.label_agreement(study), rater_evidence.order_agreement(study)
    verdicts = {d.assignment_id: d for d in RaterDecision.objects.filter(
        assignment__study=study, kind__in=["keep", "exclude"], reverted_at__isnull=True)}
    seconds = rater_evidence.study_seconds(study)
    out = []
    for assignment in Assignment.objects.filter(study=study).filter(status__in=DONE_STATUSES) \
            .select_related("rater").order_by("pk"):
        flags = rater_evidence.rater_flags(study, assignment, quality=quality.get(assignment.rater_id, {}),
                                           labels=labels.get(assignment.rater_id, []),
                                           order=order.get(assignment.rater_id, []),
                                           speed=rater_evidence.rater_speed(study, assignment, seconds) or {})
        raised = [flag for flag in flags if flag.raised]
        if not raised and not assignment.checks_failed and not assignment.excluded:
            continue
        out.append({"assignment": assignment, "rater_id": assignment.rater_id, "raised": raised,
                    "name": rater_evidence.rater_name(study, assignment, raw_ids=raw_ids),
                    "verdict": verdicts.get(assignment.pk)})
    return sorted(out, key=lambda row: (row["verdict"] is not None, -len(row["raised"]), row["name"]))


def _scale_disputes(study: Study) -> dict[int, dict[str, Any]]:
    frame = report_selectors.ratings_frame(Study.objects.filter(pk=study.pk))
    frame = frame[frame["score"].notna()] if len(frame) else frame
    out: dict[int, dict[str, Any]] = {}
    if not len(frame):
        return out
    for criterion, part in frame.groupby("criterion"):
        half_range = (part["score"].max() - part["score"].min()) / 2
        if not half_range:
            continue
        spread = part.groupby(["item", "unit"])["score"].agg(["std", "size"])
        spread = spread[spread["size"] > 1]
        for (item, _), row in spread.iterrows():
            figure = float(row["std"] / half_range)
            if figure > out.get(int(item), {}).get("figure", -1):
                out[int(item)] = {"figure": figure, "what": f"{criterion}: SD of scores / half their range"}
    return out


def _label_disputes(study: Study) -> dict[int, dict[str, Any]]:
    answers: dict[tuple, list[str]] = defaultdict(list)
    for item, criterion, target, conversation, label, labels in Rating.objects.filter(
            assignment__study=study, assignment__status__in=DONE_STATUSES, assignment__excluded=False,
            item__check_kind="", criterion__kind__in=["categorical", "multilabel"]).values_list(
            "item_id", "criterion__name", "response_id", "conversation_id", "label", "labels"):
        given = label if labels is None else "; ".join(sorted(labels)) or "(none of these)"
        if given:
            answers[(item, criterion, target or conversation)].append(given)
    comparisons = comparisons_frame(Study.objects.filter(pk=study.pk))
    for row in comparisons.itertuples(index=False) if len(comparisons) else []:
        winner = {"left": row.left_system, "right": row.right_system}.get(row.choice, "tie")
        answers[(int(row.item), row.criterion, None)].append(winner)
    out: dict[int, dict[str, Any]] = {}
    for (item, criterion, _), given in answers.items():
        if len(given) < 2:
            continue
        figure = 1 - Counter(given).most_common(1)[0][1] / len(given)
        if figure > out.get(item, {}).get("figure", -1):
            out[item] = {"figure": figure, "what": f"{criterion}: share not giving the most common answer",
                         "answers": dict(Counter(given))}
    return out


def disputed_items(study: Study, *, limit: int | None = None) -> list[dict[str, Any]]:
    """The most disputed items (figure above 0), most disputed first, at most ``limit``
    (``settings.REVIEW_DISPUTED_ITEMS``)."""
    limit = settings.REVIEW_DISPUTED_ITEMS if limit is None else limit
    found = _scale_disputes(study)
    for item, entry in _label_disputes(study).items():
        if entry["figure"] > found.get(item, {}).get("figure", -1):
            found[item] = entry
    top = sorted(((item, entry) for item, entry in found.items() if entry["figure"] > 0),
                 key=lambda pair: (-pair[1]["figure"], pair[0]))[:limit]
    items = StudyItem.objects.select_related("conversation").in_bulk([item for item, _ in top])
    raters = defaultdict(set)
    for item, experiment, rater in _answered(study, items=[i for i, _ in top]):
        raters[item].add(rater_pseudonym(experiment, rater))
    return [{"item": items[item], **entry, "raters": sorted(raters[item])} for item, entry in top if item in items]


def _answered(study: Study, *, items: list[int] | None = None) -> list[tuple[int, int, int]]:
    """(item, experiment, rater) of the answers the disputed items count: submitted or approved, not
    excluded, no check items; ratings and A/B choices alike (distinct)."""
    done = {"assignment__study": study, "assignment__status__in": DONE_STATUSES, "assignment__excluded": False,
            "item__check_kind": ""}
    if items is not None:
        done["item_id__in"] = items
    columns = ("item_id", "assignment__study__experiment_id", "assignment__rater_id")
    return list(Rating.objects.filter(**done).order_by().values_list(*columns).union(
        Comparison.objects.filter(**done).order_by().values_list(*columns)))


def disputed_scope(study: Study, *, raw_ids: bool = False) -> dict[str, Any]:
    """Which raters the disputed items leave out, and why: those a reviewer excluded, those whose
    assignment is not submitted, and those none of whose items another rater answered (an item needs two
    answers to disagree); check items are left out for everyone."""
    answers = _answered(study)
    per_item: dict[int, set[int]] = defaultdict(set)
    for item, _, rater in answers:
        per_item[item].add(rater)
    shared = {rater for item, _, rater in answers if len(per_item[item]) > 1}
    alone = sorted({rater for _, _, rater in answers} - shared)
    names = {a.rater_id: rater_evidence.rater_name(study, a, raw_ids=raw_ids)
             for a in Assignment.objects.filter(study=study).select_related("rater")}
    excluded = Assignment.objects.filter(study=study, excluded=True).values_list("rater_id", flat=True)
    unsubmitted = Assignment.objects.filter(study=study).exclude(status__in=DONE_STATUSES).count()
    return {"excluded": sorted(names[r] for r in excluded), "alone": sorted(names[r] for r in alone if r in names),
            "unsubmitted": unsubmitted, "raters": len({r for _, _, r in answers})}
