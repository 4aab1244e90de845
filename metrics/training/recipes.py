"""One command per metric: a recipe (``Trainable.recipes``, declared with the metric) runs its stages one
after another, each an ordinary TrainingRun (resumable, shown with its progress in the metrics page),
each stage starting from the model (or augmented data set) an earlier stage made.

Names: the last stage registers NAME, an earlier one NAME-STAGE (``q``: ``q``; ``m``: ``m-teacher``,
``m-augment``, ``m``). A stage whose model or data set exists already is reused, and one whose run
stopped (worker died, cancelled, failed) is resumed from its last checkpoint, so running the same
command again finishes a recipe instead of starting it over."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from metrics import registry
from metrics.implementations.base import Recipe, RecipeStep
from metrics.models import MetricModel, RunStatus, TrainingDataset, TrainingRun
from ml.trainers import Callback

SHARED = "shared:"


@dataclass(frozen=True)
class PlannedStep:
    step: RecipeStep
    name: str  # the model (or data set) it registers
    settings: dict  # the step's settings with the recipe's overrides and what it starts from


def shared_path(value):
    """A recipe's ``shared:<path>`` setting: that file under the shared data directory."""
    from django.conf import settings

    if isinstance(value, str) and value.startswith(SHARED):
        return str(Path(settings.SHARED_DATA_DIR) / value[len(SHARED):])
    return value


def recipe_get(*, metric: str, recipe: str) -> Recipe:
    recipes = registry.trainable(metric).recipes
    if recipe not in recipes:
        raise ValueError(f"recipe: {metric} has recipes {', '.join(recipes)}, not {recipe!r}")
    return recipes[recipe]


def recipe_plan(*, metric: str, recipe: str, name: str, overrides: dict | None = None) -> list[PlannedStep]:
    """The stages of a recipe with their names and settings; ``overrides`` (the command's options) apply to
    every stage."""
    steps = recipe_get(metric=metric, recipe=recipe).steps
    names = {step.stage: (name if i == len(steps) - 1 else f"{name}-{step.stage}") for i, step in enumerate(steps)}
    planned = []
    for step in steps:
        settings = {key: shared_path(value) for key, value in {**step.settings, **(overrides or {})}.items()}
        if step.init_from:
            settings["init_from"] = names[step.init_from]
        if step.dataset:
            settings["train_data"] = names[step.dataset]
        planned.append(PlannedStep(step, names[step.stage], settings))
    return planned


def _made(name: str) -> bool:
    return MetricModel.objects.filter(name=name).exists() or TrainingDataset.objects.filter(name=name).exists()


def recipe_run(*, metric: str, name: str, recipe: str = "default", overrides: dict | None = None,
               callbacks: Sequence[Callback] = (), log: Callable[[str], None] = print) -> list[TrainingRun]:
    """Run (or finish) every stage of a recipe here; returns the stages' runs. A stage that fails stops the
    recipe with ValueError naming it (its run keeps the log and its checkpoints)."""
    from metrics.training import services as training

    plan = recipe_plan(metric=metric, recipe=recipe, name=name, overrides=overrides)
    if not plan:
        raise ValueError(f"recipe: {metric}'s {recipe!r} recipe has no stage")
    runs = []
    for number, planned in enumerate(plan, start=1):
        head = f"[{number}/{len(plan)}] {metric} {planned.step.stage} -> {planned.name}"
        if _made(planned.name):
            log(f"{head}: made already, reused")
            continue
        run = (TrainingRun.objects.filter(metric__key=metric, config__model_name=planned.name)
               .exclude(status=RunStatus.DONE).order_by("-pk").first())
        if run is not None:
            log(f"{head}: resuming run {run.pk} from its last checkpoint")
            TrainingRun.objects.filter(pk=run.pk).update(status=RunStatus.QUEUED, finished_at=None)
        else:
            run = training.training_run_create(metric=metric, stage=planned.step.stage, model_name=planned.name,
                                               enqueue=False, **planned.settings)
            log(f"{head}: run {run.pk}")
        run = training.training_run_execute(run=run, callbacks=callbacks)
        runs.append(run)
        if run.status != RunStatus.DONE:
            raise ValueError(f"recipe: stage {planned.step.stage} (run {run.pk}) {run.status}: "
                             f"{run.log.splitlines()[-1] if run.log else ''}")
        log(f"{head}: {run.log.splitlines()[-1] if run.log else 'done'}")
    return runs


def recipe_estimate(*, metric: str, recipe: str, overrides: dict | None = None,
                    log: Callable[[str], None] = print) -> float:
    """Expected seconds of a recipe on the device its stages would use: each stage's trainer is built on its
    real data and timed for two steps (``Trainable.runner.estimate``); a stage that starts from an earlier one
    starts from a stand-in of it. Nothing is registered; the scratch directory is removed."""
    import importlib
    import shutil
    import tempfile

    runner = importlib.import_module(registry.trainable(metric).runner)
    plan = recipe_plan(metric=metric, recipe=recipe, name="estimate", overrides=overrides)
    made: dict[str, str] = {}
    total = 0.0
    directory = Path(tempfile.mkdtemp(prefix="concord-estimate-"))
    try:
        for planned in plan:
            settings = dict(planned.settings)
            if planned.step.init_from:
                settings["init_from"] = made[planned.step.init_from]
            if planned.step.dataset:
                settings["train_data"] = made[planned.step.dataset]
            seconds, note, made[planned.step.stage] = runner.estimate(metric=metric, stage=planned.step.stage,
                                                                      directory=directory, **settings)
            total += seconds
            log(f"  {planned.step.stage}: about {seconds / 60:.0f} min ({note})")
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return total
