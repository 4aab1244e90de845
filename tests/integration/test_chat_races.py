"""Against real PostgreSQL and the local bot server: concurrent turns of one assignment. The turn's
first step locks the assignment row (SELECT ... FOR UPDATE), so of several messages sent at once one is
stored and answered and the others are refused while it waits; the same message sent several times at
once (a double click, a retried fetch) is stored once and the bot asked once; opening one chat from
several tabs at once makes one chat; and messages to two items of one assignment are both answered."""
import pytest

from studies.chat import services as chat
from studies.models import Chat, ChatTurn, Conversation
from tests.integration.concurrency import at_once
from tests.studies.chat.helpers import bot_system, chat_study, started_assignment

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def slow_study(user, loopback_allowed, local_bot):
    """A chat study whose bot takes a while (1 s), so the first message is still waiting when the others arrive."""
    local_bot.server.slow_seconds = 1.0
    bot_system("slowbot", local_bot.url("slow"), timeout=5, retries=0)
    return chat_study(user, ["slowbot"], unit_config={"max_turns": 10, "messages_per_minute": 60},
                      items_per_assignment=2)


def test_concurrent_messages_of_one_assignment_store_one_turn(slow_study, local_bot):
    assignment = started_assignment(slow_study)
    item_id = slow_study.items.first().pk
    chat.chat_open(assignment=assignment, item_id=item_id)

    def send(n):
        return chat.chat_turn_post(assignment=assignment, item_id=item_id, text=f"message {n}", client_id=f"id-{n}")

    outcomes = at_once(range(6), send)
    stored = [o for o in outcomes if isinstance(o, chat.TurnOutcome)]
    refused = [o for o in outcomes if isinstance(o, chat.ChatRefused)]
    assert len(stored) == 1 and len(refused) == 5, outcomes
    assert all("wait for the reply" in str(r) for r in refused)
    assert stored[0].replies == 1
    turns = list(ChatTurn.objects.order_by("index").values_list("index", "role"))
    assert turns == [(0, "user"), (1, "system")]
    assert len(local_bot.requests) == 1
    conversation = Conversation.objects.get(chat__assignment=assignment)
    assert [t["speaker"] for t in conversation.turns] == ["user", "system"]


def test_the_same_message_sent_at_once_is_stored_once(slow_study, local_bot):
    assignment = started_assignment(slow_study)
    item_id = slow_study.items.first().pk
    chat.chat_open(assignment=assignment, item_id=item_id)

    def send(_):
        return chat.chat_turn_post(assignment=assignment, item_id=item_id, text="hello", client_id="one-message")

    outcomes = at_once(range(5), send)
    assert not [o for o in outcomes if isinstance(o, Exception)], outcomes
    assert sum(o.stored for o in outcomes) == 1
    assert ChatTurn.objects.filter(role="user").count() == 1
    assert ChatTurn.objects.filter(role="system").count() == 1
    assert len(local_bot.requests) == 1


def test_opening_one_chat_from_several_tabs_makes_one_chat(slow_study):
    assignment = started_assignment(slow_study)
    item_id = slow_study.items.first().pk
    outcomes = at_once(range(5), lambda _: chat.chat_open(assignment=assignment, item_id=item_id))
    assert not [o for o in outcomes if isinstance(o, Exception)], outcomes
    assert Chat.objects.filter(assignment=assignment).count() == 1
    assert {o[0].pk for o in outcomes} == {Chat.objects.get().pk}
    assert Conversation.objects.filter(chat__assignment=assignment).count() == 1


def test_messages_to_two_items_of_one_assignment_are_both_answered(slow_study):
    assignment = started_assignment(slow_study)
    items = list(slow_study.items.order_by("position").values_list("pk", flat=True))
    assert len(items) == 1  # one system: one item; add a second system for a second item
    from studies.models import AssignmentItem, StudyItem, StudyItemSystem, System

    second = StudyItem.objects.create(study=slow_study, position=1)
    StudyItemSystem.objects.create(item=second, system=System.objects.get(name="slowbot"), position=0)
    AssignmentItem.objects.create(assignment=assignment, item=second, position=1, response_order=[])
    items.append(second.pk)
    for item_id in items:
        chat.chat_open(assignment=assignment, item_id=item_id)

    outcomes = at_once(items, lambda item_id: chat.chat_turn_post(assignment=assignment, item_id=item_id,
                                                                    text="hi", client_id=f"for-{item_id}"))
    assert [o.replies for o in outcomes] == [1, 1], outcomes
    assert ChatTurn.objects.filter(role="system").count() == 2


def test_one_raters_turn_does_not_wait_for_anothers_lock(user, loopback_allowed, local_bot):
    """A turn locks its own assignment row only (FOR UPDATE OF): a lock on the joined study row would make
    every chat turn of a study wait for every other, and a burst of raters' turns queue one behind another
    while each holds a web worker. Rater B's message is stored and answered, and the reply
    stored, while rater A's turn holds its lock; the study row stays free for a lock that does not wait."""
    import threading

    from django.db import connection, transaction

    from studies.models import Study

    bot_system("quickbot", local_bot.url("rule"), timeout=5, retries=0)
    study = chat_study(user, ["quickbot"], unit_config={"max_turns": 10, "messages_per_minute": 60})
    first, second = started_assignment(study, "w-a"), started_assignment(study, "w-b")
    item_id = study.items.first().pk
    chat.chat_open(assignment=first, item_id=item_id)
    held, release = threading.Event(), threading.Event()

    def hold_first() -> None:
        try:
            with transaction.atomic():
                chat._locked(first)
                held.set()
                release.wait(20)
        finally:
            connection.close()

    holder = threading.Thread(target=hold_first)
    holder.start()
    try:
        assert held.wait(10)
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '2s'")  # a wait for A's lock fails the test, not hangs it
            chat.chat_open(assignment=second, item_id=item_id)
            outcome = chat.chat_turn_post(assignment=second, item_id=item_id, text="hello", client_id="b-1")
            assert outcome.stored and outcome.replies == 1
            Study.objects.select_for_update(nowait=True).get(pk=study.pk)  # not held by A's turn either
    finally:
        release.set()
        holder.join(20)
    assert ChatTurn.objects.filter(chat__assignment=second).count() == 2
