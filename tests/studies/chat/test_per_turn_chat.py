"""Per-turn questions in chat-then-rate (as ParlAI's model-chat): after each bot reply the study's per-turn
questions are asked, the chat takes no next message until they are answered, and the answers come back ticked
on the rating page, where they are stored with the rest."""
import json

import pytest

from studies.authoring import services
from studies.chat import services as chatting
from studies.chat import turn_questions
from studies.chat.selectors import chat_state
from studies.models import Rating
from studies.rating import answers as answering
from studies.rating import form_tokens
from tests.studies.chat.helpers import bot_system, started_assignment

pytestmark = pytest.mark.django_db
ASK = {"name": "problems", "kind": "per_turn", "question": "Did this reply have a problem?",
       "options": {"mode": "binary", "labels": ["redundant", "irrelevant"]}}


@pytest.fixture
def study(user, local_bot, loopback_allowed):
    bot_system("chatty", local_bot.url("rule"))
    experiment = services.experiment_create(owner=user, title="Per-turn chat")
    made = services.study_create(experiment=experiment, title="Chat per turn", design="likert", unit="chat",
                                 criteria=[{"name": "overall"}, ASK], raters_per_item=1, items_per_assignment=1,
                                 unit_config={"min_turns": 2, "max_turns": 4})
    services.study_items_build(study=made, systems=["chatty"])
    services.study_publish(study=made)
    return made


def opened(study):
    assignment = started_assignment(study)
    slot = assignment.assignment_items.get()
    chatting.chat_open(assignment=assignment, item_id=slot.item_id)
    slot.refresh_from_db()
    return assignment, slot


def test_per_turn_chat_waits_for_the_questions_after_each_bot_reply(study):
    assignment, slot = opened(study)
    assert chat_state(assignment, slot.item_id)["can_send"]
    chatting.chat_turn_post(assignment=assignment, item_id=slot.item_id, text="Hello there", client_id="1")
    state = chat_state(assignment, slot.item_id)
    asked = state["questions"]
    assert asked["pending"] and not state["can_send"]
    assert list(asked["turns"]) == ["1"]  # the bot's reply is turn 1 of the transcript
    assert asked["turns"]["1"]["problems"]["field"] == "rA-problems.t1"
    with pytest.raises(chatting.ChatRefused) as refused:
        chatting.chat_turn_post(assignment=assignment, item_id=slot.item_id, text="And then?", client_id="2")
    assert "answer the questions" in str(refused.value) and refused.value.status == 409
    turn_questions.turn_answers_save(assignment=assignment, item_id=slot.item_id, answers={"rA-problems.t1": []})
    assert chat_state(assignment, slot.item_id)["can_send"]
    chatting.chat_turn_post(assignment=assignment, item_id=slot.item_id, text="And then?", client_id="2")
    assert chat_state(assignment, slot.item_id)["questions"]["turns"]["3"]["problems"]["answered"] is False


@pytest.mark.parametrize(("answers", "field", "words"), [
    ({"rA-problems.t0": []}, "rA-problems.t0", "not a question about one of the bot's replies"),
    ({"rA-problems.t3": []}, "rA-problems.t3", "not a question about one of the bot's replies"),
    ({"rA-problems.t1": ["rude"]}, "rA-problems.t1", "not one of the labels"),
    ({}, "answers", "give the answers"),
], ids=["your-own-turn", "a-reply-to-come", "unknown-label", "nothing"])
def test_per_turn_chat_answers_refused_naming_the_field_and_nothing_kept(study, answers, field, words):
    assignment, slot = opened(study)
    chatting.chat_turn_post(assignment=assignment, item_id=slot.item_id, text="Hello there", client_id="1")
    with pytest.raises(turn_questions.TurnAnswersRefused) as refused:
        turn_questions.turn_answers_save(assignment=assignment, item_id=slot.item_id, answers=answers)
    assert refused.value.field == field and words in str(refused.value)
    slot.refresh_from_db()
    assert not slot.draft


def test_per_turn_chat_answers_ticked_on_the_rating_page_and_stored_with_the_rest(client, study):
    assignment, slot = opened(study)
    answering.assignment_consent(assignment=assignment)
    for i, (text, labels) in enumerate((("Hi", ["redundant"]), ("Tell me more", ["irrelevant", "redundant"]))):
        chatting.chat_turn_post(assignment=assignment, item_id=slot.item_id, text=text, client_id=str(i))
        field = f"rA-problems.t{2 * i + 1}"
        turn_questions.turn_answers_save(assignment=assignment, item_id=slot.item_id, answers={field: labels})
    chatting.chat_end(assignment=assignment, item_id=slot.item_id)
    page = client.get(f"/r/a/{assignment.token}/items/{slot.position}/").content.decode()
    assert 'name="rA-problems.t1" value="redundant" checked' in page
    assert 'name="rA-problems.t3" value="irrelevant" checked' in page
    assert 'name="rA-problems.t0"' not in page  # the rater's own turns are not asked about
    posted = client.post(f"/r/a/{assignment.token}/items/{slot.position}/", {
        "form_token": form_tokens.form_token(assignment.token, "item"), "rA-overall": "4",
        "rA-problems.t1": "redundant", "rA-problems.t3": ["irrelevant", "redundant"]})
    assert posted.status_code in (200, 302), posted.content[:300]
    rating = Rating.objects.get(assignment=assignment, criterion__name="problems")
    assert rating.turns == {"1": ["redundant"], "3": ["irrelevant", "redundant"]}


def test_per_turn_chat_questions_view_saves_json_and_refuses_a_forged_token(client, study):
    assignment, slot = opened(study)
    answering.assignment_consent(assignment=assignment)
    chatting.chat_turn_post(assignment=assignment, item_id=slot.item_id, text="Hello there", client_id="1")
    url = f"/r/a/{assignment.token}/items/{slot.position}/chat/questions/"
    token = form_tokens.form_token(assignment.token, "chat")
    forged = client.post(url, json.dumps({"answers": {"rA-problems.t1": []}}), content_type="application/json",
                         HTTP_X_CONCORD_FORM_TOKEN="nope", HTTP_ACCEPT="application/json")
    assert forged.status_code == 403
    bad = client.post(url, json.dumps({"answers": {"rA-problems.t1": ["rude"]}}), content_type="application/json",
                      HTTP_X_CONCORD_FORM_TOKEN=token, HTTP_ACCEPT="application/json")
    assert bad.status_code == 400 and bad.json()["field"] == "rA-problems.t1"
    good = client.post(url, json.dumps({"answers": {"rA-problems.t1": ["irrelevant"]}}),
                       content_type="application/json", HTTP_X_CONCORD_FORM_TOKEN=token, HTTP_ACCEPT="application/json")
    assert good.status_code == 200 and good.json()["can_send"] is True
    assert good.json()["questions"]["turns"]["1"]["problems"]["chosen"] == ["irrelevant"]
