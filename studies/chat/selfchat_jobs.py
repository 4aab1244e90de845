"""A self-chat run's life as a background job, beside the making of its dialogues (``studies.chat.selfchat``):
started under a lease, failed with the reason on any exception, found again when its worker died
(docs/architecture.md, "Background jobs").

- ``selfchat_run_job``: what the task runs: the start counted (``attempts``), the dialogues made under the
  run's lease (``studies.jobs.Lease``), and any exception ending the run as failed with its reason.
- ``selfchat_owner_at_limit``: a run waits (queued, its task retried in a few seconds) while its owner
  already has ``settings.JOB_CALLS_PER_OWNER`` self-chats running, so one researcher never holds every
  thread of the calls worker;
- ``selfchat_runs_recover`` (the beat, every minute): a running run whose lease ended (its worker was killed
  or lost) is queued again, continuing from the stored turns (finished dialogues are not made again), or
  failed with the reason after ``settings.JOB_MAX_ATTEMPTS`` starts; "Run again" continues it then."""
from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import OperationalError, transaction
from django.db.models import F
from django.utils import timezone

from studies import jobs
from studies.chat import selfchat
from studies.models import SelfChatRun

log = logging.getLogger(__name__)


def selfchat_run_fail(*, run_id: int, reason: str) -> None:
    """A queued or running run ends as failed with ``reason``."""
    SelfChatRun.objects.filter(pk=run_id, status__in=[SelfChatRun.Status.QUEUED, SelfChatRun.Status.RUNNING]).update(
        status=SelfChatRun.Status.FAILED, error=reason, lease_until=None, updated_at=timezone.now())


def selfchat_owner_at_limit(*, run_id: int) -> bool:
    """Whether this queued run's owner already runs ``settings.JOB_CALLS_PER_OWNER`` self-chats under live leases."""
    run = SelfChatRun.objects.filter(pk=run_id, status=SelfChatRun.Status.QUEUED).first()
    if run is None:
        return False
    running = SelfChatRun.objects.filter(owner_id=run.owner_id, status=SelfChatRun.Status.RUNNING,
                                         lease_until__gt=timezone.now()).exclude(pk=run_id)
    return running.count() >= settings.JOB_CALLS_PER_OWNER


def selfchat_run_job(*, run_id: int) -> str:
    """Make the run's dialogues under its lease; any exception fails the run with its reason. A second
    message for a run that a live worker holds (the recover task's, for a run that only waited long) is
    dropped."""
    if SelfChatRun.objects.filter(pk=run_id, status=SelfChatRun.Status.RUNNING,
                                  lease_until__gt=timezone.now()).exists():
        return "held"
    if not SelfChatRun.objects.filter(pk=run_id).update(attempts=F("attempts") + 1):
        return "missing"
    try:
        with jobs.Lease(SelfChatRun, run_id):
            return selfchat.selfchat_run(run=SelfChatRun.objects.get(pk=run_id)).status
    except OperationalError:  # the database is gone: nothing can be recorded; the lease ends, the beat retries
        raise
    except Exception as error:  # noqa: BLE001 - whatever it is, the run ends with its reason
        log.exception("self-chat run %s failed", run_id)
        selfchat_run_fail(run_id=run_id, reason=jobs.failure_text(error))
        return SelfChatRun.Status.FAILED


def selfchat_run_waits(*, run_id: int) -> None:
    """A queued run's task is sent again later (its owner's share is in use): the row says it is still
    looked after, so ``selfchat_runs_recover`` leaves it alone."""
    SelfChatRun.objects.filter(pk=run_id, status=SelfChatRun.Status.QUEUED).update(updated_at=timezone.now())


def selfchat_runs_recover() -> dict[str, int]:
    """Runs whose worker stopped renewing their lease: queued again, or failed after their last start.
    Queued runs that no worker touched for ``settings.JOB_LEASE_SECONDS`` are sent again too: a worker
    killed outright holds the messages it had taken but not started (a waiting run's retry with its
    countdown) unacknowledged until the broker's visibility timeout (hours); a second message for a run
    that is only waiting in the queue is dropped by ``selfchat_run_job`` or finds nothing left to make."""
    counts = {"requeued": 0, "failed": 0}
    stale = timezone.now() - timedelta(seconds=settings.JOB_LEASE_SECONDS)
    for run_id in SelfChatRun.objects.filter(status=SelfChatRun.Status.QUEUED, updated_at__lt=stale) \
            .values_list("pk", flat=True):
        with transaction.atomic():
            if SelfChatRun.objects.filter(pk=run_id, status=SelfChatRun.Status.QUEUED, updated_at__lt=stale) \
                    .update(updated_at=timezone.now()):
                jobs.queue_after_commit("studies.tasks.selfchat_run", run_id, robust=True)
                counts["requeued"] += 1
    expired = SelfChatRun.objects.filter(status=SelfChatRun.Status.RUNNING, lease_until__lt=timezone.now())
    for run_id in expired.values_list("pk", flat=True):
        with transaction.atomic():
            run = SelfChatRun.objects.select_for_update().filter(
                pk=run_id, status=SelfChatRun.Status.RUNNING, lease_until__lt=timezone.now()).first()
            if run is None:  # renewed or ended meanwhile
                continue
            if run.attempts >= settings.JOB_MAX_ATTEMPTS:
                run.status, run.lease_until = SelfChatRun.Status.FAILED, None
                run.error = (f"its worker stopped (killed, out of memory or restarted) during each of {run.attempts} "
                             "starts; run it again to continue from the stored turns")
                run.save(update_fields=["status", "error", "lease_until", "updated_at"])
                counts["failed"] += 1
                continue
            run.status, run.lease_until = SelfChatRun.Status.QUEUED, None
            run.save(update_fields=["status", "lease_until", "updated_at"])
            jobs.queue_after_commit("studies.tasks.selfchat_run", run.pk, robust=True)
            counts["requeued"] += 1
    return counts
