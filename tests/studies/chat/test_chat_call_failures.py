"""Whatever a chat's background call thread raises ends the turn as failed, inside the reply deadline,
with the page's Try again: a bot answering JSON nested 100,000 deep (RecursionError in the parser, not
ValueError), an unexpected exception in the call, and one while storing its outcome. The bot is the real
local server (studies.chat.local_bot)."""
import time

import pytest
from django.urls import reverse

from studies.chat import calls
from studies.chat import services as chatting
from studies.chat.client import BotError, Endpoint, bot_reply
from studies.models import Chat, ChatTurn
from studies.rating import form_tokens
from tests.studies.chat.conftest import LOOPBACK
from tests.studies.chat.helpers import bot_system, chat_study, started_assignment

JSON = {"HTTP_ACCEPT": "application/json"}


def test_a_bot_answering_deeply_nested_json_is_a_reply_failure(local_bot):
    started = time.monotonic()
    with pytest.raises(BotError) as failed:
        bot_reply(Endpoint(protocol="concord", url=local_bot.url("deep"), timeout=5, retries=1), [
            {"speaker": "user", "text": "Hello"}], deadline_seconds=10, allowed=LOOPBACK)
    assert failed.value.kind == "reply" and "nested too deep" in str(failed.value)
    assert time.monotonic() - started < 10


@pytest.fixture
def chatting_in_background(user, local_bot, loopback_allowed, settings):
    """A started chat assignment whose replies are fetched in the call threads, and its page's URLs."""
    settings.CHAT_BACKGROUND_REPLIES = True

    def make(bot: str):
        bot_system(bot, local_bot.url(bot), timeout=5, retries=1)
        study = chat_study(user, [bot], unit_config={"max_turns": 10, "messages_per_minute": 60})
        assignment = started_assignment(study)
        urls = {name: reverse(f"chat:{name}", args=[assignment.token, 0]) for name in ("page", "turn", "state")}
        return assignment, study.items.get().pk, urls

    yield make
    local_bot.server.gate.set()
    assert calls.background_wait(30)


def _send_and_wait(client, assignment, urls):
    assert client.get(urls["page"]).status_code == 200
    sent = client.post(urls["turn"], {"form_token": form_tokens.form_token(assignment.token, "chat"),
                                      "client_id": "m1", "text": "Hello there"}, **JSON)
    # sent, and waiting, unless a call that fails at once has already ended the turn: either way the
    # background call ends within the deadline and the state below tells how
    assert sent.status_code == 200, sent.content[:300]
    started = time.monotonic()
    assert calls.background_wait(25)  # the reply deadline
    assert time.monotonic() - started < 25
    return client.get(urls["state"], **JSON).json()


@pytest.mark.django_db(transaction=True)
def test_a_chat_bot_s_deep_json_fails_the_turn_with_try_again(client, chatting_in_background):
    assignment, _, urls = chatting_in_background("deep")
    state = _send_and_wait(client, assignment, urls)
    assert not state["waiting"] and state["failed"] and state["can_retry"]
    assert state["sides"][0]["error"] == "The system's answer could not be read."
    chat = Chat.objects.get()
    assert chat.status == Chat.Status.FAILED and chat.error_kind == "reply" and "nested too deep" in chat.error
    assert b"Try again" in client.get(urls["page"]).content


@pytest.mark.django_db(transaction=True)
def test_any_exception_in_a_chat_call_thread_fails_the_turn(client, chatting_in_background, monkeypatch):
    def broken(*args, **kwargs):
        raise KeyError("something nobody expected")

    monkeypatch.setattr(chatting, "bot_reply", broken)
    assignment, _, urls = chatting_in_background("rule")
    state = _send_and_wait(client, assignment, urls)
    assert not state["waiting"] and state["can_retry"]
    chat = Chat.objects.get()
    assert chat.status == Chat.Status.FAILED and "KeyError" in chat.error
    assert list(ChatTurn.objects.values_list("role", flat=True)) == ["user"]  # the message is kept
    monkeypatch.undo()  # the bot works again: Try again gets its reply
    retried = client.post(reverse("chat:retry", args=[assignment.token, 0]),
                          {"form_token": form_tokens.form_token(assignment.token, "chat")}, **JSON)
    assert retried.status_code == 200
    assert calls.background_wait(25)
    assert client.get(urls["state"], **JSON).json()["can_send"]


@pytest.mark.django_db(transaction=True)
def test_an_exception_while_storing_a_chat_reply_fails_the_turn(client, chatting_in_background, monkeypatch):
    calls_made = []

    def broken(*args, **kwargs):
        calls_made.append(1)
        raise RuntimeError("the database hiccuped")

    monkeypatch.setattr(chatting, "_finish_turn", broken)
    assignment, _, urls = chatting_in_background("rule")
    state = _send_and_wait(client, assignment, urls)
    assert calls_made  # the storing was tried, and failed
    assert not state["waiting"] and state["can_retry"]
    assert Chat.objects.get().status == Chat.Status.FAILED
