"""A scoring run's life as a background job, beside its scoring (``metrics.scoring.services``): which queue it goes
to, what ends it as failed, "Rerun", and finding runs whose worker died (docs/architecture.md, "Background
jobs").

- ``scoring_queue``: an LLM judge calls an outside endpoint, so its runs go to the ``calls`` queue; every
  other metric computes here, on ``gpu``.
- ``scoring_run_fail``: any exception of a run's task ends it as failed with the reason (the page and the
  API show ``error``), never "running" for ever.
- ``scoring_run_rerun``: a run that is not queued or running is queued again; it resumes (targets already
  scored are skipped, a judge's cached answers are not asked again), and missing ones are asked again.
- ``owner_at_limit``: a judge run waits (queued, its task retried in a few seconds) while its owner already
  has ``settings.JOB_CALLS_PER_OWNER`` judge runs running, so one researcher never holds every thread of
  the calls worker; ``scoring_run_waits`` marks such a run as looked after (``touched_at``);
- ``scoring_run_lease_take``: a worker starts a run only by taking its lease, so a second message for a run
  that another live worker holds is dropped and the run is scored once;
- ``scoring_runs_recover`` (the beat, every ``settings.JOB_RECOVER_SECONDS``): a running run whose lease ended
  (its worker was killed or lost: ``studies.jobs.Lease``) is queued again, or failed with the reason after
  ``settings.JOB_MAX_ATTEMPTS`` starts; a queued run that nobody touched for a lease is sent again."""
from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.db.models.functions import Now
from django.utils import timezone

from metrics.models import MetricModel, RunStatus, ScoringRun
from studies import jobs


def scoring_queue(metric_model: MetricModel) -> str:
    return "calls" if metric_model.metric.kind == "judge" else "gpu"


def scoring_run_queue(run: ScoringRun, *, robust: bool = False) -> None:
    """The run's task, on its queue, once the transaction commits."""
    jobs.queue_after_commit("metrics.tasks.scoring_run_execute", run.pk, queue=scoring_queue(run.metric_model),
                            robust=robust)


def owner_at_limit(run: ScoringRun) -> bool:
    """Whether the judge's owner already runs ``settings.JOB_CALLS_PER_OWNER`` judge runs under live leases."""
    owner = run.metric_model.owner_id
    if owner is None or scoring_queue(run.metric_model) != "calls":
        return False
    running = ScoringRun.objects.filter(status=RunStatus.RUNNING, metric_model__owner_id=owner,
                                        lease_until__gt=timezone.now()).exclude(pk=run.pk)
    return running.count() >= settings.JOB_CALLS_PER_OWNER


def scoring_run_waits(*, run_id: int) -> None:
    """A queued run's task is sent again later (its owner's share is in use): the row says it is still
    looked after, so ``scoring_runs_recover`` leaves it alone."""
    ScoringRun.objects.filter(pk=run_id, status=RunStatus.QUEUED).update(touched_at=Now())


def scoring_run_lease_take(*, run_id: int) -> bool:
    """Take the run's lease unless a live worker holds it (one conditional update, so of two messages for
    the same run only one starts it). False: the message is a duplicate (the recover task's, for a run
    that only waited long, or a redelivery while the lease of a worker just lost still runs); a run left
    queued by it is sent again by ``scoring_runs_recover``, a running one when its lease ends."""
    free = Q(lease_until__isnull=True) | Q(lease_until__lte=timezone.now())
    return bool(ScoringRun.objects.filter(free, pk=run_id).update(lease_until=jobs.lease_end()))


def scoring_run_lease_wait(*, run_id: int) -> float | None:
    """Seconds until the lease another worker holds on an unfinished run ends (at least 1), or None when the
    run is finished or gone: a duplicate message waits that long and tries again, so that a redelivery
    after its worker died resumes the run as soon as the lease lapses, and never two workers at once."""
    found = ScoringRun.objects.filter(pk=run_id, status__in=(RunStatus.QUEUED, RunStatus.RUNNING)).values_list(
        "lease_until", flat=True).first()
    if found is None:
        return None
    return max(1.0, (found - timezone.now()).total_seconds() + 1.0)


def _log(run: ScoringRun, line: str) -> str:
    return (run.log + "\n" + line).strip()


def scoring_run_fail(*, run_id: int, reason: str) -> None:
    """A queued or running run ends as failed with ``reason`` (a done or cancelled one is left as it is)."""
    with transaction.atomic():
        run = ScoringRun.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.status not in (RunStatus.QUEUED, RunStatus.RUNNING):
            return
        run.status, run.error, run.finished_at, run.lease_until = RunStatus.FAILED, reason, timezone.now(), None
        run.log = _log(run, f"attempt {run.attempts}: failed: {reason}")
        run.save(update_fields=["status", "error", "finished_at", "lease_until", "log"])


@transaction.atomic
def scoring_run_rerun(*, run: ScoringRun) -> ScoringRun:
    """Queue a failed, cancelled or done run again (ValidationError while it is queued or running)."""
    run = ScoringRun.objects.select_for_update().select_related("metric_model__metric").get(pk=run.pk)
    if run.status in (RunStatus.QUEUED, RunStatus.RUNNING):
        raise ValidationError({"run": f"this run is {run.status}; Cancel it first to run it again"})
    run.status, run.error, run.finished_at, run.touched_at = RunStatus.QUEUED, "", None, timezone.now()
    run.save(update_fields=["status", "error", "finished_at", "touched_at"])
    scoring_run_queue(run)
    return run


def scoring_runs_recover() -> dict[str, int]:
    """Runs whose worker stopped renewing their lease: queued again, or failed after their last start.
    Queued runs that no worker touched for ``settings.JOB_LEASE_SECONDS`` are sent again too: a worker killed
    outright holds the messages it had taken but not started (a waiting run's retry with its countdown)
    unacknowledged until the broker's visibility timeout (hours); a second message for a run that is only
    waiting in the queue is dropped by ``scoring_run_lease_take`` or finds nothing left to score."""
    counts = {"requeued": 0, "failed": 0}
    stale = timezone.now() - timedelta(seconds=settings.JOB_LEASE_SECONDS)
    for run_id in ScoringRun.objects.filter(status=RunStatus.QUEUED, touched_at__lt=stale).values_list("pk", flat=True):
        with transaction.atomic():
            run = (ScoringRun.objects.select_for_update().select_related("metric_model__metric")
                   .filter(pk=run_id, status=RunStatus.QUEUED, touched_at__lt=stale).first())
            if run is None:  # touched, started or ended meanwhile
                continue
            ScoringRun.objects.filter(pk=run.pk).update(touched_at=Now())
            scoring_run_queue(run, robust=True)
            counts["requeued"] += 1
    expired = ScoringRun.objects.filter(status=RunStatus.RUNNING, lease_until__lt=timezone.now())
    for run_id in expired.values_list("pk", flat=True):
        with transaction.atomic():
            run = (ScoringRun.objects.select_for_update().select_related("metric_model__metric")
                   .filter(pk=run_id, status=RunStatus.RUNNING, lease_until__lt=timezone.now()).first())
            if run is None:  # renewed or ended meanwhile
                continue
            if run.attempts >= settings.JOB_MAX_ATTEMPTS:
                reason = (f"its worker stopped (killed, out of memory or restarted) during each of {run.attempts} "
                          "starts; Rerun continues from the stored scores")
                ScoringRun.objects.filter(pk=run.pk).update(status=RunStatus.FAILED, error=reason, finished_at=Now(),
                                                            lease_until=None, log=_log(run, f"failed: {reason}"))
                counts["failed"] += 1
                continue
            ScoringRun.objects.filter(pk=run.pk).update(
                status=RunStatus.QUEUED, lease_until=None, touched_at=Now(),
                log=_log(run, f"attempt {run.attempts}: its worker stopped renewing its lease; queued again"))
            scoring_run_queue(run, robust=True)
            counts["requeued"] += 1
    return counts
