"""QuantiDCE's and SelF-Eval's stages as TrainingRuns: one ``ml.trainers`` module per metric (its
``Trainable.trainer``) trains every stage from a ``TrainingConfig``; the stage's default data sets are
the metric's ``Trainable.data`` under the shared data directory. The runner named in both metrics'
``Trainable`` (``metrics.implementations``); ``metrics.training.services`` creates, claims and cancels the runs."""
from __future__ import annotations

import importlib
import time
from collections.abc import Sequence
from pathlib import Path

from django.conf import settings
from django.db.models.functions import Now

from metrics import registry
from metrics.models import RunStatus, TrainingRun
from ml.trainers import Callback, TrainingConfig
from ml.trainers.callbacks import best_summary

NEEDS_INIT = {"kd": "KD fine-tuning starts from a stage-1 (MLR) model",
              "fine": "the fine stage starts from a coarse-stage SelF-Eval model"}


def configure(*, metric: str, stage: str, **settings_given) -> TrainingConfig:
    """A full, validated configuration: stage defaults, the shared data sets where none is given."""
    spec = registry.trainable(metric)
    if stage not in spec.stages:
        raise ValueError(f"stage: {metric} trains in stages {', '.join(spec.stages)}, not {stage!r}")
    config = TrainingConfig.for_stage(stage, metric=metric, **settings_given)
    train, validation = spec.data.get(stage, ("", ""))
    if metric == "self_eval":  # any imported corpus as the dialogue source: --train corpus:SLUG
        from metrics.training.sources import resolve

        config.train_data, config.validation_data = resolve(config.train_data), resolve(config.validation_data)
    if not config.train_data and train:
        config.train_data = str(Path(settings.SHARED_DATA_DIR) / train)
        if not config.validation_data and validation:
            config.validation_data = str(Path(settings.SHARED_DATA_DIR) / validation)
    for field in ("train_data", "validation_data"):
        value = getattr(config, field)
        if value and not Path(value).is_file():
            raise ValueError(f"{field}: no file {value}")
    if stage in NEEDS_INIT and not config.init_from:
        raise ValueError(f"init_from: {NEEDS_INIT[stage]}")
    if config.init_from and not (Path(config.init_from) / "head.pt").is_file():
        name = registry.implementation_class(metric).name.split(" (")[0]
        raise ValueError(f"init_from: {config.init_from} is not a saved {name} model")
    return config


def execute(*, run: TrainingRun, callbacks: Sequence[Callback] = ()) -> TrainingRun:
    """Train (resuming from the latest checkpoint), then register the best model. The run is claimed."""
    from metrics.training.services import TrainingRunProgress, metric_model_register_trained, training_run_fail
    from ml.devices import pick_device

    settings_given = dict(run.config)
    name = settings_given.pop("model_name")
    config = TrainingConfig(**settings_given)
    build = importlib.import_module(registry.trainable(config.metric).trainer).build
    device = str(pick_device(config.device))
    TrainingRun.objects.filter(pk=run.pk).update(device=device)
    started = time.monotonic()
    try:
        trainer = build(config, [TrainingRunProgress(run), *callbacks])
        state = trainer.train(resume=True)
    except Exception as error:  # recorded on the run for the UI; the worker carries on
        return training_run_fail(run=run, error=error)
    if TrainingRun.objects.filter(pk=run.pk, status=RunStatus.CANCELLED).exists():
        run.refresh_from_db()
        return run
    best = Path(config.output_dir) / "best"
    model = metric_model_register_trained(metric=run.metric, name=name, directory=best, config=config, state=state)
    log = (f"attempt {run.attempts}: {state.step} steps on {device} in {time.monotonic() - started:.0f} s; "
           f"{best_summary(state, config.select_by)}")
    TrainingRun.objects.filter(pk=run.pk).update(status=RunStatus.DONE, done=state.step, total=state.total_steps,
                                                 losses=state.history, result=model, finished_at=Now(),
                                                 log=f"{run.log}\n{log}".strip())
    run.refresh_from_db()
    return run


def trainer_estimate(build, config, *, standin: Path) -> tuple[float, str, str]:
    """Build a stage's trainer on its real data, time two optimizer steps on this device, and extrapolate to
    the stage's steps and validations: (seconds, what was measured, a stand-in model directory the next stage
    can start from)."""
    import math

    started = time.monotonic()
    trainer = build(config, [])
    setup = time.monotonic() - started
    per_step = trainer.time_steps(2)
    validations = config.epochs if not config.eval_every else max(1, trainer.state.total_steps // config.eval_every)
    batches = math.ceil(len(trainer.validation_set) / config.batch_size)
    # a validation batch runs forward only: about a third of a training step
    seconds = setup + per_step * trainer.state.total_steps + validations * batches * per_step / 3
    trainer.save_best(trainer.model, standin)
    note = (f"setup {setup:.0f} s, {per_step:.2f} s a step × {trainer.state.total_steps} steps, "
            f"{validations} validations of {batches} batches")
    return seconds, note, str(standin)


def estimate(*, metric: str, stage: str, directory: Path, **settings_given) -> tuple[float, str, str]:
    """The expected seconds of a stage on the device it would run on (``trainer_estimate``)."""
    config = configure(metric=metric, stage=stage, **settings_given)
    config.output_dir, config.checkpoint_every = str(directory / stage), 0
    build = importlib.import_module(registry.trainable(metric).trainer).build
    return trainer_estimate(build, config, standin=directory / f"{stage}-standin")
