"""The batched, resumable loop every scoring run shares, whatever it scores (responses at turn level,
conversations at dialogue level): only targets without a score are scored, in batches; each batch is
one insert that ignores conflicts (a target scored meanwhile by another worker or a retry keeps one
score); progress is written at most once a second, when the run is also checked for cancellation."""
from __future__ import annotations

import time
from collections.abc import Callable

from django.db.models import QuerySet
from django.db.models.functions import Now

from metrics.models import MetricScore, RunStatus, ScoringRun

PROGRESS_EVERY_S = 1.0


def scoring_run_batches(*, run: ScoringRun, device: str, targets: QuerySet, unscored: QuerySet,
                        scores_of: Callable[[list[int]], list[MetricScore]], batch: int, noun: str = "",
                        notes: Callable[[], str] = str, on_progress: Callable[[int, int], None] | None = None,
                        prepare: Callable[[list[int]], None] | None = None) -> ScoringRun:
    """Score ``unscored`` (ids of ``targets``) ``batch`` at a time with ``scores_of(ids)`` (unsaved
    MetricScore rows); a forced run's first attempt deletes the targets' old scores first. The run is
    already claimed (RUNNING, attempts counted). ``noun`` names the targets in the log ("" or
    " conversations"); ``notes()`` adds what the implementation has to say after the last batch.
    ``prepare(ids)``, once before the batches, with every target still to score: what the whole run needs
    computed ahead (an embedding metric embeds each distinct text once, as ``benchmark_metric`` does)."""
    if run.force and run.attempts == 1:
        field = targets.model._meta.model_name  # "response" or "conversation": MetricScore's target field
        MetricScore.objects.filter(metric_model=run.metric_model, **{f"{field}__in": targets}).delete()
    total = targets.count()
    pending = list(unscored.order_by("pk").values_list("pk", flat=True))
    done = total - len(pending)
    ScoringRun.objects.filter(pk=run.pk).update(total=total, done=done, device=device, progress_at=Now())
    started, last_progress = time.monotonic(), 0.0
    if prepare is not None and pending:
        prepare(pending)
    for offset in range(0, len(pending), batch):
        rows = scores_of(pending[offset:offset + batch])
        MetricScore.objects.bulk_create(rows, ignore_conflicts=True)
        done += len(rows)
        if on_progress:
            on_progress(done, total)
        now = time.monotonic()
        if now - last_progress >= PROGRESS_EVERY_S or offset + batch >= len(pending):
            last_progress = now
            ScoringRun.objects.filter(pk=run.pk).update(done=done, progress_at=Now())
            if ScoringRun.objects.filter(pk=run.pk, status=RunStatus.CANCELLED).exists():
                run.refresh_from_db()
                return run
    log = attempt_log(attempt=run.attempts, total=total, tried=len(pending), stored=len(pending) - unscored.count(),
                      noun=noun, device=device) + notes()
    ScoringRun.objects.filter(pk=run.pk, status=RunStatus.RUNNING).update(
        status=RunStatus.DONE, done=done, finished_at=Now(), seconds=time.monotonic() - started,
        log=(run.log + "\n" + log).strip())
    run.refresh_from_db()
    return run


def attempt_log(*, attempt: int, total: int, tried: int, stored: int, noun: str, device: str) -> str:
    """One attempt's line: what was stored this time (not what was tried), what had a score already, and
    what was tried and got none. A failed call is not cached, so the next run of the same scope asks it
    again; a refusal or unparseable answer is cached and stays missing (``metrics.judging.run``)."""
    line = f"attempt {attempt}: scored {stored} of {total}{noun} this time on {device}; {total - tried} had a score already"
    if tried > stored:
        line += (f"; {tried - stored} tried got no score: a retry of the run asks only those again (failed calls are "
                 "not cached; answers cached as refused or unparseable stay missing)")
    return line
