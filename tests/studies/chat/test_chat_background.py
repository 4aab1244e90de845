"""Chat replies fetched in the web process's call threads: the rater's turn answers as soon as
the message is stored, before the bot has replied, and the page follows the state; a re-sent message is
stored and asked once; a call whose process died is resumed by the next look at the chat, and a reply
from a call that was superseded is dropped. The bot is the real local server; its ``gate`` bot answers
when the test opens the gate (no sleeps)."""
import os
import subprocess
import sys

import pytest
from django.urls import reverse

from studies.chat import calls, selectors
from studies.chat import services as chatting
from studies.models import Chat, ChatTurn
from studies.rating import form_tokens
from tests.studies.chat.helpers import bot_system, chat_study, started_assignment

pytestmark = pytest.mark.django_db(transaction=True)
JSON = {"HTTP_ACCEPT": "application/json"}


@pytest.fixture
def gated(user, local_bot, loopback_allowed, settings):
    settings.CHAT_BACKGROUND_REPLIES = True
    bot_system("gated", local_bot.url("gate"), timeout=20, retries=0)
    study = chat_study(user, ["gated"], unit_config={"max_turns": 10, "messages_per_minute": 60})
    assignment = started_assignment(study)
    args = [assignment.token, 0]
    urls = {name: reverse(f"chat:{name}", args=args) for name in ("page", "turn", "state")}
    yield assignment, study.items.get().pk, urls
    local_bot.server.gate.set()  # never leave a call thread waiting on the bot
    assert calls.background_wait(30)


def _send(client, assignment, url, client_id, text="Hello there"):
    return client.post(url, {"form_token": form_tokens.form_token(assignment.token, "chat"), "client_id": client_id,
                             "text": text}, **JSON)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_turn_answers_before_the_bot_and_the_page_follows_the_reply(client, gated, local_bot):
    assignment, item_id, urls = gated
    assert client.get(urls["page"]).status_code == 200
    sent = _send(client, assignment, urls["turn"], "m1")
    assert sent.status_code == 200
    state = sent.json()
    assert state["waiting"] and not state["can_send"]  # answered while the bot still thinks
    assert [t["role"] for t in state["sides"][0]["turns"]] == ["user"]
    assert ChatTurn.objects.filter(role="user").count() == 1
    following = client.get(urls["state"], **JSON).json()
    assert following["waiting"] and len(following["sides"][0]["turns"]) == 1
    local_bot.server.gate.set()
    assert calls.background_wait(20)
    replied = client.get(urls["state"], **JSON).json()
    assert not replied["waiting"] and replied["can_send"]
    assert [t["role"] for t in replied["sides"][0]["turns"]] == ["user", "system"]
    assert replied["sides"][0]["turns"][1]["text"] == "Hello! What would you like to talk about today?"
    assert len(local_bot.requests) == 1
    # without JavaScript the page reloads itself while the system writes, and not after
    assert b'http-equiv="refresh"' not in client.get(urls["page"]).content


def test_the_page_without_javascript_reloads_while_waiting(client, gated):
    assignment, _, urls = gated
    client.get(urls["page"])
    sent = client.post(urls["turn"], {"form_token": form_tokens.form_token(assignment.token, "chat"),
                                      "client_id": "nojs", "text": "Hello"})
    assert sent.status_code == 302 and sent["Location"] == urls["page"]
    assert b'http-equiv="refresh"' in client.get(urls["page"]).content


def test_a_duplicate_post_is_stored_and_asked_once(client, gated, local_bot):
    assignment, item_id, urls = gated
    client.get(urls["page"])
    first, second = _send(client, assignment, urls["turn"], "same"), _send(client, assignment, urls["turn"], "same")
    assert first.status_code == 200 and second.status_code == 200
    different = _send(client, assignment, urls["turn"], "other", text="Another one")
    assert different.status_code == 409 and "wait for the reply" in different.json()["error"]
    local_bot.server.gate.set()
    assert calls.background_wait(20)
    assert list(ChatTurn.objects.order_by("index").values_list("role", "client_id")) == [("user", "same"),
                                                                                          ("system", "")]
    assert len(local_bot.requests) == 1


def test_a_killed_worker_s_call_is_resumed_by_the_next_look(client, gated, local_bot):
    """The worker that stored the message died before the reply (its process is gone): the page's next
    poll calls the bot again, at once, and the reply is stored once."""
    assignment, item_id, urls = gated
    client.get(urls["page"])
    chatting._begin_turn(assignment, item_id, "Is anybody there?", "lost",
                         f"{calls.HOST}:{_dead_pid()}::deadbeef")  # step 1 only: then the worker was killed
    assert selectors.chat_state(assignment, item_id)["waiting"] and not local_bot.requests
    local_bot.server.gate.set()
    assert client.get(urls["state"], **JSON).status_code == 200  # the poll resumes the call
    assert calls.background_wait(20)
    assert len(local_bot.requests) == 1
    chat = Chat.objects.get()
    assert chat.status == Chat.Status.OPEN and calls.caller_alive(chat.caller) is not False
    assert list(ChatTurn.objects.order_by("index").values_list("role", flat=True)) == ["user", "system"]
    assert client.get(urls["state"], **JSON).status_code == 200
    assert len(local_bot.requests) == 1  # nothing left to resume


def test_a_live_or_unknown_caller_is_not_resumed(gated, local_bot):
    assignment, item_id, _ = gated
    chatting.chat_open(assignment=assignment, item_id=item_id)
    chatting._begin_turn(assignment, item_id, "Hello?", "live", calls.caller_new())  # this process: alive
    assert chatting.chat_replies_resume(assignment=assignment, item_id=item_id) == 0
    Chat.objects.update(caller="another-host:1234:99:abc")  # another machine's worker: the deadline decides
    assert chatting.chat_replies_resume(assignment=assignment, item_id=item_id) == 0
    assert not local_bot.requests


def test_a_superseded_call_stores_no_reply(gated, local_bot):
    """A call that was given up for dead but still answers (the resumed call answered first) is dropped."""
    from studies.chat.client import BotReply

    assignment, item_id, _ = gated
    [opened] = chatting.chat_open(assignment=assignment, item_id=item_id)
    chatting._begin_turn(assignment, item_id, "Hello?", "m", "old-call")
    Chat.objects.update(caller="new-call")
    late = {opened.pk: BotReply(text="late", seconds=1.0, attempts=1)}
    assert chatting._finish_turn(assignment, item_id, late, "old-call").replies == 0
    assert chatting._finish_turn(assignment, item_id, late, "new-call").replies == 1
    assert list(ChatTurn.objects.filter(role="system").values_list("text", flat=True)) == ["late"]


def test_caller_alive_tells_live_dead_recycled_and_foreign_processes():
    me = calls.caller_new()
    assert calls.caller_alive(me) is True
    host, pid, started, _ = me.split(":")
    assert int(pid) == os.getpid()
    assert calls.caller_alive(f"{host}:{_dead_pid()}::x") is False
    if started:  # Linux: the same pid with another start time is another process
        assert calls.caller_alive(f"{host}:{pid}:{int(started) + 1}:x") is False
    assert calls.caller_alive(f"not-{host}:{pid}:{started}:x") is None
    assert calls.caller_alive("") is None


def test_the_page_s_light_poll_costs_one_query_until_the_reply(client, gated, local_bot,
                                                                django_assert_max_num_queries):
    """While the system writes, ``?waiting=1`` answers "unchanged" from one query (no assignment, study
    or item loaded); once the reply is stored it answers the whole state, which says when to look next."""
    assignment, _, urls = gated
    client.get(urls["page"])
    # slot; BEGIN, lock, chats, re-send?, rate limit, the message, transcript, chat marked, COMMIT; the
    # experiment owner's endpoints (1); the state (2)
    with django_assert_max_num_queries(13):
        assert _send(client, assignment, urls["turn"], "m1").json()["waiting"]
    with django_assert_max_num_queries(1):
        assert client.get(urls["state"] + "?waiting=1", **JSON).json() == {"waiting": True, "unchanged": True}
    local_bot.server.gate.set()
    assert calls.background_wait(20)
    state = client.get(urls["state"] + "?waiting=1", **JSON).json()
    assert not state.get("unchanged") and not state["waiting"] and len(state["sides"][0]["turns"]) == 2
    assert 0 < state["reply_expected_ms"] < 20_000


def test_the_light_poll_resumes_a_killed_worker_s_call(client, gated, local_bot):
    assignment, item_id, urls = gated
    client.get(urls["page"])
    chatting._begin_turn(assignment, item_id, "Still there?", "lost", f"{calls.HOST}:{_dead_pid()}::x")
    local_bot.server.gate.set()
    assert client.get(urls["state"] + "?waiting=1", **JSON).json()["unchanged"]  # resumed, still waiting
    assert calls.background_wait(20)
    assert client.get(urls["state"] + "?waiting=1", **JSON).json()["sides"][0]["turns"][-1]["role"] == "system"
    assert len(local_bot.requests) == 1


@pytest.fixture
def shared_cache(monkeypatch, settings):
    """The cache as several nodes share it (this process's cache stands in for Redis)."""
    from django.core.cache import cache

    monkeypatch.setattr(calls, "_cache_shared", lambda: True)
    settings.CHAT_CALLER_LEASE_SECONDS = 30
    cache.clear()
    yield cache
    cache.clear()


def test_another_node_s_caller_is_alive_while_its_lease_lasts(shared_cache, settings, monkeypatch):
    settings.CHAT_NODE_NAME = "node-b"
    theirs = calls.caller_new()  # named on node b: its process's lease is set
    assert theirs.startswith("node-b:")
    settings.CHAT_NODE_NAME = "node-a"  # looked at from node a: no /proc of theirs, the lease says
    assert calls.caller_alive(theirs) is True
    host, pid, started, _ = theirs.split(":")
    shared_cache.delete(calls._lease_key(host, pid, started))  # node b was killed: its lease ended
    assert calls.caller_alive(theirs) is False
    assert calls.caller_alive(f"node-c:{pid}:{started}:x") is False  # a node that never held one
    monkeypatch.setattr(calls, "_cache_shared", lambda: False)  # a per-process cache cannot tell
    assert calls.caller_alive(theirs) is None


def test_a_killed_node_s_call_is_resumed_by_another_node(client, gated, local_bot, shared_cache, settings):
    """Node b stored the message and was killed before the reply: node a's next poll calls the bot
    again once node b's lease has ended, and the reply is stored once."""
    settings.CHAT_NODE_NAME = "node-a"
    assignment, item_id, urls = gated
    client.get(urls["page"])
    shared_cache.set(calls._lease_key("node-b", "4242", "77"), 1)  # node b lives
    chatting._begin_turn(assignment, item_id, "Anyone?", "lost", "node-b:4242:77:abc")
    assert chatting.chat_replies_resume(assignment=assignment, item_id=item_id) == 0
    shared_cache.delete(calls._lease_key("node-b", "4242", "77"))  # killed: the lease is not renewed
    local_bot.server.gate.set()
    assert client.get(urls["state"] + "?waiting=1", **JSON).json()["unchanged"]  # resumed, still waiting
    assert calls.background_wait(20)
    assert client.get(urls["state"] + "?waiting=1", **JSON).json()["sides"][0]["turns"][-1]["role"] == "system"
    assert len(local_bot.requests) == 1
    assert Chat.objects.get().caller.startswith("node-a:")
