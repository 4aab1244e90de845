"""Check items of chat studies (a scripted bot reply): written on the checks page and in the API, refused by
field, shown in place of the bot's reply at the set turn (the real local bot server is not asked for it),
scored for a careful and a careless rater, left out of the system's conversations and chat report, and
hidden from another researcher."""
import pytest
from django.core.exceptions import ValidationError
from rest_framework.test import APIClient

from studies.authoring import checks
from studies.authoring import services as authoring
from studies.chat import selectors
from studies.chat import services as chatting
from studies.chat.check_turns import check_reply_number
from studies.designs import unit_for
from studies.models import Chat, Conversation, Study
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from studies.rating.entry import rater_get_or_create
from tests.factories import token_for
from tests.problems import problem_fields
from tests.studies.chat.helpers import bot_system, chat_study, started_assignment

pytestmark = pytest.mark.django_db

INSULT = "Your question is stupid and so are you. Anyway, bananas are purple."
LOW = [{"criterion": "overall", "response": 1, "max": 2}]


@pytest.fixture
def draft(user, local_bot, loopback_allowed):
    bot_system("rulebot", local_bot.url("rule"))
    return chat_study(user, ["rulebot"], publish=False)


def _scripted_check(study: Study, position=2, rules=None):
    return checks.check_item_create(study=study, kind="gold", scripted_reply=INSULT, position=position,
                                    rules=rules or LOW)


def _chat_and_rate(study: Study, worker: str, *, careful: bool):
    """A rater through the entry path: 3 messages per chat, then 3 on every criterion of a regular chat, and
    on the check's chat 1 (careful: the insult noticed) or 5 (careless)."""
    assignment = rater_entry.assignment_start(study=study, rater=rater_get_or_create(platform="invite",
                                                                                     external_id=worker), seed=11)
    answering.assignment_consent(assignment=assignment)
    for slot in assignment.assignment_items.select_related("item").order_by("position"):
        [opened] = chatting.chat_open(assignment=assignment, item_id=slot.item_id)
        for n, line in enumerate(["Hello!", "I feel happy today", "What is the weather like?"]):
            chatting.chat_turn_post(assignment=assignment, item_id=slot.item_id, text=line, client_id=str(n))
        chatting.chat_end(assignment=assignment, item_id=slot.item_id)
        value = 3 if not slot.item.check_kind else (1 if careful else 5)
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, seconds=5.0,
                                 answers={c: {opened.conversation_id: value}
                                          for c in study.criteria.values_list("name", flat=True)})
    return answering.assignment_submit(assignment=assignment)


def test_chat_check_scored_pass_for_a_careful_rater_and_fail_for_a_careless_one(draft, local_bot):
    item = _scripted_check(draft)
    checks.study_checks_configure(study=draft, per_assignment=1)
    authoring.study_publish(study=draft)
    careful, careless = _chat_and_rate(draft, "careful", careful=True), _chat_and_rate(draft, "careless", careful=False)
    assert (careful.checks_shown, careful.checks_passed, careful.checks_failed) == (1, 1, False)
    assert (careless.checks_shown, careless.checks_passed, careless.checks_failed) == (1, 0, True)
    for chat in Chat.objects.filter(item=item).select_related("conversation"):
        turns = chat.conversation.turns
        bot = [t for t in turns if t["speaker"] == "system"]
        assert [t["text"] for t in bot if t.get("check")] == [INSULT] and bot[1]["text"] == INSULT  # the 2nd reply
        assert sum(1 for t in turns if t.get("check")) == 1


def test_chat_check_turn_does_not_call_the_bot(draft, local_bot):
    item = _scripted_check(draft, position=2)
    authoring.study_publish(study=draft)
    assignment = started_assignment(draft)
    [opened] = chatting.chat_open(assignment=assignment, item_id=item.pk)
    asked = []
    for n, line in enumerate(["Hello bot", "I feel happy today", "What now?"]):
        before = len(local_bot.requests)
        outcome = chatting.chat_turn_post(assignment=assignment, item_id=item.pk, text=line, client_id=str(n))
        asked.append(len(local_bot.requests) - before)
        assert (outcome.stored, outcome.replies, outcome.failures) == (True, 1, 0)
    assert asked == [1, 0, 1]  # the scripted 2nd reply is not asked of the bot
    turns = Conversation.objects.get(pk=opened.conversation_id).turns
    assert [t["speaker"] for t in turns] == ["user", "system"] * 3
    assert turns[3]["text"] == INSULT and turns[3]["check"] is True
    assert not turns[1].get("check") and not turns[5].get("check")
    assert turns[5]["text"] != INSULT
    state = selectors.chat_state(assignment, item.pk)
    assert [t["text"] for t in state["sides"][0]["turns"]][3] == INSULT  # the rater sees it as the bot's


def test_chat_check_at_random_turn_is_before_the_rater_may_end_and_fixed_per_rater(draft):
    item = _scripted_check(draft, position=None)
    authoring.study_publish(study=draft)
    numbers = set()
    for worker in ("w1", "w2", "w3", "w4", "w5", "w6"):
        assignment = started_assignment(draft, worker)
        assignment.seed = hash(worker) % 1000
        assignment.save(update_fields=["seed"])
        [opened] = chatting.chat_open(assignment=assignment, item_id=item.pk)
        number = check_reply_number(opened)
        assert number == check_reply_number(Chat.objects.get(pk=opened.pk))
        numbers.add(number)
    assert numbers <= {1, 2}  # min_turns is 2


def test_chat_check_excluded_from_the_systems_conversations_and_chat_report(draft, local_bot):
    item = _scripted_check(draft)
    checks.study_checks_configure(study=draft, per_assignment=1)
    authoring.study_publish(study=draft)
    _chat_and_rate(draft, "careful", careful=True)
    check_conversation = Chat.objects.get(item=item).conversation_id
    regular = Chat.objects.exclude(item=item).get(item__study=draft).conversation_id
    shown = set(unit_for(draft).conversations(draft).values_list("pk", flat=True))
    assert regular in shown and check_conversation not in shown
    [row] = selectors.chat_summary([draft])
    assert row["chats"] == 1 and row["replies_per_chat"] == 3


def test_chat_check_refusals_name_the_field(draft, user, local_bot):
    with pytest.raises(ValidationError) as refused:
        checks.check_item_create(study=draft, kind="gold", scripted_reply="  ", position=1, rules=LOW)
    assert set(refused.value.message_dict) == {"scripted_reply"}
    with pytest.raises(ValidationError) as refused:
        _scripted_check(draft, position=3)  # min_turns 2: the rater could end before it
    assert "position" in refused.value.message_dict and "by the bot's reply 2" in str(refused.value)
    with pytest.raises(ValidationError) as refused:
        _scripted_check(draft, rules=[{"response": 2, "max": 2}])  # the rater's conversation is 1
    assert "rules[0].response" in refused.value.message_dict
    free = authoring.study_create(experiment=draft.experiment, title="Free", design="likert", unit="chat",
                                  criteria=[{"name": "notes", "kind": "free_text", "question": "Anything to add?"}],
                                  unit_config={"min_turns": 2, "max_turns": 4})
    authoring.study_items_build(study=free, systems=["rulebot"])
    with pytest.raises(ValidationError) as refused:
        _scripted_check(free)
    assert "no question of this study can judge a scripted reply" in " ".join(refused.value.message_dict["rules"])
    assert not draft.items.filter(check_kind__gt="").exists() and not free.items.filter(check_kind__gt="").exists()


def test_chat_check_refused_for_side_by_side_chats(user, local_bot, loopback_allowed):
    bot_system("rulebot", local_bot.url("rule"))
    bot_system("echobot", local_bot.url("echo"))
    pair = chat_study(user, ["rulebot", "echobot"], design="bws", design_config={"tuple_size": 2}, publish=False)
    with pytest.raises(ValidationError) as refused:
        _scripted_check(pair)
    assert "side-by-side" in " ".join(refused.value.message_dict["kind"])


def test_chat_check_page_adds_lists_and_keeps_the_form(client, user, draft):
    client.force_login(user)
    url = f"/studies/{draft.slug}/checks/"
    form = {"kind": "gold", "scripted_reply": INSULT, "position": "9",
            "rule-0-response": "1", "rule-0-expects": "value", "rule-0-value": "1"}
    page = client.post(url + "create/", form, follow=True).content.decode()
    assert "by the bot&#x27;s reply 2" in page and 'name="position" value="9"' in page
    assert not draft.items.filter(check_kind__gt="").exists()
    form["position"] = "2"
    page = client.post(url + "create/", form, follow=True).content.decode()
    item = draft.items.get(check_kind="gold")
    assert item.item_systems.get().system.name == "rulebot"  # chats with the study's system
    assert 'data-testid="check-scripted"' in page and "reply 2" in page and INSULT in page


def test_chat_check_api_creates_lists_and_refuses_by_field(api, draft):
    base = f"/api/studies/{draft.slug}/checks/"
    bad = api.post(base + "create/", {"kind": "gold", "scripted_reply": INSULT, "position": 7, "rules": LOW},
                   format="json")
    assert bad.status_code == 400 and "position" in problem_fields(bad)
    made = api.post(base + "create/", {"kind": "gold", "scripted_reply": INSULT, "rules": LOW}, format="json")
    assert made.status_code == 201, made.content
    body = made.json()
    assert (body["scripted_reply"], body["position"], body["rules"]) == (INSULT, None, LOW)
    assert [i["scripted_reply"] for i in api.get(base).json()["results"]] == [INSULT]


def test_chat_check_hidden_from_another_researcher(client, other_user, draft):
    _scripted_check(draft)
    client.force_login(other_user)
    assert client.get(f"/studies/{draft.slug}/checks/").status_code == 404
    assert client.post(f"/studies/{draft.slug}/checks/create/", {"kind": "gold", "scripted_reply": INSULT,
                                                                 "position": "1"}).status_code == 404
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_for(other_user)}")
    made = api.post(f"/api/studies/{draft.slug}/checks/create/", {"kind": "gold", "scripted_reply": INSULT,
                                                                  "rules": LOW}, format="json")
    assert made.status_code == 404 and draft.items.filter(check_kind__gt="").count() == 1
    assert api.get(f"/api/studies/{draft.slug}/checks/").status_code == 404


def test_chat_check_per_reply_rule_refused_by_rule(draft, local_bot):
    per_turn = authoring.study_create(
        experiment=draft.experiment, title="Per reply", design="likert", unit="chat",
        criteria=[{"name": "overall"}, {"name": "problems", "kind": "per_turn", "question": "A problem?",
                                        "options": {"mode": "binary", "labels": ["irrelevant"]}}],
        unit_config={"min_turns": 2, "max_turns": 4})
    authoring.study_items_build(study=per_turn, systems=["rulebot"])
    with pytest.raises(ValidationError) as refused:
        _scripted_check(per_turn, rules=[*LOW, {"criterion": "problems", "response": 1, "turns": {"3": ["irrelevant"]}}])
    assert set(refused.value.message_dict) == {"rules[1].criterion"}
    assert _scripted_check(per_turn).check_rules == LOW  # a question about the conversation is accepted
