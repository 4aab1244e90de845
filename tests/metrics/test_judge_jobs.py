"""Judge runs as background jobs that always end: an answer holding a lone surrogate or JSON nested 100,000
deep is missing by its reason, any exception of the task fails the run with the reason (page and API), each
attempt ends at the endpoint's timeout on the wall clock, Cancel reaches the calls, a run whose worker died is
queued again or failed, and Rerun (page and API) is the owner's only."""
from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from metrics import tasks
from metrics.implementations.llm_judge import LLMJudge
from metrics.judging.client import JudgeEndpoint, JudgeError, complete
from metrics.judging.local_judge import LocalJudge
from metrics.judging.prompt import JudgeCriterion, judge_messages
from metrics.judging.run import JudgeInput, judge_all
from metrics.models import JudgeAnswer, MetricScore, ScoringRun
from metrics.scoring import run_jobs, services
from studies import jobs
from studies.chat.addresses import networks_parse
from tests.metrics.test_llm_judge_runs import _judge_model

pytestmark = pytest.mark.django_db
LOOPBACK = networks_parse(["127.0.0.1/32"])
COHERENCE = JudgeCriterion(name="coherence", question="Is the response coherent?", points=(1, 2, 3, 4, 5))


@pytest.fixture
def judge(loopback_allowed):
    with LocalJudge(drip_seconds=0.05) as server:
        yield server


@pytest.fixture
def likert(make_study):
    return make_study("likert", points=5)


def ask(server, behaviour, **changes):
    messages = judge_messages(COHERENCE, turns=["Plans?"], response="A walk by the river and then lunch.")
    return complete(JudgeEndpoint(url=server.url(behaviour), model="m", **changes), messages, allowed=LOOPBACK)


@pytest.mark.parametrize(("behaviour", "reason"), [("surrogate", "unstorable"), ("deep", "too_deep")])
def test_llm_judge_client_surrogate_and_deep_json_are_reply_errors_by_reason(judge, behaviour, reason):
    with pytest.raises(JudgeError) as caught:
        ask(judge, behaviour)
    assert (caught.value.kind, caught.value.reason, caught.value.attempts) == ("reply", reason, 1)


@pytest.mark.parametrize(("behaviour", "reason"), [("surrogate", "unstorable"), ("deep", "too_deep"),
                                                   ("garbage", "not_json")])
def test_llm_judge_run_counts_hostile_answers_missing_by_reason(user, likert, judge, behaviour, reason):
    model = _judge_model(user, likert, judge, behaviour=behaviour)
    run = services.scoring_run_execute(run=services.scoring_run_create(metric_model=model, study=likert, enqueue=False))
    assert run.status == "done" and run.total > 0
    assert MetricScore.objects.filter(metric_model=model).count() == 0 and JudgeAnswer.objects.count() == 0
    assert f"missing, no score stored: {reason} {run.total}" in run.log


def test_llm_judge_client_each_attempt_ends_at_the_timeout_on_the_wall_clock(judge):
    """The body drips a byte every 0.05 s (each read well inside the 1 s timeout): the attempt is cut at 1 s."""
    started = time.monotonic()
    with pytest.raises(JudgeError) as caught:
        ask(judge, "drip", timeout=1.0, retries=0)
    assert caught.value.kind == "timeout" and time.monotonic() - started < 3.0


def test_llm_judge_stop_leaves_the_remaining_prompts_unsent(judge):
    stop = threading.Event()
    inputs = [JudgeInput(("Plans?",), f"Answer number {n} about the weather today.") for n in range(12)]
    results = judge_all(JudgeEndpoint(url=judge.url("good"), model="m", concurrency=1), COHERENCE, inputs,
                        allowed=LOOPBACK, stop=stop.is_set, on_done=lambda done: stop.set())
    assert len(judge.requests) == 1
    assert [r.reason for r in results[1:]] == ["stopped"] * 11 and results[0].judgment.value is not None


def test_llm_judge_lease_sees_a_cancel_and_the_task_stops(user, likert, judge, settings):
    model = _judge_model(user, likert, judge)
    run = services.scoring_run_create(metric_model=model, study=likert, enqueue=False)
    with jobs.Lease(ScoringRun, run.pk, stop_statuses=("cancelled",)) as lease:
        assert ScoringRun.objects.get(pk=run.pk).lease_until > timezone.now()
        lease.renew()
        assert not lease.stopped.is_set()
        services.scoring_run_cancel(run=run)
        lease.renew()
        assert lease.stopped.is_set()
    assert ScoringRun.objects.get(pk=run.pk).lease_until is None


def test_llm_judge_task_exception_fails_the_run_with_its_reason(user, likert, judge, monkeypatch, client, api):
    model = _judge_model(user, likert, judge)

    def crashes(self, inputs):
        raise RecursionError("maximum recursion depth exceeded while decoding a JSON array")

    monkeypatch.setattr(LLMJudge, "_judge", crashes)
    run = services.scoring_run_create(metric_model=model, study=likert, enqueue=False)
    assert tasks.scoring_run_execute(run.pk) == "failed"
    run.refresh_from_db()
    assert run.status == "failed" and run.error.startswith("RecursionError: maximum recursion depth")
    assert run.finished_at is not None and "failed: RecursionError" in run.log
    assert api.get(f"/api/metrics/runs/{run.pk}/").json()["error"] == run.error
    client.force_login(user)
    assert "Failed: RecursionError: maximum recursion depth" in client.get("/metrics/").content.decode()


def test_llm_judge_failure_text_is_storable():
    text = jobs.failure_text(UnicodeEncodeError("utf-8", "a\ud800\x00", 1, 2, "surrogates not allowed"))
    text.encode()
    assert "\x00" not in text and text.startswith("UnicodeEncodeError")


def _expired(run, attempts):
    ScoringRun.objects.filter(pk=run.pk).update(status="running", attempts=attempts,
                                                lease_until=timezone.now() - timedelta(seconds=1))


def test_llm_judge_run_whose_worker_died_is_queued_again_then_failed(user, likert, judge, settings,
                                                                   django_capture_on_commit_callbacks, monkeypatch):
    settings.JOB_MAX_ATTEMPTS = 2
    sent = []
    monkeypatch.setattr(tasks.scoring_run_execute, "apply_async", lambda args, **options: sent.append((args, options)))
    model = _judge_model(user, likert, judge)
    run = services.scoring_run_create(metric_model=model, study=likert, enqueue=False)
    live = services.scoring_run_create(metric_model=model, study=likert, enqueue=False)
    ScoringRun.objects.filter(pk=live.pk).update(status="running", attempts=1,
                                                 lease_until=timezone.now() + timedelta(seconds=60))
    _expired(run, 1)
    with django_capture_on_commit_callbacks(execute=True):
        assert run_jobs.scoring_runs_recover() == {"requeued": 1, "failed": 0}
    assert sent == [((run.pk,), {"queue": "calls"})]
    run.refresh_from_db()
    assert run.status == "queued" and "stopped renewing its lease" in run.log
    assert ScoringRun.objects.get(pk=live.pk).status == "running"  # a live lease is left alone
    resumed = services.scoring_run_execute(run=run)  # the requeued task: resumes, nothing asked twice
    assert resumed.status == "done" and resumed.attempts == 2
    _expired(run, 2)
    with django_capture_on_commit_callbacks(execute=True):
        assert run_jobs.scoring_runs_recover() == {"requeued": 0, "failed": 1}
    run.refresh_from_db()
    assert run.status == "failed" and "worker stopped" in run.error and len(sent) == 1


def test_llm_judge_rerun_button_and_api_resume_and_refuse_others(user, other_user, likert, judge, client, api,
                                                                django_capture_on_commit_callbacks, monkeypatch):
    sent = []
    monkeypatch.setattr(tasks.scoring_run_execute, "apply_async", lambda args, **options: sent.append(args))
    model = _judge_model(user, likert, judge)
    run = services.scoring_run_create(metric_model=model, study=likert, enqueue=False)
    run_jobs.scoring_run_fail(run_id=run.pk, reason="RuntimeError: boom")
    client.force_login(other_user)
    assert client.post(f"/metrics/runs/{run.pk}/rerun/").status_code == 404
    client.force_login(user)
    page = client.get("/metrics/").content.decode()
    assert f'action="/metrics/runs/{run.pk}/rerun/"' in page and "Rerun" in page
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(f"/metrics/runs/{run.pk}/rerun/").status_code == 302
    run.refresh_from_db()
    assert run.status == "queued" and run.error == "" and sent == [(run.pk,)]
    assert api.post(f"/api/metrics/runs/{run.pk}/rerun/").status_code == 409  # queued: not again
    services.scoring_run_execute(run=run)
    with django_capture_on_commit_callbacks(execute=True):
        answer = api.post(f"/api/metrics/runs/{run.pk}/rerun/")
    assert answer.status_code == 202 and answer.json()["status"] == "queued" and len(sent) == 2
    from rest_framework.test import APIClient

    from tests.factories import token_for

    bob = APIClient()
    bob.credentials(HTTP_AUTHORIZATION=f"Token {token_for(other_user)}")
    assert bob.post(f"/api/metrics/runs/{run.pk}/rerun/").status_code == 404


def test_llm_judge_runs_go_to_the_calls_queue_and_other_metrics_to_gpu(user, likert, judge):
    assert run_jobs.scoring_queue(_judge_model(user, likert, judge)) == "calls"
    assert run_jobs.scoring_queue(services.metric_model_default(key="readability")) == "gpu"


def test_llm_judge_run_waits_while_its_owner_runs_their_share_of_the_calls_worker(user, other_user, likert, judge,
                                                                                 settings, monkeypatch):
    from celery.exceptions import Retry

    settings.JOB_CALLS_PER_OWNER = 1
    model = _judge_model(user, likert, judge)
    busy = services.scoring_run_create(metric_model=model, study=likert, enqueue=False)
    ScoringRun.objects.filter(pk=busy.pk).update(status="running", lease_until=timezone.now() + timedelta(seconds=60))
    waiting = services.scoring_run_create(metric_model=model, study=likert, enqueue=False)
    assert run_jobs.owner_at_limit(waiting)
    monkeypatch.setattr(tasks.scoring_run_execute, "retry", lambda **options: Retry(when=options["countdown"]))
    with pytest.raises(Retry):
        tasks.scoring_run_execute(waiting.pk)
    assert ScoringRun.objects.get(pk=waiting.pk).status == "queued"
    ScoringRun.objects.filter(pk=busy.pk).update(lease_until=timezone.now() - timedelta(seconds=1))  # its worker died
    assert not run_jobs.owner_at_limit(waiting)
    assert tasks.scoring_run_execute(waiting.pk) == "done"


def test_llm_judge_queued_run_no_worker_touches_is_sent_again_and_a_held_one_is_scored_once(
        user, likert, judge, settings, monkeypatch, django_capture_on_commit_callbacks):
    """A worker killed outright keeps the messages it had taken but not started (a waiting run's retry)
    until the broker's visibility timeout: the recover task sends a queued run that nobody touched for a
    lease again, once; a run whose task waits its turn is touched and left alone; the second message for a
    run a live worker holds is dropped, so nothing is asked twice."""
    from celery.exceptions import Retry

    settings.JOB_LEASE_SECONDS, settings.JOB_CALLS_PER_OWNER = 60, 1
    sent = []
    monkeypatch.setattr(tasks.scoring_run_execute, "apply_async", lambda args, **options: sent.append(tuple(args)))
    monkeypatch.setattr(tasks.scoring_run_execute, "retry", lambda **options: Retry(when=options["countdown"]))
    model = _judge_model(user, likert, judge)
    busy = services.scoring_run_create(metric_model=model, study=likert, enqueue=False)
    ScoringRun.objects.filter(pk=busy.pk).update(status="running", lease_until=timezone.now() + timedelta(seconds=60))
    lost = services.scoring_run_create(metric_model=model, study=likert, enqueue=False)
    waiting = services.scoring_run_create(metric_model=model, study=likert, enqueue=False)
    ScoringRun.objects.filter(pk__in=[lost.pk, waiting.pk]).update(touched_at=timezone.now() - timedelta(seconds=120))
    with pytest.raises(Retry):  # its task waits for the owner's share, a moment ago
        tasks.scoring_run_execute(waiting.pk)
    with django_capture_on_commit_callbacks(execute=True):
        assert run_jobs.scoring_runs_recover() == {"requeued": 1, "failed": 0}
    assert sent == [(lost.pk,)]
    with django_capture_on_commit_callbacks(execute=True):  # touched when sent: not sent again at once
        assert run_jobs.scoring_runs_recover() == {"requeued": 0, "failed": 0}
    assert sent == [(lost.pk,)] and ScoringRun.objects.get(pk=lost.pk).status == "queued"
    ScoringRun.objects.filter(pk=busy.pk).update(status="done", lease_until=None)
    assert run_jobs.scoring_run_lease_take(run_id=lost.pk)  # the first message's worker starts it
    ScoringRun.objects.filter(pk=lost.pk).update(status="running", attempts=1)
    with pytest.raises(Retry):  # the recover task's message finds it held: it waits for the lease
        tasks.scoring_run_execute(lost.pk)
    assert 1 <= run_jobs.scoring_run_lease_wait(run_id=lost.pk) <= settings.JOB_LEASE_SECONDS + 1
    assert len(judge.requests) == 0 and ScoringRun.objects.get(pk=lost.pk).attempts == 1
    ScoringRun.objects.filter(pk=lost.pk).update(lease_until=timezone.now() - timedelta(seconds=1))  # that worker died
    assert tasks.scoring_run_execute(lost.pk) == "done"
    asked = len(judge.requests)
    assert asked > 0 and MetricScore.objects.filter(metric_model=model).count() > 0
    ScoringRun.objects.filter(pk=lost.pk).update(status="queued")  # a late duplicate: nothing left to ask
    assert tasks.scoring_run_execute(lost.pk) == "done" and len(judge.requests) == asked
