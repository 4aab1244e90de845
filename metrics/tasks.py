"""Metric tasks on the `gpu` queue (CPU workers take it too). Thin: ids in, services do the work.
acks_late + reject_on_worker_lost: a worker that dies mid-run leaves the message to be delivered
again, and the service resumes from the scores already stored."""
from celery import shared_task
from django.db import OperationalError

from metrics import services
from metrics.models import MetricModel, ScoringRun, TrainingRun


@shared_task(acks_late=True, reject_on_worker_lost=True, autoretry_for=(OperationalError,), retry_backoff=True,
             max_retries=3)
def scoring_run_execute(run_id: int) -> str:
    return services.scoring_run_execute(run=ScoringRun.objects.get(pk=run_id)).status


@shared_task(acks_late=True, reject_on_worker_lost=True, autoretry_for=(OperationalError,), retry_backoff=True,
             max_retries=3)
def training_run_execute(run_id: int) -> str:
    """Train; a model it registers then gets its card (``model_card_build``, queued after this task)."""
    from metrics import training

    run = training.training_run_execute(run=TrainingRun.objects.get(pk=run_id))
    if run.result_id:
        model_card_build.delay(run.result_id)
    return run.status


@shared_task(acks_late=True, reject_on_worker_lost=True, autoretry_for=(OperationalError,), retry_backoff=True,
             max_retries=3)
def model_card_build(model_id: int) -> str:
    from metrics.model_cards import model_card_build as build

    return build(model=MetricModel.objects.get(pk=model_id)).card.get("status", "")


@shared_task(acks_late=True, reject_on_worker_lost=True, autoretry_for=(OperationalError,), retry_backoff=True,
             max_retries=3)
def training_recipe_execute(metric: str, name: str, recipe: str, overrides: dict) -> str:
    """A whole recipe on one worker, stage after stage (a redelivered task resumes the stage that stopped)."""
    from metrics import recipes

    runs = recipes.recipe_run(metric=metric, name=name, recipe=recipe, overrides=overrides, log=lambda line: None)
    for run in runs:
        if run.result_id:
            model_card_build.delay(run.result_id)
    return runs[-1].status if runs else "done"
