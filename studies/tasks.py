"""Celery tasks: thin; ids in, services do the work."""
from celery import shared_task

from studies import live_services, services
from studies.models import ImportJob, Study


@shared_task(acks_late=True, reject_on_worker_lost=True)
def import_job_run(job_id: int) -> str:
    job = services.import_job_run(job=ImportJob.objects.get(pk=job_id))
    return job.status


@shared_task(acks_late=True, reject_on_worker_lost=True)
def study_close_if_reliable_run(study_id: int) -> bool:
    return live_services.study_close_if_reliable(study=Study.objects.get(pk=study_id))
