"""Background jobs that always end, on real workers (PostgreSQL + Redis, the `calls` worker exactly as
config/workers.py runs it for the demo and the compose file):

- a judge run against a local OpenAI-compatible judge answering a lone surrogate, JSON nested 100,000 deep,
  garbage or a drip for some of the items finishes with those items missing by reason, and a second
  researcher's judge run queued after it starts within 30 s while it is still running;
- a worker SIGKILLed in the middle of a judge run and of a self-chat run: the beat's recover tasks find
  both leases ended and queue them again, and a second worker finishes them without asking a finished
  dialogue's turns or a cached judge answer again;
- a worker SIGKILLed while it holds a judge run waiting for its owner's share of the worker (its retry, a
  message taken but not started, comes back from the broker only after hours): the recover task sends the
  run again once nobody touched it for a lease, and another worker scores it once."""
import io
import json
import signal
import time

import pytest

from metrics.judging.local_judge import LocalJudge
from metrics.models import MetricScore, ScoringRun
from metrics.scoring import judges, run_jobs, services
from studies.authoring import services as authoring
from studies.chat import selfchat, selfchat_jobs
from studies.chat.local_bot import LocalBot
from studies.corpora import services as corpus_imports
from studies.models import SelfChatDialogue, SelfChatRun, SystemEndpoint
from tests.integration.test_scoring_workers import wait_for
from tests.metrics.test_llm_judge_runs import endpoint_of
from tests.studies.chat.test_selfchat import endpoint as bot_endpoint

pytestmark = [pytest.mark.integration]
LOOPBACK = {"CONCORD_CHAT_ALLOWED_NETWORKS": "127.0.0.1/32"}
FAST_LEASES = {"JOB_LEASE_SECONDS": "3", "JOB_HEARTBEAT_SECONDS": "0.5"}
HOSTILE = ("surrogate", "deep", "garbage", "drip")


def corpus_with(owner, texts: list[str], slug: str):
    systems = ["bot"]
    lines = [json.dumps({"concord": "dialogues/1", "systems": systems})]
    lines += [json.dumps({"id": f"c{n}", "turns": ["What did you do today?"], "responses": {"bot": text}})
              for n, text in enumerate(texts)]
    return corpus_imports.dialogues_import(stream=io.BytesIO("\n".join(lines).encode()), source_name=f"{slug}.jsonl",
                                           owner=owner, corpus_slug=slug).corpus


def judge_of(owner, study, url, name, **options):
    endpoint = endpoint_of(owner, url, name=f"judge-endpoint-{name}")
    endpoint.timeout_seconds = 1.0  # each attempt ends at 1 s on the wall clock (a drip cannot hold it longer)
    endpoint.save(update_fields=["timeout_seconds"])
    return judges.judge_model_create(owner=owner, endpoint_id=endpoint.pk, study=study, name=name,
                                             criterion=study.criteria.order_by("position").first().name, **options)


def likert_of(owner, corpus):
    experiment = authoring.experiment_create(owner=owner, title=f"Exp of {owner.username}")
    study = authoring.study_create(experiment=experiment, title="Likert", design="likert", design_config={"points": 5})
    authoring.study_items_build(study=study, corpus=corpus, systems=["bot"])
    return study


def test_judge_run_with_hostile_answers_ends_missing_by_reason_and_another_researchers_run_starts(
        start_worker, user, other_user, settings, django_capture_on_commit_callbacks):
    settings.CHAT_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    worker = start_worker("calls", kind="calls", **LOOPBACK)
    with LocalJudge(drip_seconds=0.2) as judge:
        texts = [f"I walked to the market number {n} and bought bread." for n in range(8)]
        texts += [f"judge:{behaviour} answer {n} about the day." for behaviour in HOSTILE for n in range(3)]
        corpus = corpus_with(user, texts, "hostile")
        model = judge_of(user, likert_of(user, corpus), judge.url("mixed"), "judge-hostile", concurrency=2)
        theirs = corpus_with(other_user, [f"We cooked dinner {n} together." for n in range(4)], "theirs")
        their_model = judge_of(other_user, likert_of(other_user, theirs), judge.url("good"), "judge-theirs")
        with django_capture_on_commit_callbacks(execute=True):
            run = services.scoring_run_create(metric_model=model, corpus=corpus)
        wait_for(lambda: ScoringRun.objects.get(pk=run.pk).status == "running", 60, worker, "the hostile run to start")
        with django_capture_on_commit_callbacks(execute=True):
            their_run = services.scoring_run_create(metric_model=their_model, corpus=theirs)
        queued_at = time.monotonic()
        wait_for(lambda: ScoringRun.objects.get(pk=their_run.pk).status != "queued", 30, worker,
                 "the second researcher's run to start")
        assert time.monotonic() - queued_at < 30
        assert ScoringRun.objects.get(pk=run.pk).status == "running"  # it did not wait for the hostile run
        wait_for(lambda: ScoringRun.objects.get(pk=their_run.pk).status == "done", 60, worker, "their run to finish")
        wait_for(lambda: ScoringRun.objects.get(pk=run.pk).status == "done", 120, worker, "the hostile run to finish")
    run.refresh_from_db()
    assert run.error == "" and run.total == 20
    assert MetricScore.objects.filter(metric_model=model).count() == 8
    assert "missing, no score stored: not_json 3, timeout 3, too_deep 3, unstorable 3" in run.log
    assert MetricScore.objects.filter(metric_model=their_model).count() == 4


def test_judge_run_and_selfchat_run_of_a_killed_worker_are_found_and_resumed(
        start_worker, user, settings, django_capture_on_commit_callbacks):
    settings.CHAT_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    doomed = start_worker("doomed", kind="calls", **LOOPBACK, **FAST_LEASES)
    with LocalJudge(slow_seconds=0.3) as judge, LocalBot(slow_seconds=0.2) as bot:
        corpus = corpus_with(user, [f"Answer number {n} about the weather and the market." for n in range(24)], "slow")
        model = judge_of(user, likert_of(user, corpus), judge.url("slow"), "judge-slow", concurrency=1)
        bot_endpoint("slow-a", bot.url("slow"), timeout_seconds=5)
        bot_endpoint("slow-b", bot.url("slow"), timeout_seconds=5)
        with django_capture_on_commit_callbacks(execute=True):
            run = services.scoring_run_create(metric_model=model, corpus=corpus)
            chat = selfchat.selfchat_create(owner=user, title="Slow chat", system_a="slow-a", system_b="slow-b",
                                            openers=["Hello there."], conversations=12, turns=2)
        wait_for(lambda: ScoringRun.objects.get(pk=run.pk).done >= 4
                 and chat.dialogues.filter(status=SelfChatDialogue.Status.DONE).count() >= 2, 120, doomed,
                 "both runs to be under way")
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=10)
        run.refresh_from_db()
        chat.refresh_from_db()
        assert run.status == chat.status == "running" and run.done < run.total
        finished = set(chat.dialogues.filter(status=SelfChatDialogue.Status.DONE).values_list("index", flat=True))
        assert len(finished) < 12
        # what the beat runs every minute: both leases end 3 s after the last heartbeat
        found = {"scoring": 0, "selfchat": 0}

        def recovered():
            found["scoring"] += run_jobs.scoring_runs_recover()["requeued"]
            found["selfchat"] += selfchat_jobs.selfchat_runs_recover()["requeued"]
            return found["scoring"] == found["selfchat"] == 1

        wait_for(recovered, 60, what="the recover tasks to find both runs")
        assert ScoringRun.objects.get(pk=run.pk).status == SelfChatRun.objects.get(pk=chat.pk).status == "queued"
        judge_asked, bot_asked = len(judge.requests), len(bot.requests)
        rescuer = start_worker("rescuer", kind="calls", **LOOPBACK, **FAST_LEASES)
        wait_for(lambda: ScoringRun.objects.get(pk=run.pk).status == "done", 120, rescuer, "the judge run to finish")
        wait_for(lambda: SelfChatRun.objects.get(pk=chat.pk).status == "done", 120, rescuer, "the self-chat to finish")
        run.refresh_from_db()
        chat.refresh_from_db()
        assert run.attempts == chat.attempts == 2 and run.done == run.total == 24
        assert MetricScore.objects.filter(metric_model=model).count() == 24
        # cached answers are not asked again: at most the batch in flight when the worker died (4 prompts)
        assert len(judge.requests) - judge_asked <= 24 - 4 + 4 and len(judge.requests) <= 24 + 4
        assert chat.dialogues.filter(status=SelfChatDialogue.Status.DONE).count() == 12
        # finished dialogues are not made again: their turns were asked once (at most one turn in flight twice)
        assert len(bot.requests) <= 12 * 2 + 1 and len(bot.requests) - bot_asked <= (12 - len(finished)) * 2


def test_judge_run_cancelled_on_a_worker_stops_within_seconds(start_worker, user, settings,
                                                               django_capture_on_commit_callbacks):
    """A judge dripping its answers (each attempt cut at 4 s, three attempts a prompt: a batch of 4 prompts two
    at a time holds the worker about 30 s): Cancel ends the task (its lease let go) within one attempt, and no
    prompt is sent after that."""
    settings.CHAT_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    worker = start_worker("calls", kind="calls", **LOOPBACK, **FAST_LEASES)
    with LocalJudge(drip_seconds=0.2) as judge:
        corpus = corpus_with(user, [f"Answer {n} about the market and the bread." for n in range(12)], "cancel")
        model = judge_of(user, likert_of(user, corpus), judge.url("drip"), "judge-cancel", concurrency=2)
        endpoint = SystemEndpoint.objects.get(pk=model.config["endpoint"])
        endpoint.timeout_seconds = 4.0
        endpoint.save(update_fields=["timeout_seconds"])
        with django_capture_on_commit_callbacks(execute=True):
            run = services.scoring_run_create(metric_model=model, corpus=corpus)
        wait_for(lambda: len(judge.requests) >= 2, 60, worker, "the judge to be asked")
        cancelled_at = time.monotonic()
        services.scoring_run_cancel(run=run)
        wait_for(lambda: ScoringRun.objects.get(pk=run.pk).lease_until is None, 20, worker, "the task to stop")
        assert time.monotonic() - cancelled_at < 10
        asked = len(judge.requests)
        assert asked <= 4 and ScoringRun.objects.get(pk=run.pk).status == "cancelled"
        assert not MetricScore.objects.filter(metric_model=model).exists()
    assert len(judge.requests) == asked


def test_judge_run_a_killed_worker_held_while_it_waited_is_sent_again_and_scored_once(
        start_worker, user, settings, django_capture_on_commit_callbacks):
    settings.CHAT_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    settings.JOB_LEASE_SECONDS = float(FAST_LEASES["JOB_LEASE_SECONDS"])  # the recover task's limit, here
    doomed = start_worker("doomed", kind="calls", **LOOPBACK, **FAST_LEASES, JOB_CALLS_PER_OWNER="1")
    with LocalJudge(slow_seconds=0.3) as judge:
        corpus = corpus_with(user, [f"Answer number {n} about the river and the bread." for n in range(16)], "wait")
        study = likert_of(user, corpus)
        busy_model = judge_of(user, study, judge.url("slow"), "judge-busy", concurrency=1)
        waiting_model = judge_of(user, study, judge.url("good"), "judge-waiting")
        with django_capture_on_commit_callbacks(execute=True):
            busy = services.scoring_run_create(metric_model=busy_model, corpus=corpus)
        wait_for(lambda: ScoringRun.objects.get(pk=busy.pk).status == "running", 60, doomed, "the first run to start")
        with django_capture_on_commit_callbacks(execute=True):
            waiting = services.scoring_run_create(metric_model=waiting_model, corpus=corpus)
        wait_for(lambda: ScoringRun.objects.get(pk=waiting.pk).touched_at > waiting.touched_at, 60, doomed,
                 "the second run's task to wait its turn")
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=10)
        assert ScoringRun.objects.get(pk=busy.pk).status == "running"
        assert (ScoringRun.objects.get(pk=waiting.pk).status, ScoringRun.objects.get(pk=waiting.pk).attempts) == (
            "queued", 0)
        found = {"requeued": 0}

        def recovered():  # what the beat runs every minute
            found["requeued"] += run_jobs.scoring_runs_recover()["requeued"]
            return found["requeued"] >= 2

        wait_for(recovered, 60, what="the recover task to send both runs again")
        rescuer = start_worker("rescuer", kind="calls", **LOOPBACK, **FAST_LEASES)
        wait_for(lambda: ScoringRun.objects.get(pk=waiting.pk).status == "done", 120, rescuer,
                 "the waiting run to finish")
        wait_for(lambda: ScoringRun.objects.get(pk=busy.pk).status == "done", 120, rescuer, "the first run to finish")
    waiting.refresh_from_db()
    assert waiting.attempts == 1 and waiting.done == waiting.total == 16
    assert MetricScore.objects.filter(metric_model=waiting_model).count() == 16
    assert sum(1 for behaviour, _, _ in judge.requests if behaviour == "good") == 16  # each prompt asked once
    assert ScoringRun.objects.get(pk=busy.pk).attempts == 2
    assert MetricScore.objects.filter(metric_model=busy_model).count() == 16
