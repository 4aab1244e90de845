"""Reads for the researcher's pages: what a user may see, and each study's progress.\n\nSized for 10^6 ratings: aggregation happens in the database; Python sees one row per item at most."""
from __future__ import annotations

from statistics import median
from typing import Any

import numpy as np
from django.db.models import Count, Q, QuerySet

from studies.designs import designs_of
from studies.designs.common import DONE
from studies.models import (
    Assignment,
    AssignmentItem,
    Invite,
    Rating,
    Study,
)

DONE_STATUSES = DONE  # the assignments every report and progress count (submitted, approved)


def studies_progress(studies: QuerySet[Study] | list[Study]) -> dict[int, dict[str, Any]]:
    """Per study: items, target raters per item, item-ratings done vs needed (capped per item at the
    target), assignments by status, ratings stored (check items left out, as in the export; those of
    excluded raters also counted apart, with the raters), and completion time (mean, median seconds)."""
    ids = [s.pk for s in studies]
    targets = {s.pk: s.raters_per_item for s in studies}
    progress: dict[int, dict[str, Any]] = {
        pk: {"items": 0, "raters_per_item": targets[pk], "done": 0, "needed": 0, "percent": 0.0,
             "assignments": {status: 0 for status in Assignment.Status.values}, "ratings": 0,
             "excluded_ratings": 0, "excluded_raters": 0,
             "mean_seconds": None, "median_seconds": None}
        for pk in ids
    }
    for pk, n in Study.objects.filter(pk__in=ids).annotate(n=Count("items", filter=Q(items__check_kind=""))).values_list("pk", "n"):
        progress[pk]["items"] = n
        progress[pk]["needed"] = n * targets[pk]
    rows = np.array(
        list(AssignmentItem.objects.filter(assignment__study_id__in=ids, answered_at__isnull=False,
                                           assignment__status__in=DONE_STATUSES, item__check_kind="")
             .values("assignment__study_id", "item_id").annotate(n=Count("id"))
             .values_list("assignment__study_id", "n")),
        dtype=np.int64,
    ).reshape(-1, 2)
    for pk in ids:
        counts = rows[rows[:, 0] == pk, 1]
        progress[pk]["done"] = int(np.minimum(counts, targets[pk]).sum())
    for pk, status, n in (Assignment.objects.filter(study_id__in=ids).values("study_id", "status")
                          .annotate(n=Count("id")).values_list("study_id", "status", "n")):
        progress[pk]["assignments"][status] = n
    # Counted as the ratings export counts them: answers to check items are not ratings; those of raters a
    # reviewer excluded are (the export keeps them, marked) and are counted apart, since the report leaves them out.
    for pk, n, excluded in (Rating.objects.filter(assignment__study_id__in=ids, item__check_kind="")
                            .values("assignment__study_id")
                            .annotate(n=Count("id"), excluded=Count("id", filter=Q(assignment__excluded=True)))
                            .values_list("assignment__study_id", "n", "excluded")):
        progress[pk]["ratings"] = n
        progress[pk]["excluded_ratings"] = excluded
    for pk, n in (Assignment.objects.filter(study_id__in=ids, excluded=True).values("study_id")
                  .annotate(n=Count("id")).values_list("study_id", "n")):
        progress[pk]["excluded_raters"] = n
    for design in designs_of(list(studies)):  # judgments kept outside Rating (best-worst picks) count as ratings
        for pk, n in design.judgments_per_study([s.pk for s in studies if s.design == design.key]).items():
            progress[pk]["ratings"] += n
    times: dict[int, list[float]] = {}
    for pk, seconds in Assignment.objects.filter(study_id__in=ids, status__in=DONE_STATUSES,
                                                 total_seconds__isnull=False).values_list("study_id", "total_seconds"):
        times.setdefault(pk, []).append(seconds)
    for pk, entry in progress.items():
        if entry["needed"]:
            entry["percent"] = round(100.0 * entry["done"] / entry["needed"], 1)
        if times.get(pk):
            entry["mean_seconds"] = sum(times[pk]) / len(times[pk])
            entry["median_seconds"] = median(times[pk])
    return progress


def study_progress(study: Study) -> dict[str, Any]:
    """``studies_progress`` of one study, and the screens one rater gets (items + checks)."""
    from studies.rating.screens import screens_per_assignment

    return {**studies_progress([study])[study.pk], "screens": screens_per_assignment(study)}


def study_invites(study: Study, limit: int = 20) -> list[Invite]:
    """The study's most recent invitations, newest first (the study page lists them)."""
    return list(study.invites.order_by("-created_at", "-pk")[:limit])
