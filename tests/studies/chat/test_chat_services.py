"""Chat services against the real local bot server: turns with per-turn timing mirrored into the
conversation, min/max turns, message length and rate limits, a re-sent message stored once, the failing
bots (slow, erroring, garbage) leaving the rater's message stored with retry and end offered, and side by
side chats. Endpoint keys are stored encrypted and never leave the server except to the bot."""
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from studies.chat import endpoints, keys, selectors
from studies.chat import services as chat
from studies.chat.config import chat_config_clean
from studies.models import AssignmentItem, Chat, ChatTurn, Conversation, System, SystemEndpoint
from tests.studies.chat.helpers import bot_system, chat_study, started_assignment

pytestmark = pytest.mark.django_db


@pytest.fixture
def rule_study(user, local_bot, loopback_allowed):
    bot_system("rulebot", local_bot.url("rule"), key="sk-rule-secret")
    return chat_study(user, ["rulebot"])


def test_chat_turns_are_stored_with_timing_and_mirrored_into_the_conversation(rule_study, local_bot):
    assignment = started_assignment(rule_study)
    item = rule_study.items.get()
    [opened] = chat.chat_open(assignment=assignment, item_id=item.pk)
    slot = AssignmentItem.objects.get(assignment=assignment, item=item)
    assert slot.response_order == [opened.conversation_id]  # the transcript is what gets rated
    outcome = chat.chat_turn_post(assignment=assignment, item_id=item.pk, text="Hello bot", client_id="m1")
    assert (outcome.stored, outcome.replies, outcome.failures) == (True, 1, 0)
    chat.chat_turn_post(assignment=assignment, item_id=item.pk, text="I feel happy today", client_id="m2")
    conversation = Conversation.objects.get(pk=opened.conversation_id)
    assert [(t["speaker"], t["text"]) for t in conversation.turns] == [
        ("user", "Hello bot"), ("system", "Hello! What would you like to talk about today?"),
        ("user", "I feel happy today"), ("system", "Why do you feel happy today?")]
    assert all(t["seconds"] is not None and t["seconds"] >= 0 and t["time"] for t in conversation.turns)
    assert conversation.metadata == {"system": "rulebot", "source": "chat", "study": rule_study.slug,
                                     "assignment": assignment.pk}
    assert conversation.corpus.slug == f"chat-{rule_study.slug}"
    assert local_bot.requests[-1]["body"]["turns"] == [{"speaker": t["speaker"], "text": t["text"]}
                                                       for t in conversation.turns[:3]]
    assert local_bot.requests[-1]["headers"]["Authorization"] == "Bearer sk-rule-secret"
    state = selectors.chat_state(assignment, item.pk)
    assert state["exchanges"] == 2 and state["can_end"] and state["can_send"] and not state["ended"]
    assert [t["who"] for t in state["sides"][0]["turns"]] == ["You", "Bot", "You", "Bot"]
    assert "rulebot" not in str(state)  # the rater never learns which system


def test_chat_min_and_max_turns(rule_study):
    assignment = started_assignment(rule_study)
    item_id = rule_study.items.get().pk
    chat.chat_open(assignment=assignment, item_id=item_id)
    chat.chat_turn_post(assignment=assignment, item_id=item_id, text="hi", client_id="a")
    with pytest.raises(chat.ChatRefused, match="at least 2 turns"):
        chat.chat_end(assignment=assignment, item_id=item_id)
    for n in range(3):
        chat.chat_turn_post(assignment=assignment, item_id=item_id, text=f"message {n}", client_id=f"b{n}")
    [ended] = Chat.objects.filter(assignment=assignment)
    assert (ended.status, ended.end_reason) == (Chat.Status.ENDED, Chat.EndReason.MAX_TURNS)  # 4 = max_turns
    with pytest.raises(chat.ChatRefused, match="has ended"):
        chat.chat_turn_post(assignment=assignment, item_id=item_id, text="one more", client_id="c")
    assert ChatTurn.objects.filter(chat=ended).count() == 8
    assert selectors.chat_ended(assignment, item_id)


def test_chat_message_length_and_content_are_checked_and_nothing_is_stored(rule_study):
    assignment = started_assignment(rule_study)
    item_id = rule_study.items.get().pk
    chat.chat_open(assignment=assignment, item_id=item_id)
    for text, words in [("   ", "type a message"), ("x" * 501, "at most 500 characters (this one has 501)"),
                        ("bad\x00byte", "control characters")]:
        with pytest.raises(chat.ChatRefused, match=words.replace("(", r"\(").replace(")", r"\)")) as caught:
            chat.chat_turn_post(assignment=assignment, item_id=item_id, text=text, client_id="x")
        assert caught.value.status == 400 and caught.value.field == "text"
    assert not ChatTurn.objects.exists()


def test_chat_rate_limit_per_assignment(user, local_bot, loopback_allowed):
    bot_system("rulebot", local_bot.url("rule"))
    study = chat_study(user, ["rulebot"], unit_config={"messages_per_minute": 2, "max_turns": 10})
    assignment = started_assignment(study)
    item_id = study.items.get().pk
    chat.chat_open(assignment=assignment, item_id=item_id)
    chat.chat_turn_post(assignment=assignment, item_id=item_id, text="one", client_id="1")
    chat.chat_turn_post(assignment=assignment, item_id=item_id, text="two", client_id="2")
    with pytest.raises(chat.ChatRefused, match="sending messages quickly") as caught:
        chat.chat_turn_post(assignment=assignment, item_id=item_id, text="three", client_id="3")
    assert caught.value.status == 429 and 1 <= caught.value.retry_after <= 61
    assert ChatTurn.objects.filter(role="user").count() == 2
    ChatTurn.objects.update(created_at=timezone.now() - timedelta(seconds=61))  # a minute later
    assert chat.chat_turn_post(assignment=assignment, item_id=item_id, text="three", client_id="3").replies == 1


def test_chat_resent_message_is_stored_once(rule_study, local_bot):
    assignment = started_assignment(rule_study)
    item_id = rule_study.items.get().pk
    chat.chat_open(assignment=assignment, item_id=item_id)
    first = chat.chat_turn_post(assignment=assignment, item_id=item_id, text="hello", client_id="same-id")
    again = chat.chat_turn_post(assignment=assignment, item_id=item_id, text="hello", client_id="same-id")
    assert first.stored and not again.stored
    assert ChatTurn.objects.count() == 2 and len(local_bot.requests) == 1


@pytest.mark.parametrize(("bot", "kind", "rater_message"), [
    ("slow", "timeout", "The system did not answer in time."),
    ("error", "status", "The system answered with an error."),
    ("garbage", "reply", "The system's answer could not be read."),
])
def test_chat_failing_bots_keep_the_message_and_offer_retry_or_end(user, local_bot, loopback_allowed, bot, kind,
                                                                   rater_message):
    bot_system(f"{bot}bot", local_bot.url(bot), timeout=0.5, retries=1)
    study = chat_study(user, [f"{bot}bot"])
    assignment = started_assignment(study)
    item_id = study.items.get().pk
    chat.chat_open(assignment=assignment, item_id=item_id)
    outcome = chat.chat_turn_post(assignment=assignment, item_id=item_id, text="Are you there?", client_id="q")
    assert (outcome.replies, outcome.failures) == (0, 1)
    [failed] = Chat.objects.filter(assignment=assignment)
    assert failed.status == Chat.Status.FAILED and failed.error_kind == kind and failed.failures == 1
    assert list(failed.turns.values_list("role", "text")) == [("user", "Are you there?")]  # nothing lost
    state = selectors.chat_state(assignment, item_id)
    assert state["sides"][0]["error"] == rater_message
    assert state["can_retry"] and state["can_end"] and not state["can_send"]
    with pytest.raises(chat.ChatRefused, match="try again or end"):
        chat.chat_turn_post(assignment=assignment, item_id=item_id, text="hello?", client_id="r")
    assert chat.chat_reply_retry(assignment=assignment, item_id=item_id).failures == 1  # still failing
    failed.refresh_from_db()
    assert failed.failures == 2 and failed.turns.count() == 1
    chat.chat_end(assignment=assignment, item_id=item_id)  # allowed below min_turns after a failure
    failed.refresh_from_db()
    assert (failed.status, failed.end_reason) == (Chat.Status.ENDED, Chat.EndReason.BOT_FAILED)


def test_chat_retry_recovers_when_the_bot_answers_again(user, local_bot, loopback_allowed):
    system = bot_system("flip", local_bot.url("error"), retries=0)
    study = chat_study(user, ["flip"])
    assignment = started_assignment(study)
    item_id = study.items.get().pk
    chat.chat_open(assignment=assignment, item_id=item_id)
    chat.chat_turn_post(assignment=assignment, item_id=item_id, text="hello", client_id="1")
    endpoints.endpoint_set(owner=user, system=system, protocol="openai", url=local_bot.url("rule", "openai"), retries=0)
    assert chat.chat_reply_retry(assignment=assignment, item_id=item_id).replies == 1
    [recovered] = Chat.objects.filter(assignment=assignment)
    assert recovered.status == Chat.Status.OPEN and recovered.error == ""
    assert [t["speaker"] for t in recovered.conversation.turns] == ["user", "system"]  # one user turn, not two


def test_chat_stale_wait_counts_as_failed_and_can_be_retried(rule_study, settings):
    """A server that stopped between storing the rater's message and storing the reply leaves the chat
    waiting; once the deadline has long passed the rater may ask again, and the message is answered."""
    assignment = started_assignment(rule_study)
    item_id = rule_study.items.get().pk
    [opened] = chat.chat_open(assignment=assignment, item_id=item_id)
    chat._begin_turn(assignment, item_id, "Is anybody there?", "lost")  # step 1 only: the process died here
    assert selectors.chat_state(assignment, item_id)["waiting"]
    long_ago = timezone.now() - timedelta(seconds=settings.CHAT_REPLY_DEADLINE_SECONDS + 60)
    Chat.objects.filter(pk=opened.pk).update(waiting_since=long_ago)
    state = selectors.chat_state(assignment, item_id)
    assert state["can_retry"] and not state["waiting"]
    assert chat.chat_reply_retry(assignment=assignment, item_id=item_id).replies == 1
    opened.refresh_from_db()
    assert opened.status == Chat.Status.OPEN
    assert [t["speaker"] for t in opened.conversation.turns] == ["user", "system"]


def test_chat_side_by_side_sends_each_message_to_both_systems(user, local_bot, loopback_allowed):
    bot_system("alpha", local_bot.url("rule"))
    bot_system("beta", local_bot.url("rule", "openai"), protocol="openai")
    study = chat_study(user, ["alpha", "beta"], unit_config={"systems_per_chat": 2}, design="bws",
                       design_config={"tuple_size": 2})
    assignment = started_assignment(study)
    item_id = study.items.get().pk
    chats = chat.chat_open(assignment=assignment, item_id=item_id)
    assert sorted(c.system.name for c in chats) == ["alpha", "beta"]
    chat.chat_turn_post(assignment=assignment, item_id=item_id, text="hi", client_id="1")
    for opened in chats:
        opened.conversation.refresh_from_db()
        assert [t["text"] for t in opened.conversation.turns] == ["hi", "Hello! What would you like to talk about today?"]
    assert sorted(r["bot"] for r in local_bot.requests) == ["rule", "rule"]
    state = selectors.chat_state(assignment, item_id)
    assert [s["letter"] for s in state["sides"]] == ["A", "B"]


def test_chat_items_need_systems_with_endpoints(user, local_bot, loopback_allowed):
    System.objects.create(name="mute")
    with pytest.raises(ValidationError) as caught:
        chat_study(user, ["mute"])
    assert "mute: no endpoint of this experiment's owner" in str(caught.value)
    with pytest.raises(ValidationError, match="ghost: no endpoint"):
        chat_study(user, ["ghost"])
    bot_system("one", local_bot.url("rule"))
    bot_system("two", local_bot.url("rule"))
    bot_system("three", local_bot.url("rule"))
    side_by_side = {"unit_config": {"systems_per_chat": 2}, "design": "bws", "design_config": {"tuple_size": 2}}
    study = chat_study(user, ["one", "two", "three"], publish=False, **side_by_side)
    assert study.items.count() == 3  # every pair once
    assert sorted(len(i.item_systems.all()) for i in study.items.all()) == [2, 2, 2]
    with pytest.raises(ValidationError, match="at least 2 systems"):
        chat_study(user, ["one"], **side_by_side)


def test_chat_unit_refuses_designs_that_cannot_judge_chats(user):
    from studies.authoring import services as authoring

    experiment = authoring.experiment_create(owner=user, title="refusals")

    def refusal(design, design_config=None, unit_config=None):
        with pytest.raises(ValidationError) as caught:
            authoring.study_create(experiment=experiment, title="x", design=design, unit="chat",
                                   design_config=design_config, unit_config=unit_config)
        return caught.value.message_dict

    assert "anchor dialogue" in refusal("rme")["unit"][0]
    assert "unit" in refusal("pairwise") and "unit" in refusal("bme") and "unit" in refusal("bws_tuples")
    assert "choose BWS" in refusal("likert", unit_config={"systems_per_chat": 2})["unit_config.systems_per_chat"][0]
    assert "side by side" in refusal("bws", unit_config={"systems_per_chat": 1})["unit_config.systems_per_chat"][0]
    ranked = authoring.study_create(experiment=experiment, title="ranked", design="bws", unit="chat")
    assert ranked.unit_config["systems_per_chat"] == 2  # a ranking design chats side by side by default
    assert "unit_config.max_turns" in refusal("likert", unit_config={"min_turns": 9, "max_turns": 3})
    study = authoring.study_create(experiment=experiment, title="ok", design="likert", unit="chat",
                                   unit_config={"min_turns": 2})
    assert study.unit_config["min_turns"] == 2 and study.unit_config["max_turns"] == 10
    assert [c.name for c in study.criteria.all()] == ["coherence", "engagingness", "overall"]
    plain = authoring.study_create(experiment=experiment, title="plain", design="likert")
    assert plain.unit_config == {}
    with pytest.raises(ValidationError, match="takes no settings"):
        authoring.study_create(experiment=experiment, title="y", design="likert", unit_config={"min_turns": 2})


def test_chat_config_is_cleaned_with_field_errors():
    assert chat_config_clean(None)["min_turns"] == 3
    with pytest.raises(ValidationError) as caught:
        chat_config_clean({"min_turns": 5, "max_turns": 2, "messages_per_minute": 0, "colour": "red"})
    errors = caught.value.message_dict
    assert "unit_config.messages_per_minute" in errors and "colour" in errors["unit_config"][0]
    with pytest.raises(ValidationError, match="at least min_turns"):
        chat_config_clean({"min_turns": 5, "max_turns": 2})


def test_chat_endpoint_key_is_stored_encrypted_and_refused_addresses_are_named(user, settings):
    system = System.objects.create(name="cloudbot")
    with pytest.raises(ValidationError) as caught:
        endpoints.endpoint_set(owner=user, system=system, protocol="openai", url="http://169.254.169.254/v1", key="k")
    assert "link-local" in caught.value.message_dict["url"][0]
    with pytest.raises(ValidationError) as caught:
        endpoints.endpoint_set(owner=user, system=system, protocol="openai", url="http://10.0.0.8/v1")
    assert "private" in caught.value.message_dict["url"][0]
    with pytest.raises(ValidationError) as caught:
        endpoints.endpoint_set(owner=user, system=system, protocol="openai", url="https://8.8.8.8/v1", key_env="DJANGO_SECRET_KEY")
    assert "CONCORD_BOT_KEY_" in caught.value.message_dict["key_env"][0]
    endpoint = endpoints.endpoint_set(owner=user, system=system, protocol="openai", url="https://8.8.8.8/v1", key="sk-live-42")
    stored = SystemEndpoint.objects.get(pk=endpoint.pk)
    assert "sk-live-42" not in stored.key_encrypted and stored.key_encrypted
    assert endpoints.endpoint_for_call(stored).key == "sk-live-42"
    settings.SECRET_KEY = "another-secret-key-for-this-test-only-0123456789"
    with pytest.raises(Exception, match="cannot be decrypted"):
        endpoints.endpoint_for_call(stored)


def test_chat_endpoint_key_from_the_environment(user, monkeypatch):
    system = System.objects.create(name="envbot")
    endpoint = endpoints.endpoint_set(owner=user, system=system, protocol="concord", url="https://8.8.8.8/bot",
                                      key_env="CONCORD_BOT_KEY_ENVBOT")
    with pytest.raises(Exception, match="CONCORD_BOT_KEY_ENVBOT is not set"):
        endpoints.endpoint_for_call(endpoint)
    monkeypatch.setenv("CONCORD_BOT_KEY_ENVBOT", "sk-from-env")
    assert endpoints.endpoint_for_call(endpoint).key == "sk-from-env"
    assert keys.env_name_problem("CONCORD_BOT_KEY_X") is None and keys.env_name_problem("PATH")
