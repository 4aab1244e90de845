"""A self-chat run as a background job that always ends (studies.chat.selfchat_jobs): any exception of the
task fails the run with its reason (page and JSON), the run holds a lease while its worker lives, and a run
whose worker died is queued again (continuing from the stored turns) or failed with the reason."""
from datetime import timedelta

import pytest
from django.utils import timezone

from studies import tasks
from studies.chat import selfchat, selfchat_jobs
from studies.chat.local_bot import LocalBot
from studies.models import SelfChatDialogue, SelfChatRun
from tests.studies.chat.test_selfchat import endpoint, make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def bot(loopback_allowed, user):
    with LocalBot() as server:
        endpoint("rule-a", server.url("rule"))
        endpoint("parrot-b", server.url("parrot", "openai"), protocol="openai", model_name="parrot-1")
        yield server


def test_selfchat_task_exception_fails_the_run_with_its_reason(user, bot, monkeypatch, client):
    run = make_run(user, queue=False)

    def crashes(*args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded while decoding a JSON object")

    monkeypatch.setattr(selfchat, "bot_reply", crashes)
    assert tasks.selfchat_run(run.pk) == "failed"
    run.refresh_from_db()
    assert run.status == "failed" and run.error.startswith("RecursionError: maximum recursion depth")
    assert run.attempts == 1 and run.lease_until is None
    client.force_login(user)
    assert "RecursionError: maximum recursion depth" in client.get(f"/selfchats/{run.pk}/").content.decode()
    assert client.get(f"/selfchats/{run.pk}/", HTTP_ACCEPT="application/json").json()["status"] == "failed"


def test_selfchat_task_counts_its_starts_and_leaves_no_lease(user, bot):
    run = make_run(user, conversations=2, turns=2, queue=False)
    assert tasks.selfchat_run(run.pk) == "done"
    run.refresh_from_db()
    assert (run.status, run.attempts, run.lease_until) == ("done", 1, None)


def _expired(run, attempts):
    SelfChatRun.objects.filter(pk=run.pk).update(status="running", attempts=attempts,
                                                 lease_until=timezone.now() - timedelta(seconds=1))


def test_selfchat_run_whose_worker_died_is_queued_again_then_failed(user, bot, settings, monkeypatch,
                                                                    django_capture_on_commit_callbacks):
    settings.JOB_MAX_ATTEMPTS = 2
    sent = []
    monkeypatch.setattr(tasks.selfchat_run, "delay", lambda *args: sent.append(args))
    monkeypatch.setattr(tasks.selfchat_run, "apply_async", lambda args, **options: sent.append(tuple(args)))
    run = make_run(user, conversations=2, turns=2, queue=False)
    live = make_run(user, conversations=1, turns=2, queue=False, title="Live")
    SelfChatRun.objects.filter(pk=live.pk).update(status="running", attempts=1,
                                                  lease_until=timezone.now() + timedelta(seconds=60))
    first = run.dialogues.get(index=0)  # finished before the worker died: never made again
    selfchat._dialogue_finish(run, first, {"a": {}, "b": {}})
    _expired(run, 1)
    with django_capture_on_commit_callbacks(execute=True):
        assert selfchat_jobs.selfchat_runs_recover() == {"requeued": 1, "failed": 0}
    assert sent == [(run.pk,)]
    assert SelfChatRun.objects.get(pk=run.pk).status == "queued"
    assert SelfChatRun.objects.get(pk=live.pk).status == "running"  # a live lease is left alone
    requests_before = len(bot.requests)
    assert tasks.selfchat_run(run.pk) == "done"
    assert len(bot.requests) - requests_before == 2  # only the second dialogue's two turns
    assert run.dialogues.filter(status=SelfChatDialogue.Status.DONE).count() == 2
    _expired(run, 2)
    with django_capture_on_commit_callbacks(execute=True):
        assert selfchat_jobs.selfchat_runs_recover() == {"requeued": 0, "failed": 1}
    run.refresh_from_db()
    assert run.status == "failed" and "worker stopped" in run.error and len(sent) == 1


def test_a_queued_run_no_worker_touches_is_sent_again_and_a_held_one_is_not_run_twice(
        user, bot, settings, monkeypatch, django_capture_on_commit_callbacks):
    """A worker killed outright keeps the messages it had taken but not started (a waiting run's retry)
    until the broker's visibility timeout: the recover task sends a queued run that nobody touched for a
    lease again; a run whose task waits its turn is touched and left alone; the second message for a run
    a live worker holds is dropped."""
    settings.JOB_LEASE_SECONDS = 60
    sent = []
    monkeypatch.setattr(tasks.selfchat_run, "delay", lambda *args: sent.append(args))
    monkeypatch.setattr(tasks.selfchat_run, "apply_async", lambda args, **options: sent.append(tuple(args)))
    lost = make_run(user, conversations=1, turns=2, queue=False, title="Lost")
    waiting = make_run(user, conversations=1, turns=2, queue=False, title="Waiting")
    long_ago = timezone.now() - timedelta(seconds=120)
    SelfChatRun.objects.filter(pk__in=[lost.pk, waiting.pk]).update(updated_at=long_ago)
    selfchat_jobs.selfchat_run_waits(run_id=waiting.pk)  # its task retried a moment ago
    with django_capture_on_commit_callbacks(execute=True):
        assert selfchat_jobs.selfchat_runs_recover() == {"requeued": 1, "failed": 0}
    assert sent == [(lost.pk,)]
    with django_capture_on_commit_callbacks(execute=True):  # touched when sent: not sent again at once
        assert selfchat_jobs.selfchat_runs_recover() == {"requeued": 0, "failed": 0}
    SelfChatRun.objects.filter(pk=lost.pk).update(status="running", attempts=1,
                                                  lease_until=timezone.now() + timedelta(seconds=60))
    requests_before = len(bot.requests)
    assert tasks.selfchat_run(lost.pk) == "held"  # the first message's worker still runs it
    assert len(bot.requests) == requests_before and SelfChatRun.objects.get(pk=lost.pk).attempts == 1
