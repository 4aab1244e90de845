"""Reads on the rater's path: whether a study has room (the criteria and response texts every item page
reads are cached in ``studies.designs.rater_reads``)."""
from __future__ import annotations

from django.db.models import Count

from studies.models import Assignment, AssignmentItem, Study


def study_item_takes(study: Study) -> dict[int, int]:
    """item id -> assignments holding it that still count towards its target (not abandoned or rejected)."""
    return dict(
        AssignmentItem.objects.filter(assignment__study=study)
        .exclude(assignment__status__in=[Assignment.Status.ABANDONED, Assignment.Status.REJECTED])
        .values("item").annotate(n=Count("id")).values_list("item", "n")
    )


def study_has_room(study: Study) -> bool:
    """True while some item of the study is below its target number of raters."""
    takes = study_item_takes(study)
    return any(takes.get(pk, 0) < study.raters_per_item
               for pk in study.items.filter(check_kind="").values_list("pk", flat=True))
