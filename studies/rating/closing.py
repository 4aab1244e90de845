"""A study's closing: by the researcher, or by itself once it is done (its closing time has passed,
or every item has its raters). The rater's path closes a study as it goes (a submission, an arrival),
the periodic task closes the rest; the rules are ``studies.rating.allocation.study_close_reason``."""
from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from studies.errors import StudyStateError
from studies.models import Study
from studies.rating import allocation

logger = logging.getLogger(__name__)


@transaction.atomic
def study_close(*, study: Study) -> Study:
    """published -> closed: no new assignments; started ones may still be submitted."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    if study.status != Study.Status.PUBLISHED:
        raise StudyStateError(f"cannot close: the study is {study.status}")
    study.status, study.closed_at = Study.Status.CLOSED, timezone.now()
    study.save(update_fields=["status", "closed_at"])
    return study


def study_close_if_done(*, study: Study, now=None, check_items: bool = True) -> str | None:
    """Close a published study that is done: its closing time (``platform_config.closes_at``) has
    passed, or every item has its ``raters_per_item`` submitted assignments. Returns why it closed,
    or None (left as it is). Called when an assignment is submitted, when a rater arrives, and by
    the periodic task ``studies.tasks.studies_close_due``. The row is locked only when the
    unlocked read says the study is done. ``check_items=False`` checks the closing time only (no
    query: what a rater's entry asks, since item counts change only at a submission)."""
    if allocation.study_close_reason(study, now=now, check_items=check_items) is None:
        return None
    with transaction.atomic():
        locked = Study.objects.select_for_update().get(pk=study.pk)
        reason = allocation.study_close_reason(locked, now=now, check_items=check_items)
        if reason is None:
            return None
        locked.status, locked.closed_at = Study.Status.CLOSED, now or timezone.now()
        locked.save(update_fields=["status", "closed_at"])
    study.status, study.closed_at = locked.status, locked.closed_at
    logger.info("study %s closed: %s", study.slug, reason)
    return reason


def studies_close_due(*, now=None) -> int:
    """Close every published study that is done (see study_close_if_done); one transaction per
    study. Returns how many closed."""
    now = now or timezone.now()
    candidates = Study.objects.filter(status=Study.Status.PUBLISHED).exclude(platform=Study.Platform.BENCHMARK)
    return sum(study_close_if_done(study=study, now=now) is not None for study in candidates)
