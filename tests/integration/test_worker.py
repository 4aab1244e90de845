"""A real `celery worker` process on Redis picks up a task queued by the web side (an import job)
and its result lands in the PostgreSQL database."""
import time

import pytest

from studies.corpora import services
from studies.models import Conversation, ImportJob
from tests.conftest import small_corpus_lines

pytestmark = [pytest.mark.integration]


@pytest.fixture
def worker(start_worker):
    return start_worker("importer")


def test_worker_runs_an_import_job_into_the_database(worker, user, tmp_path, django_capture_on_commit_callbacks):
    upload = tmp_path / "queued.jsonl"
    upload.write_bytes(small_corpus_lines(5))
    with django_capture_on_commit_callbacks(execute=True):
        job = services.import_job_create(owner=user, path=str(upload), source_name="queued.jsonl",
                                         source_format="auto", corpus_slug="queued")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.status in (ImportJob.Status.DONE, ImportJob.Status.FAILED) or worker.poll() is not None:
            break
        time.sleep(0.5)
    log = worker.log_path.read_text()
    assert job.status == ImportJob.Status.DONE, f"job {job.status}: {job.message}\nworker log:\n{log[-3000:]}"
    assert job.counts["conversations"] == 5
    assert Conversation.objects.filter(corpus__slug="queued").count() == 5
    assert "import_job_run" in log
    assert not upload.exists()  # the worker deletes the upload when the job ends


def test_worker_records_a_failed_import_without_writing(worker, user, tmp_path, django_capture_on_commit_callbacks):
    upload = tmp_path / "broken.jsonl"
    upload.write_bytes(small_corpus_lines(2) + b"{broken\n")
    with django_capture_on_commit_callbacks(execute=True):
        job = services.import_job_create(owner=user, path=str(upload), source_name="broken.jsonl",
                                         source_format="auto", corpus_slug="broken")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and job.status not in (ImportJob.Status.DONE, ImportJob.Status.FAILED):
        time.sleep(0.5)
        job.refresh_from_db()
    assert job.status == ImportJob.Status.FAILED
    assert job.message.startswith("line 4: malformed JSON")
    assert not Conversation.objects.filter(corpus__slug="broken").exists()
    assert not upload.exists()
