"""Chat settings per study: a persona or task shown to the rater above the chat and sent to the
bot; for OpenAI-compatible endpoints a system prompt, temperature, top-p and max tokens; all recorded
with each transcript and exported. Against the local bot server over real HTTP."""
import json

import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from studies.authoring import services as authoring
from studies.chat import endpoints, selectors
from studies.chat import services as chatting
from studies.chat.client import Endpoint, request_body
from studies.chat.config import bot_settings, chat_config_clean
from studies.designs.units.chat_config import USER_PERSONA_FRAME
from studies.models import Conversation, System
from studies.rating import answers as answering
from studies.rating import entry as rater_entry

pytestmark = pytest.mark.django_db
PERSONA = "You are planning a weekend in Rome together."
# What the bot gets where no persona was written for it: the rater's words as the user's setting.
FRAMED = USER_PERSONA_FRAME.format(persona=PERSONA)


def chat_study(user, url, protocol="concord", **unit_config):
    system, _ = System.objects.get_or_create(name="persona-bot")
    endpoints.endpoint_set(owner=user, system=system, protocol=protocol, url=url, retries=0, model_name="m1")
    experiment = authoring.experiment_create(owner=user, title="Persona chats")
    study = authoring.study_create(experiment=experiment, title="persona", design="likert", unit="chat",
                                   raters_per_item=2, items_per_assignment=1, unit_config=unit_config or None)
    authoring.study_items_build(study=study, systems=["persona-bot"])
    authoring.study_publish(study=study)
    study.refresh_from_db()
    return study


def chat_once(study, name="p1"):
    assignment = rater_entry.assignment_start(study=study, rater=rater_entry.rater_get_or_create(
        platform="invite", external_id=name), seed=1)
    slot = assignment.assignment_items.first()
    chatting.chat_open(assignment=assignment, item_id=slot.item_id)
    chatting.chat_turn_post(assignment=assignment, item_id=slot.item_id, text="Hello there", client_id="1")
    return assignment, slot


def test_persona_settings_are_checked_field_by_field():
    cleaned = chat_config_clean({"persona": "  A trip  ", "temperature": 1, "max_tokens": 50})
    assert cleaned["persona"] == "A trip" and cleaned["temperature"] == 1.0 and "top_p" not in cleaned
    with pytest.raises(ValidationError) as refused:
        chat_config_clean({"persona": 5, "temperature": 3, "top_p": "high", "max_tokens": 0.5})
    assert {"unit_config.persona", "unit_config.temperature", "unit_config.top_p",
            "unit_config.max_tokens"} <= set(refused.value.message_dict)


def test_persona_goes_to_a_concord_bot_as_context_and_openai_gets_prompt_and_sampling():
    recorded = {"persona": PERSONA, "system_prompt": "Be brief.", "temperature": 0.3, "top_p": None, "max_tokens": 20}
    concord = request_body(Endpoint("concord", "http://x/"), [{"speaker": "user", "text": "hi"}], "c1",
                           bot_settings(recorded, "concord"))
    assert concord["context"] == FRAMED and "settings" not in concord  # no sampling for Concord's protocol
    openai = request_body(Endpoint("openai", "http://x/v1"), [{"speaker": "user", "text": "hi"}], "c1",
                          bot_settings(recorded, "openai"))
    assert openai["messages"][0] == {"role": "system", "content": f"Be brief.\n\n{FRAMED}"}
    assert (openai["temperature"], openai["max_tokens"]) == (0.3, 20) and "top_p" not in openai
    assert request_body(Endpoint("openai", "http://x/v1"), [{"speaker": "user", "text": "hi"}], "c1") == {
        "model": "", "messages": [{"role": "user", "content": "hi"}]}  # no settings: nothing added


def test_persona_is_sent_to_an_openai_bot_recorded_with_the_transcript_and_exported(user, local_bot,
                                                                                    loopback_allowed):
    study = chat_study(user, local_bot.url("rule", "openai"), protocol="openai", persona=PERSONA,
                       system_prompt="Answer in one sentence.", temperature=0.2, top_p=0.8, max_tokens=40)
    chat_once(study)
    [request] = [r for r in local_bot.requests if r["path"].startswith("/rule")]
    body = request["body"]
    assert body["messages"][0] == {"role": "system", "content": f"Answer in one sentence.\n\n{FRAMED}"}
    assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.2, 0.8, 40)
    conversation = Conversation.objects.get(chat__item__study=study)
    assert conversation.metadata["settings"] == {"persona": PERSONA, "bot_persona": "", "system_prompt": "Answer in one sentence.",
                                                 "temperature": 0.2, "top_p": 0.8, "max_tokens": 40}
    [line] = list(selectors.study_chats(study))
    assert line["settings"]["persona"] == PERSONA and line["settings"]["max_tokens"] == 40
    client = Client()
    client.force_login(user)
    export = client.get(f"/studies/{study.slug}/chats.jsonl")
    assert export.status_code == 200
    body = b"".join(export.streaming_content) if export.streaming else export.content
    rows = [json.loads(x) for x in body.decode().splitlines() if x.strip()]
    assert rows[0]["settings"]["temperature"] == 0.2 and rows[0]["settings"]["persona"] == PERSONA


def test_persona_is_sent_to_a_concord_bot_and_shown_to_the_rater_above_the_chat(user, local_bot, loopback_allowed):
    study = chat_study(user, local_bot.url("rule"), persona=PERSONA)
    assignment, slot = chat_once(study)
    [request] = [r for r in local_bot.requests if r["path"].startswith("/rule")]
    assert request["body"]["context"] == FRAMED and "settings" not in request["body"]
    answering.assignment_consent(assignment=assignment)
    page = Client().get(f"/r/a/{assignment.token}/items/{slot.position}/chat/")
    html = page.content.decode()
    assert page.status_code == 200 and 'data-testid="chat-persona"' in html and PERSONA in html
    assert html.index(PERSONA) < html.index('id="chat"')


def test_persona_absent_shows_nothing_and_sends_nothing(user, local_bot, loopback_allowed):
    study = chat_study(user, local_bot.url("rule"))
    assignment, slot = chat_once(study, "plain")
    [request] = [r for r in local_bot.requests if r["path"].startswith("/rule")]
    assert "context" not in request["body"]
    answering.assignment_consent(assignment=assignment)
    html = Client().get(f"/r/a/{assignment.token}/items/{slot.position}/chat/").content.decode()
    assert 'data-testid="chat-persona"' not in html


def test_a11y_persona_for_the_bot_is_phrased_for_the_bot_not_the_raters_words(user, local_bot, loopback_allowed):
    rater_words = "You are planning a weekend in Rome together with the bot, who is a chef."
    bot_words = "You are a chef planning a weekend in Rome with the user."
    study = chat_study(user, local_bot.url("rule"), persona=rater_words, bot_persona=bot_words)
    assignment, slot = chat_once(study)
    [request] = [r for r in local_bot.requests if r["path"].startswith("/rule")]
    assert request["body"]["context"] == bot_words and rater_words not in json.dumps(request["body"])
    answering.assignment_consent(assignment=assignment)
    html = Client().get(f"/r/a/{assignment.token}/items/{slot.position}/chat/").content.decode()
    assert rater_words in html and bot_words not in html
    # Without a bot persona the rater's words reach the bot only introduced as the user's setting.
    assert bot_settings({"persona": rater_words}, "concord")["system_prompt"] != rater_words
    assert bot_settings({"persona": rater_words}, "concord")["system_prompt"].endswith(rater_words)
