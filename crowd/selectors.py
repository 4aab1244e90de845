"""Reads of the crowd app: who may manage a study's platforms, and the rater dashboard (Concord's
status next to the platform's)."""
from __future__ import annotations

from collections import Counter
from typing import Any

from django.db.models import Count, Q, QuerySet

from crowd.models import Bonus, Publication, WorkerAssignment
from studies.models import Assignment, Study


def studies_managed_by(user) -> QuerySet[Study]:
    """Studies whose crowd publications the user may operate (they spend money): staff, or the
    experiment's owner. Collaborators see the study but not this."""
    if not user.is_authenticated:
        return Study.objects.none()
    studies = Study.objects.select_related("experiment")
    return studies if user.is_staff else studies.filter(experiment__owner=user)


def publications_of(study: Study) -> list[Publication]:
    return list(study.crowd_publications.prefetch_related("hits").order_by("platform", "-sandbox"))


def dashboard(study: Study) -> dict[str, Any]:
    """One row per Concord assignment (rater, Concord status, items answered, times) with the
    platform's state beside it, plus platform assignments Concord has no assignment for; and counts
    of who is working, finished, returned/abandoned."""
    assignments = (Assignment.objects.filter(study=study).select_related("rater")
                   .annotate(answered=Count("assignment_items", filter=Q(assignment_items__answered_at__isnull=False)),
                             total=Count("assignment_items"))
                   .order_by("-started_at"))
    records = list(WorkerAssignment.objects.filter(publication__study=study)
                   .select_related("publication").order_by("synced_at"))
    by_assignment = {r.assignment_id: r for r in records if r.assignment_id}
    bonuses: dict[int, list[Bonus]] = {}
    for bonus in Bonus.objects.filter(assignment__study=study):
        bonuses.setdefault(bonus.assignment_id, []).append(bonus)
    rows = []
    for a in assignments:
        record = by_assignment.get(a.pk)
        rows.append({"assignment": a, "rater": a.rater, "status": a.status, "answered": a.answered, "total": a.total,
                     "record": record, "platform_state": record.get_state_display() if record else "",
                     "checks": (f"{a.checks_passed}/{a.checks_shown}" if a.checks_shown else ""),
                     "suggested_rejection": a.checks_failed and a.status == Assignment.Status.SUBMITTED,
                     "bonuses": bonuses.get(a.pk, [])})
    orphans = [r for r in records if r.assignment_id is None]
    counts = Counter(a.status for a in assignments)
    return {
        "rows": rows, "orphans": orphans,
        "working": counts[Assignment.Status.STARTED],
        "finished": counts[Assignment.Status.SUBMITTED] + counts[Assignment.Status.APPROVED],
        "returned": counts[Assignment.Status.ABANDONED],
        "rejected": counts[Assignment.Status.REJECTED],
        "failed_checks": sum(1 for a in assignments if a.checks_failed and a.status == Assignment.Status.SUBMITTED),
        "platform_states": dict(Counter(r.state for r in records)),
        "checks": study.items.filter(check_kind__gt="").exists(),
        "submitted_on_platform": sum(1 for r in records if r.state == WorkerAssignment.State.SUBMITTED),
    }
