"""Metric tasks on the `gpu` queue (CPU workers take it too; an LLM judge's scoring run goes to `calls`).
Thin: ids in, services do the work. acks_late + reject_on_worker_lost: a worker that dies mid-run leaves
the message to be delivered again; the run's lease ends and ``scoring_runs_recover`` (the beat) queues it
again, and the service resumes from the scores already stored. A message that a killed worker had taken
but not started is sent again by the same task; a second message for a run a live worker holds is
dropped (``metrics.scoring.run_jobs``)."""
import logging

from celery import shared_task
from django.db import OperationalError

from metrics.models import MetricModel, RunStatus, ScoringRun, TrainingRun
from metrics.scoring import run_jobs, services
from studies import jobs
from studies.models import Study

OWNER_WAIT_SECONDS = 5
logger = logging.getLogger(__name__)


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, autoretry_for=(OperationalError,),
             retry_backoff=True, max_retries=3)
def scoring_run_execute(self, run_id: int) -> str:
    """Score under the run's lease (a Cancel stops it within a heartbeat); any other exception fails the run
    with its reason (a lost database connection is retried first). A judge run whose owner already runs
    their share of the calls worker waits, queued (``run_jobs.owner_at_limit``). A second message for a run
    that another live worker holds waits until that lease lapses, then takes it or finds the run finished
    (``run_jobs.scoring_run_lease_take``, ``run_jobs.scoring_run_lease_wait``)."""
    run = ScoringRun.objects.select_related("metric_model__metric").filter(pk=run_id).first()
    if run is None:
        return "missing"
    if run.status == RunStatus.QUEUED and run_jobs.owner_at_limit(run):
        run_jobs.scoring_run_waits(run_id=run_id)
        raise self.retry(countdown=OWNER_WAIT_SECONDS, max_retries=None)
    if not run_jobs.scoring_run_lease_take(run_id=run_id):
        wait = run_jobs.scoring_run_lease_wait(run_id=run_id)
        if wait is not None:  # unfinished, held by another worker: try again when its lease lapses
            raise self.retry(countdown=wait, max_retries=None)
        return "held"
    try:
        with jobs.Lease(ScoringRun, run_id, stop_statuses=(RunStatus.CANCELLED,)) as lease:
            status = services.scoring_run_execute(run=run, stop=lease.stopped).status
        if status == RunStatus.DONE and run.study_id:  # new scores: the human-vs-metric page's results, for its owner
            owner = Study.objects.filter(pk=run.study_id).values_list("experiment_id", "experiment__owner_id").first()
            if owner and owner[1]:
                try:
                    human_metric_summaries.delay(owner[0], run.metric_model_id, owner[1])
                except Exception:  # noqa: BLE001 - the scores are stored; the page queues it again when opened
                    logger.exception("human-vs-metric results after run %s not queued", run_id)
        return status
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


@shared_task(acks_late=True, reject_on_worker_lost=True, autoretry_for=(OperationalError,), retry_backoff=True,
             max_retries=3)
def human_metric_summaries(experiment_id: int, metric_model_id: int, user_id: int) -> str:
    """The human-vs-metric page's correlations, judges' ranking and baselines for this user, computed and
    stored for the ratings and scores in force (``selectors.human_metric_page_results``); queued after a
    scoring run and by a page that found none stored."""
    from django.contrib.auth import get_user_model

    from metrics.scoring import selectors
    from studies.models import Experiment

    experiment = Experiment.objects.filter(pk=experiment_id).first()
    metric_model = MetricModel.objects.select_related("metric").filter(pk=metric_model_id).first()
    user = get_user_model().objects.filter(pk=user_id).first()
    if experiment is None or metric_model is None or user is None:
        return "missing"
    selectors.human_metric_page_results(experiment, metric_model, user)
    return "stored"
