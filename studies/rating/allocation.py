"""Reads that decide where a rater goes and when a study is done: the experiment-level link's
choice of condition, and a study's closing rules (every item has its raters, or its expiry time).

Reads only; the writes that use them are ``entry.experiment_enter`` and
``closing.study_close_if_done``.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime

from django.db.models import Count, Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from studies.models import Assignment, Experiment, Study, StudyItem

# Assignments that hold a place in a condition: working on it, or done and not thrown out.
HOLDING = (Assignment.Status.STARTED, Assignment.Status.SUBMITTED, Assignment.Status.APPROVED)
# Assignments whose ratings count towards an item's target.
COUNTED = (Assignment.Status.SUBMITTED, Assignment.Status.APPROVED)


def places_needed(items: int, raters_per_item: int, items_per_assignment: int) -> int:
    """Raters a study needs so every item reaches its target: ceil(items x raters per item / items per rater)."""
    if items <= 0:
        return 0
    return math.ceil(items * raters_per_item / min(items_per_assignment, items))


def experiment_conditions(experiment: Experiment):
    """The conditions the experiment link may send a rater to: its published, non-benchmark studies."""
    return experiment.studies.filter(status=Study.Status.PUBLISHED).exclude(platform=Study.Platform.BENCHMARK) \
        .order_by("pk")


def experiment_platform_problem(studies: Iterable[Study]) -> str | None:
    """Why the conditions cannot share one experiment link (they take raters from different
    platforms), or None. A link carries one platform's parameters, so all conditions need the same."""
    by_platform: dict[str, list[str]] = {}
    for study in studies:
        by_platform.setdefault(study.platform, []).append(study.slug)
    if len(by_platform) <= 1:
        return None
    listed = "; ".join(f"{Study.Platform(p).label}: {', '.join(slugs)}" for p, slugs in sorted(by_platform.items()))
    return (f"the experiment link needs every published condition on one platform, and these use "
            f"{len(by_platform)} ({listed})")


def condition_loads(studies: Iterable[Study]) -> dict[int, float]:
    """study id -> fill ratio: assignments holding a place (started, submitted, approved) divided by
    the places the condition needs (``places_needed``). One query for all conditions."""
    ids = [s.pk for s in studies]
    rows = Study.objects.filter(pk__in=ids).annotate(
        n_items=Count("items", filter=Q(items__check_kind=""), distinct=True),  # check items ride along
        n_holding=Count("assignments", filter=Q(assignments__status__in=HOLDING), distinct=True),
    ).values_list("pk", "n_items", "n_holding", "raters_per_item", "items_per_assignment")
    loads = {}
    for pk, n_items, holding, per_item, per_assignment in rows:
        places = places_needed(n_items, per_item, per_assignment)
        loads[pk] = holding / places if places else math.inf
    return loads


def study_closes_at(study: Study) -> datetime | None:
    """``platform_config.closes_at`` (ISO 8601; a time without a zone is read in the site's zone) or None."""
    raw = (study.platform_config or {}).get("closes_at")
    if not raw or not isinstance(raw, str):
        return None
    try:
        value = parse_datetime(raw.strip())
    except ValueError:
        return None
    if value is None:
        return None
    return value if timezone.is_aware(value) else timezone.make_aware(value)


def study_items_complete(study: Study) -> bool:
    """True when every item of the study has ``raters_per_item`` submitted (or approved) assignments."""
    if not study.items.filter(check_kind="").exists():
        return False
    short = StudyItem.objects.filter(study=study, check_kind="").annotate(
        n=Count("assignment_items", filter=Q(assignment_items__assignment__status__in=COUNTED))
    ).filter(n__lt=study.raters_per_item)
    return not short.exists()


def study_close_reason(study: Study, *, now: datetime | None = None, check_items: bool = True) -> str | None:
    """Why a published study should close now (its expiry time passed, or every item has its
    raters unless ``platform_config.close_when_complete`` is false), or None."""
    if study.status != Study.Status.PUBLISHED:
        return None
    closes_at = study_closes_at(study)
    if closes_at is not None and closes_at <= (now or timezone.now()):
        return f"its closing time ({closes_at:%Y-%m-%d %H:%M %Z}) has passed"
    if check_items and (study.platform_config or {}).get("close_when_complete", True) is not False \
            and study_items_complete(study):
        return f"every item has its {study.raters_per_item} rater(s)"
    return None


def study_closing(study: Study) -> dict:
    """What the study page says about closing: the closing time, whether every item has its
    raters, and (once closed) why, read from the closing time and the counts."""
    closes_at = study_closes_at(study)
    raw = (study.platform_config or {}).get("closes_at")
    complete = study_items_complete(study)
    reason = None
    if study.status == Study.Status.CLOSED:
        if closes_at is not None and study.closed_at and study.closed_at >= closes_at:
            reason = "its closing time passed"
        elif complete:
            reason = f"every item has its {study.raters_per_item} rater(s)"
        else:
            reason = "closed by hand (or by the live-reliability rule)"
    return {"closes_at": closes_at, "closes_at_invalid": bool(raw) and closes_at is None, "complete": complete,
            "reason": reason, "when_complete": (study.platform_config or {}).get("close_when_complete", True) is not False}


def experiment_link(experiment: Experiment) -> dict:
    """The experiment link's state for the researcher's pages: its open conditions and, when they
    cannot share one link, why."""
    conditions = list(experiment_conditions(experiment))
    return {"conditions": conditions, "problem": experiment_platform_problem(conditions),
            "platform": conditions[0].platform if conditions else None}
