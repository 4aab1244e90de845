"""Celery tasks: thin; ids in, services do the work."""
from celery import shared_task

from studies import services
from studies.models import ImportJob


@shared_task(acks_late=True, reject_on_worker_lost=True)
def import_job_run(job_id: int) -> str:
    job = services.import_job_run(job=ImportJob.objects.get(pk=job_id))
    return job.status
