"""Metric tasks on the `gpu` queue (CPU workers take it too; an LLM judge's scoring run goes to `calls`).
Thin: ids in, services do the work. acks_late + reject_on_worker_lost: a worker that dies mid-run leaves
the message to be delivered again, and the service resumes from the scores already stored; before that,
the run's lease ends and ``scoring_runs_recover`` (the beat) queues it again (``metrics.scoring.run_jobs``)."""
from celery import shared_task
from django.db import OperationalError

from metrics.models import MetricModel, RunStatus, ScoringRun, TrainingRun
from metrics.scoring import run_jobs, services
from studies import jobs

OWNER_WAIT_SECONDS = 5


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, autoretry_for=(OperationalError,),
             retry_backoff=True, max_retries=3)
def scoring_run_execute(self, run_id: int) -> str:
    """Score under the run's lease (a Cancel stops it within a heartbeat); any other exception fails the run
    with its reason (a lost database connection is retried first). A judge run whose owner already runs
    their share of the calls worker waits, queued (``run_jobs.owner_at_limit``)."""
    run = ScoringRun.objects.select_related("metric_model__metric").filter(pk=run_id).first()
    if run is None:
        return "missing"
    if run.status == RunStatus.QUEUED and run_jobs.owner_at_limit(run):
        raise self.retry(countdown=OWNER_WAIT_SECONDS, max_retries=None)
    try:
        with jobs.Lease(ScoringRun, run_id, stop_statuses=(RunStatus.CANCELLED,)) as lease:
            return services.scoring_run_execute(run=run, stop=lease.stopped).status
    except OperationalError:
        raise
    except Exception as error:  # noqa: BLE001 - whatever it is, the run ends with its reason
        run_jobs.scoring_run_fail(run_id=run_id, reason=jobs.failure_text(error))
        return RunStatus.FAILED


@shared_task(acks_late=True, reject_on_worker_lost=True)
def scoring_runs_recover() -> dict:
    """On the beat schedule: runs whose worker died, queued again or failed with the reason."""
    return run_jobs.scoring_runs_recover()


@shared_task(acks_late=True, reject_on_worker_lost=True, autoretry_for=(OperationalError,), retry_backoff=True,
             max_retries=3)
def training_run_execute(run_id: int) -> str:
    """Train; a model it registers then gets its card (``model_card_build``, queued after this task)."""
    from metrics.training import services as training

    run = training.training_run_execute(run=TrainingRun.objects.get(pk=run_id))
    if run.result_id:
        model_card_build.delay(run.result_id)
    return run.status


@shared_task(acks_late=True, reject_on_worker_lost=True, autoretry_for=(OperationalError,), retry_backoff=True,
             max_retries=3)
def model_card_build(model_id: int) -> str:
    from metrics.benchmarking.model_cards import model_card_build as build

    return build(model=MetricModel.objects.get(pk=model_id)).card.get("status", "")


@shared_task(acks_late=True, reject_on_worker_lost=True, autoretry_for=(OperationalError,), retry_backoff=True,
             max_retries=3)
def training_recipe_execute(metric: str, name: str, recipe: str, overrides: dict) -> str:
    """A whole recipe on one worker, stage after stage (a redelivered task resumes the stage that stopped)."""
    from metrics.training import recipes

    runs = recipes.recipe_run(metric=metric, name=name, recipe=recipe, overrides=overrides, log=lambda line: None)
    for run in runs:
        if run.result_id:
            model_card_build.delay(run.result_id)
    return runs[-1].status if runs else "done"
