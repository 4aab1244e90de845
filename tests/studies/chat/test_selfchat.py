"""Self-chats against two real local bot servers (studies.chat.local_bot on loopback): N conversations
of T turns stored as a corpus with each bot's settings; a worker killed mid-job and a bot server killed
mid-job, each resumed from the stored turns without asking any turn twice and without half a
conversation in the corpus; rate limits; bad input named field by field; endpoints only through
``endpoints_visible_to``; the task queued by name; the corpus feeding an ACUTE-Eval study."""
import pytest
from django.core.exceptions import ValidationError

from studies import tasks
from studies.authoring import services as authoring
from studies.chat import endpoints, selfchat
from studies.chat.local_bot import LocalBot
from studies.models import Conversation, Corpus, SelfChatDialogue, SelfChatRun, System, SystemEndpoint
from tests.visible import visible_text

pytestmark = pytest.mark.django_db
OPENERS = ["Hi, my name is Ada.", "I like hiking in the hills.", "I feel tired today."]


class Killed(BaseException):
    """What a worker dying looks like to the code it was running: it never returns."""


@pytest.fixture
def two_bots(loopback_allowed):
    with LocalBot() as first, LocalBot() as second:
        yield first, second


def endpoint(name, url, protocol="concord", owner=None, **kw):
    """``owner``'s endpoint (default: the ``user`` fixture's researcher, alice) for the system ``name``."""
    from django.contrib.auth import get_user_model

    owner = owner or get_user_model().objects.get(username="alice")
    system, _ = System.objects.get_or_create(name=name)
    return endpoints.endpoint_set(owner=owner, system=system, protocol=protocol, url=url, retries=0, **kw)


def make_run(user, a="rule-a", b="parrot-b", conversations=4, turns=4, **kw):
    return selfchat.selfchat_create(owner=user, title=kw.pop("title", "Self chat"), system_a=a, system_b=b,
                                    openers=kw.pop("openers", OPENERS), conversations=conversations, turns=turns, **kw)


def bot_requests(bot):
    return [r for r in bot.requests if r["path"].startswith(("/rule", "/parrot"))]


def test_selfchat_two_bots_make_n_conversations_of_t_turns_stored_as_a_corpus(user, two_bots):
    first, second = two_bots
    endpoint("rule-a", first.url("rule"))
    endpoint("parrot-b", second.url("parrot", "openai"), protocol="openai", model_name="parrot-1")
    run = make_run(user, bot_settings={"b": {"system_prompt": "You are a parrot.", "temperature": 0.7, "top_p": 0.9,
                                             "max_tokens": 64}})
    run = selfchat.selfchat_run(run=run)
    assert run.status == SelfChatRun.Status.DONE and run.error == ""
    conversations = list(Conversation.objects.filter(corpus=run.corpus).order_by("external_id"))
    assert len(conversations) == 4
    for conversation in conversations:
        turns = conversation.turns
        assert len(turns) == 1 + 4 and turns[0]["opener"] and turns[0]["speaker"] == "parrot-b"
        assert [t["speaker"] for t in turns[1:]] == ["rule-a", "parrot-b", "rule-a", "parrot-b"]
        assert turns[2]["text"] == f"You said: {turns[1]['text']}"  # the parrot repeats what bot a said
        meta = conversation.metadata
        assert (meta["system"], meta["partner"], meta["judged_speaker"]) == ("rule-a", "parrot-b", "rule-a")
        assert meta["bots"]["b"]["settings"]["temperature"] == 0.7 and meta["bots"]["b"]["model"] == "parrot-1"
        assert meta["bots"]["a"]["protocol"] == "concord"
    assert len(bot_requests(first)) == len(bot_requests(second)) == 4 * 2
    sent = bot_requests(second)[0]["body"]
    assert sent["messages"][0] == {"role": "system", "content": "You are a parrot."}
    assert (sent["temperature"], sent["top_p"], sent["max_tokens"]) == (0.7, 0.9, 64)
    assert [m["role"] for m in sent["messages"][1:]] == ["assistant", "user"]  # its opener, bot a's turn
    assert "context" not in bot_requests(first)[0]["body"]  # bot a has no settings: nothing added


def test_selfchat_one_bot_with_itself_numbers_its_speakers_and_shares_its_rate_limit(user, two_bots):
    first, _ = two_bots
    endpoint("rule-a", first.url("rule"))
    clock = [0.0]
    waits = []

    def pause(seconds):
        waits.append(seconds)
        clock[0] += seconds

    run = make_run(user, b="rule-a", conversations=2, turns=3, bot_settings={"a": {"requests_per_minute": 30}})
    run = selfchat.selfchat_run(run=run, clock=lambda: clock[0], pause=pause)
    assert run.status == SelfChatRun.Status.DONE
    speakers = {t["speaker"] for c in Conversation.objects.filter(corpus=run.corpus) for t in c.turns}
    assert speakers == {"rule-a-1", "rule-a-2"}
    assert waits == [2.0] * (2 * 3 - 1)  # one endpoint: every call after the first waits 60/30 s


def test_selfchat_rate_limits_are_per_endpoint(user, two_bots):
    first, second = two_bots
    endpoint("rule-a", first.url("rule"))
    endpoint("parrot-b", second.url("parrot"))
    clock = [0.0]
    waits = []

    def pause(seconds):
        waits.append(seconds)
        clock[0] += seconds

    run = make_run(user, conversations=1, turns=4,
                   bot_settings={"a": {"requests_per_minute": 60}, "b": {"requests_per_minute": 20}})
    selfchat.selfchat_run(run=run, clock=lambda: clock[0], pause=pause)
    # a at 0, b at 0, a waits to 1 s, b waits to 3 s (its own gap, not a's)
    assert waits == [1.0, 2.0]


def test_selfchat_worker_killed_mid_job_resumes_from_the_stored_turns(user, two_bots):
    first, second = two_bots
    endpoint("rule-a", first.url("rule"))
    endpoint("parrot-b", second.url("parrot"))
    run = make_run(user, conversations=3, turns=4)
    stored = []

    def die_after_six(dialogue):
        stored.append(dialogue.pk)
        if len(stored) == 6:
            raise Killed

    with pytest.raises(Killed):
        selfchat.selfchat_run(run=run, on_turn=die_after_six)
    run.refresh_from_db()
    assert run.status == SelfChatRun.Status.RUNNING
    assert Conversation.objects.filter(corpus=run.corpus).count() == 1  # the half-made second one is not there
    half = run.dialogues.get(index=1)
    assert half.status == SelfChatDialogue.Status.RUNNING and len(half.turns) == 2
    assert selfchat.selfchat_progress(run)["turns_stored"] == 6
    assert tasks.selfchat_run(run.pk) == SelfChatRun.Status.DONE  # the task, redelivered
    run.refresh_from_db()
    assert Conversation.objects.filter(corpus=run.corpus).count() == 3
    assert len(bot_requests(first)) + len(bot_requests(second)) == 3 * 4  # no turn asked twice
    resumed = Conversation.objects.get(corpus=run.corpus, external_id=f"selfchat-{run.pk}-1")
    assert [t["text"] for t in resumed.turns[1:3]] == [t["text"] for t in half.turns]


def test_selfchat_bot_server_killed_mid_job_is_recorded_and_a_rerun_completes(user, loopback_allowed):
    with LocalBot() as first:
        second = LocalBot().start()
        port = second.port
        endpoint("rule-a", first.url("rule"))
        endpoint("parrot-b", second.url("parrot"))
        run = make_run(user, conversations=5, turns=4)
        turns_seen = []

        def kill_second(dialogue):
            turns_seen.append(1)
            if len(turns_seen) == 5:  # conversation 1 has bot a's first turn: bot b's server goes away
                second.stop()

        run = selfchat.selfchat_run(run=run, on_turn=kill_second)
        assert run.status == SelfChatRun.Status.FAILED
        assert "parrot-b" in run.error and "connection" in run.error and "in a row" in run.error
        failed = run.dialogues.filter(status=SelfChatDialogue.Status.FAILED)
        assert failed.count() == selfchat.MAX_FAILURES_IN_A_ROW
        assert set(failed.values_list("error_side", "error_kind").distinct()) == {("b", "connection")}
        assert run.dialogues.get(index=1).turns and len(run.dialogues.get(index=1).turns) == 1
        assert Conversation.objects.filter(corpus=run.corpus).count() == 1  # only whole conversations
        assert all(len(c.turns) == 5 for c in Conversation.objects.filter(corpus=run.corpus))
        with LocalBot(port=port):  # the server is back where it was
            selfchat.selfchat_rerun(run=run)
            run = selfchat.selfchat_run(run=run)
        assert run.status == SelfChatRun.Status.DONE
        progress = selfchat.selfchat_progress(run)
        assert (progress["done"], progress["failed"], progress["turns_stored"]) == (5, 0, 20)
        assert Conversation.objects.filter(corpus=run.corpus).count() == 5
        assert len(bot_requests(first)) == 5 * 2  # bot a never asked again for a stored turn


def test_selfchat_create_names_every_bad_field_and_writes_nothing(user, two_bots):
    first, _ = two_bots
    endpoint("rule-a", first.url("rule"))
    with pytest.raises(ValidationError) as refused:
        selfchat.selfchat_create(owner=user, title="", system_a="rule-a", system_b="ghost", openers=["hi", "  "],
                                 conversations=0, turns=500,
                                 bot_settings={"a": {"temperature": 3, "top_p": "x", "color": 1}, "c": {}})
    errors = refused.value.message_dict
    assert {"title", "system_b", "openers", "conversations", "turns", "bot_settings", "bot_settings.a.temperature",
            "bot_settings.a.top_p", "bot_settings.a.color"} <= set(errors)
    assert "line 2" in errors["openers"][0]
    assert not SelfChatRun.objects.exists() and not Corpus.objects.filter(source_format="selfchat").exists()


def test_selfchat_endpoints_are_looked_up_only_through_endpoints_visible_to(user, two_bots, monkeypatch):
    first, _ = two_bots
    endpoint("rule-a", first.url("rule"))
    monkeypatch.setattr(selfchat, "endpoints_visible_to", lambda who: SystemEndpoint.objects.none())
    with pytest.raises(ValidationError) as refused:
        make_run(user, b="rule-a")
    assert set(refused.value.message_dict) == {"system_a", "system_b"}


def test_selfchat_another_researchers_corpus_is_refused(user, other_user, two_bots):
    first, _ = two_bots
    endpoint("rule-a", first.url("rule"))
    theirs = Corpus.objects.create(slug="theirs", title="theirs", source_format="selfchat", owner=other_user)
    with pytest.raises(ValidationError) as refused:
        make_run(user, b="rule-a", corpus=theirs)
    assert "corpus" in refused.value.message_dict and not SelfChatRun.objects.exists()


def test_selfchat_is_queued_by_name_after_commit_and_run_by_the_task(user, two_bots, monkeypatch,
                                                                      django_capture_on_commit_callbacks):
    first, _ = two_bots
    endpoint("rule-a", first.url("rule"))
    queued = []
    monkeypatch.setattr(tasks.selfchat_run, "delay", lambda run_id: queued.append(run_id))
    with django_capture_on_commit_callbacks(execute=True):
        run = make_run(user, b="rule-a", conversations=2, turns=2)
    assert queued == [run.pk] and run.status == SelfChatRun.Status.QUEUED
    assert tasks.selfchat_run(run.pk) == SelfChatRun.Status.DONE
    assert tasks.selfchat_run(10**9) == "missing"


def test_selfchat_corpora_of_two_runs_feed_an_acute_study(user, two_bots):
    first, second = two_bots
    endpoint("rule-a", first.url("rule"))
    endpoint("parrot-b", second.url("parrot"))
    run_a = selfchat.selfchat_run(run=make_run(user, b="rule-a", conversations=3, turns=4, title="Selfchats"))
    run_b = selfchat.selfchat_run(run=make_run(user, a="parrot-b", b="parrot-b", conversations=3, turns=4,
                                               corpus=run_a.corpus))
    assert run_b.corpus_id == run_a.corpus_id
    experiment = authoring.experiment_create(owner=user, title="ACUTE over self-chats")
    study = authoring.study_create(experiment=experiment, title="acute", design="acute", unit="dialogue")
    assert authoring.study_items_build(study=study, corpus=run_a.corpus) == 3
    for item in study.items.all():
        shown = list(item.item_conversations.order_by("position").values_list("conversation__metadata", "speaker"))
        assert {meta["system"] for meta, _ in shown} == {"rule-a", "parrot-b"}
        assert all(speaker == meta["judged_speaker"] for meta, speaker in shown)


def test_selfchat_pages_create_a_run_show_progress_and_are_the_owners_only(client, user, other_user, two_bots,
                                                                          django_user_model, monkeypatch):
    first, _ = two_bots
    endpoint("rule-a", first.url("rule"))
    monkeypatch.setattr(tasks.selfchat_run, "delay", lambda run_id: None)
    client.force_login(user)
    page = client.get("/selfchats/")
    assert page.status_code == 200 and 'value="rule-a"' in page.content.decode()
    bad = client.post("/selfchats/", {"title": "T", "system_a": "rule-a", "system_b": "rule-a", "openers": "Hi",
                                      "conversations": 2, "turns": 2, "a_temperature": "hot"})
    assert bad.status_code == 400 and "Bot A: temperature" in bad.content.decode()
    assert not SelfChatRun.objects.exists()
    made = client.post("/selfchats/", {"title": "Mine", "system_a": "rule-a", "system_b": "rule-a",
                                       "openers": "Hi there\nI like tea", "conversations": 2, "turns": 2,
                                       "a_requests_per_minute": 0})
    run = SelfChatRun.objects.get()
    assert made.status_code == 302 and run.openers == ["Hi there", "I like tea"] and run.owner == user
    selfchat.selfchat_run(run=run)
    progress = client.get(f"/selfchats/{run.pk}/", HTTP_ACCEPT="application/json").json()
    assert (progress["done"], progress["turns_stored"], progress["status"]) == (2, 4, "done")
    assert "2 of 2 conversations done" in client.get(f"/selfchats/{run.pk}/").content.decode()
    client.force_login(other_user)
    assert client.get(f"/selfchats/{run.pk}/").status_code == 404
    assert client.post(f"/selfchats/{run.pk}/rerun/").status_code == 404
    assert "Mine" not in visible_text(client.get("/selfchats/").content)
    admin = django_user_model.objects.create_superuser("root", "root@example.org", "pw-root")
    client.force_login(admin)
    assert client.get(f"/selfchats/{run.pk}/").status_code == 200


def test_selfchat_a_turn_stored_meanwhile_by_another_worker_is_never_stored_twice(user, two_bots):
    first, _ = two_bots
    endpoint("rule-a", first.url("rule"))
    run = make_run(user, b="rule-a", conversations=1, turns=2)
    dialogue = run.dialogues.get()
    stale = SelfChatDialogue.objects.get(pk=dialogue.pk)
    assert selfchat._turn_store(dialogue, {"side": "a", "speaker": "x", "text": "first worker"}) is not None
    assert selfchat._turn_store(stale, {"side": "a", "speaker": "x", "text": "second worker"}) is None
    dialogue.refresh_from_db()
    assert [t["text"] for t in dialogue.turns] == ["first worker"]
    run = selfchat.selfchat_run(run=run)  # continues after the stored turn
    assert run.status == SelfChatRun.Status.DONE and len(run.dialogues.get().turns) == 2
