"""Celery tasks: thin; ids in, services do the work. ``crowd_sync_all`` runs on the beat schedule
(config.settings.base.CELERY_BEAT_SCHEDULE)."""
import logging

from celery import shared_task

from crowd import sync
from crowd.errors import PlatformError
from crowd.models import Publication
from crowd.platforms import mturk, mturk_practice
from studies.rating import review

log = logging.getLogger(__name__)


@shared_task(acks_late=True, reject_on_worker_lost=True)
def publication_sync(publication_id: int) -> str:
    summary = sync.publication_sync(publication=Publication.objects.select_related("study").get(pk=publication_id))
    return str(summary)


@shared_task(acks_late=True, reject_on_worker_lost=True)
def crowd_sync_all() -> dict:
    """Abandon assignments past their study's time limit, then sync every live publication (a
    failing platform is logged and recorded on its publication; the others still sync)."""
    expired = review.assignments_expire_stale()
    synced, failed = 0, 0
    live = Publication.objects.exclude(status=Publication.Status.DRAFT).exclude(external_id="").select_related("study")
    for publication in live:
        try:
            sync.publication_sync(publication=publication)
            synced += 1
        except PlatformError as error:
            failed += 1
            log.warning("crowd sync of %s failed: %s", publication, error)
    return {"expired": expired, "synced": synced, "failed": failed}


@shared_task(acks_late=True, reject_on_worker_lost=True)
def crowd_qualifications_grant() -> int:
    """Every minute: the experiment's qualification for workers who just started a condition."""
    try:
        granted = mturk.qualifications_grant_new()
    except PlatformError as error:
        log.warning("granting experiment qualifications failed: %s", error)
        granted = 0
    try:  # passes of the practice whose own task (crowd_practice_grant) did not get through
        return granted + mturk_practice.practice_qualifications_grant()
    except PlatformError as error:
        log.warning("granting practice qualifications failed: %s", error)
        return granted


@shared_task(acks_late=True, reject_on_worker_lost=True)
def crowd_practice_grant(experiment_id: int) -> int:
    """A worker passed an experiment's practice: its MTurk qualification, now (the beat retries)."""
    try:
        return mturk_practice.practice_qualifications_grant(experiment_id=experiment_id)
    except PlatformError as error:
        log.warning("granting the practice qualification of experiment %s failed: %s", experiment_id, error)
        return 0
