"""What a chat message costs the server in queries, bounded: the turn's POST, the page's looks at the state
while the bot writes and once it has replied, and the storing of the reply. None of them grows with the
length of the chat (no query per turn). The bounds are SQLite's counts (its BEGIN and COMMIT are queries
there); PostgreSQL runs fewer."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from studies.chat import calls
from studies.chat import services as chatting
from studies.chat.client import BotReply
from studies.models import Chat
from studies.rating import form_tokens
from tests.studies.chat.helpers import bot_system, chat_study, started_assignment

pytestmark = pytest.mark.django_db(transaction=True)
JSON = {"HTTP_ACCEPT": "application/json"}
TURN_QUERIES = 10  # the slot, the lock, the chats, the re-send and rate check, the writes, the endpoint
LOOK_WAITING_QUERIES = 1  # the waiting chats alone
LOOK_REPLIED_QUERIES = 2  # that, then the chats with their transcripts, the assignment and the study
STORE_QUERIES = 7  # the lock, the chats, the reply, the transcript, the chat's status (and SQLite's BEGIN/COMMIT)


@pytest.fixture
def gated(user, local_bot, loopback_allowed, settings):
    settings.CHAT_BACKGROUND_REPLIES = True
    bot_system("gated", local_bot.url("gate"), timeout=20, retries=0)
    study = chat_study(user, ["gated"], unit_config={"max_turns": 10, "messages_per_minute": 60})
    assignment = started_assignment(study)
    urls = {name: reverse(f"chat:{name}", args=[assignment.token, 0]) for name in ("page", "turn", "state")}
    yield assignment, study.items.get().pk, urls
    local_bot.server.gate.set()
    assert calls.background_wait(30)


def _counted(call) -> tuple[object, int]:
    with CaptureQueriesContext(connection) as queries:
        answer = call()
    return answer, len(queries.captured_queries)


def test_a_message_and_the_looks_at_its_reply_stay_within_their_query_budgets(client, gated, local_bot):
    assignment, _, urls = gated
    client.get(urls["page"])
    token = form_tokens.form_token(assignment.token, "chat")
    for n in range(3):  # the third costs what the first did: nothing is read per turn
        local_bot.server.gate.clear()
        sent, queries = _counted(lambda: client.post(  # noqa: B023
            urls["turn"], {"form_token": token, "client_id": f"m{n}", "text": f"Hello {n}"}, **JSON))  # noqa: B023
        assert sent.status_code == 200 and sent.json()["waiting"]
        assert queries <= TURN_QUERIES, queries
        looked, queries = _counted(lambda: client.get(urls["state"] + "?waiting=1", **JSON))
        assert looked.json() == {"waiting": True, "unchanged": True}
        assert queries <= LOOK_WAITING_QUERIES, queries
        local_bot.server.gate.set()
        assert calls.background_wait(20)
        replied, queries = _counted(lambda: client.get(urls["state"] + "?waiting=1", **JSON))
        state = replied.json()
        assert not state["waiting"] and [t["role"] for t in state["sides"][0]["turns"]][-2:] == ["user", "system"]
        assert len(state["sides"][0]["turns"]) == 2 * (n + 1)
        assert queries <= LOOK_REPLIED_QUERIES, queries


def test_storing_a_reply_stays_within_its_query_budget(gated):
    assignment, item_id, _ = gated
    [opened] = chatting.chat_open(assignment=assignment, item_id=item_id)
    chatting._begin_turn(assignment, item_id, "Hello?", "m", "this-call")
    reply = {opened.pk: BotReply(text="Hi there", seconds=0.5, attempts=1)}
    outcome, queries = _counted(lambda: chatting._finish_turn(assignment, item_id, reply, "this-call", max_turns=10))
    assert outcome.replies == 1 and Chat.objects.get().status == Chat.Status.OPEN
    assert queries <= STORE_QUERIES, queries
