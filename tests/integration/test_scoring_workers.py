"""Scoring on real worker processes (PostgreSQL + Redis): a run routed to the `gpu` queue completes
on a worker that serves only that queue; a worker killed mid-run leaves the run to a second worker,
which finishes it without duplicate scores."""
import io
import json
import signal
import time

import pytest

from metrics.models import MetricScore, ScoringRun
from metrics.scoring import services

pytestmark = [pytest.mark.integration]


def corpus_of(conversations: int, user):
    from studies.corpora import services

    systems = ["seq2seq", "hred", "thred", "human"]
    lines = [json.dumps({"concord": "dialogues/1", "systems": systems, "reference": "human"})]
    lines += [json.dumps({"id": f"c{i}", "turns": [f"Tell me about your day number {i}.", "It was long but good."],
                          "responses": {s: f"{s} says something about day {i} and the weather." for s in systems}})
              for i in range(conversations)]
    return services.dialogues_import(stream=io.BytesIO("\n".join(lines).encode()), source_name="w.jsonl",
                                           owner=user).corpus


def wait_for(predicate, timeout, process=None, what=""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        if process is not None and process.poll() is not None:
            raise AssertionError(f"worker exited while waiting for {what}:\n{process.log_path.read_text()[-3000:]}")
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_run_on_the_gpu_queue_completes(start_worker, user, django_capture_on_commit_callbacks):
    worker = start_worker("gpu-only", queues="gpu")
    corpus = corpus_of(30, user)
    model = services.metric_model_default(key="readability")
    with django_capture_on_commit_callbacks(execute=True):
        run = services.scoring_run_create(metric_model=model, corpus=corpus)
    wait_for(lambda: ScoringRun.objects.get(pk=run.pk).status == "done", 120, worker, "the run to finish")
    run.refresh_from_db()
    assert (run.done, run.total, run.attempts, run.device) == (120, 120, 1, "cpu")
    assert MetricScore.objects.filter(run=run).count() == 120
    assert "scoring_run_execute" in worker.log_path.read_text()


SHORT_LEASES = {"JOB_LEASE_SECONDS": "6", "JOB_HEARTBEAT_SECONDS": "1"}


def test_a_killed_worker_leaves_a_run_that_another_worker_finishes(start_worker, user, django_capture_on_commit_callbacks):
    corpus = corpus_of(150, user)  # 600 responses: several batches of MiniLM coherence on this CPU
    model = services.metric_model_default(key="coherence")
    first = start_worker("doomed", queues="gpu", CELERY_VISIBILITY_TIMEOUT="5", **SHORT_LEASES)
    with django_capture_on_commit_callbacks(execute=True):
        run = services.scoring_run_create(metric_model=model, corpus=corpus)
    # Killed once the run has counted its targets: while it embeds every text ahead of its batches (each text
    # once) or in its first batches, never after the last one.
    wait_for(lambda: ScoringRun.objects.filter(pk=run.pk, status="running", total=600).exists(), 180, first,
             "the run to count its targets")
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    run.refresh_from_db()
    assert run.status == "running" and run.done < 600
    partial = MetricScore.objects.filter(metric_model=model).count()
    # The redelivered message finds the dead worker's lease still running: it waits for it to lapse, then resumes.
    second = start_worker("rescuer", queues="gpu", CELERY_VISIBILITY_TIMEOUT="5", **SHORT_LEASES)
    wait_for(lambda: ScoringRun.objects.get(pk=run.pk).status == "done", 240, second, "the rescued run to finish")
    run.refresh_from_db()
    assert run.attempts >= 2 and run.done == run.total == 600
    assert MetricScore.objects.filter(metric_model=model).count() == 600  # no response scored twice
    assert MetricScore.objects.filter(metric_model=model, response__conversation__corpus=corpus).values("response").distinct().count() == 600
    assert partial < 600
