"""Celery tasks: thin; ids in, services do the work."""
from celery import shared_task

from studies.chat import selfchat_jobs
from studies.corpora import services as corpus_imports
from studies.models import ImportJob, Study
from studies.rating import closing, review
from studies.reports import live_services


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True)
def import_job_run(self, job_id: int) -> str:
    """Run an import job; a redelivery (the first worker died mid-import) takes the job over."""
    job = ImportJob.objects.filter(pk=job_id).first()
    if job is None:  # deleted before a worker got to it
        return "missing"
    redelivered = bool((self.request.delivery_info or {}).get("redelivered"))
    return corpus_imports.import_job_run(job=job, resume=redelivered).status


@shared_task(acks_late=True, reject_on_worker_lost=True)
def study_close_if_reliable_run(study_id: int) -> bool:
    return live_services.study_close_if_reliable(study=Study.objects.get(pk=study_id))


@shared_task(acks_late=True, reject_on_worker_lost=True)
def studies_close_due() -> dict:
    """On the beat schedule: abandon assignments past their time limit (their items go back to the
    pool), then close every published study past its closing time or with every item at its target."""
    expired = review.assignments_expire_stale()
    return {"expired": expired, "closed": closing.studies_close_due()}


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True)
def selfchat_run(self, run_id: int) -> str:
    """Make a self-chat run's conversations under its lease; a redelivery or the recover task's (the worker
    died) continues from the stored turns; any exception fails the run with its reason. A run whose owner
    already runs their share of the calls worker waits, queued."""
    if selfchat_jobs.selfchat_owner_at_limit(run_id=run_id):
        selfchat_jobs.selfchat_run_waits(run_id=run_id)
        raise self.retry(countdown=5, max_retries=None)
    return selfchat_jobs.selfchat_run_job(run_id=run_id)


@shared_task(acks_late=True, reject_on_worker_lost=True)
def selfchat_runs_recover() -> dict:
    """On the beat schedule: self-chat runs whose worker died, queued again or failed with the reason."""
    return selfchat_jobs.selfchat_runs_recover()
