"""Metric tasks on the `gpu` queue (CPU workers take it too). Thin: ids in, services do the work.
acks_late + reject_on_worker_lost: a worker that dies mid-run leaves the message to be delivered
again, and the service resumes from the scores already stored."""
from celery import shared_task
from django.db import OperationalError

from metrics import services
from metrics.models import ScoringRun, TrainingRun


@shared_task(acks_late=True, reject_on_worker_lost=True, autoretry_for=(OperationalError,), retry_backoff=True,
             max_retries=3)
def scoring_run_execute(run_id: int) -> str:
    return services.scoring_run_execute(run=ScoringRun.objects.get(pk=run_id)).status


@shared_task(acks_late=True, reject_on_worker_lost=True, autoretry_for=(OperationalError,), retry_backoff=True,
             max_retries=3)
def training_run_execute(run_id: int) -> str:
    from metrics import training

    return training.training_run_execute(run=TrainingRun.objects.get(pk=run_id)).status
