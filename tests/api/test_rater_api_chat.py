"""A bot rater chats through the rater API (chat-then-rate): it opens the item's chat, sends turns, reads
the state and ends the chat, then answers the item and submits, with no page, form token or HTML; every
refusal is a problem in the API's one envelope (the field named), another rater's chat a 404."""
import pytest

from studies.models import Chat, ChatTurn
from tests.api.rater_helpers import base, enter, questionnaire_answers, rater_client, valid_answers
from tests.problems import problem_fields
from tests.studies.chat.helpers import bot_system, chat_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(user, local_bot, loopback_allowed):
    bot_system("rule-bot", local_bot.url("rule"))
    return chat_study(user, ["rule-bot"])


def _session(study):
    response = enter(study)
    assert response.status_code == 201, response.content[:600]
    return response.json()


def test_rater_api_chat_then_rate_without_a_page(study):
    session = _session(study)
    client = rater_client(session)
    item = client.get(base(session) + "items/0/").json()
    assert item["chat_url"] == f"/api/rate/assignments/{session['token']}/items/0/chat/" and item["pending_url"]
    early = client.put(base(session) + "items/0/answer/", {"answers": valid_answers(item)}, format="json")
    assert early.status_code == 409 and "/chat/" in early.json()["detail"]
    state = client.get(item["chat_url"]).json()
    assert [side["letter"] for side in state["sides"]] == ["A"] and state["can_send"] and not state["can_end"]
    for n, text in enumerate(["Hello there!", "I like long walks by the sea."]):
        state = client.post(item["chat_url"] + "turns/", {"text": text, "client_id": f"m{n}"}, format="json").json()
    turns = state["sides"][0]["turns"]
    assert [t["role"] for t in turns] == ["user", "system", "user", "system"] and state["exchanges"] == 2
    assert state["can_end"] and "rule-bot" not in str(state)
    ended = client.post(item["chat_url"] + "end/")
    assert ended.status_code == 200 and ended.json()["ended"] is True
    assert Chat.objects.get(assignment__token=session["token"]).status == Chat.Status.ENDED
    item = client.get(base(session) + "items/0/").json()
    assert item["pending_url"] is None
    answered = client.put(base(session) + "items/0/answer/", {"answers": valid_answers(item)}, format="json")
    assert answered.status_code == 200 and answered.json()["answered"] is True
    done = client.post(base(session) + "submit/", {"questionnaire": questionnaire_answers(session)}, format="json")
    assert done.status_code == 200 and done.json()["status"] == "submitted" and done.json()["completion_code"]


def test_rater_api_chat_resend_with_the_same_client_id_stores_once(study):
    session = _session(study)
    client = rater_client(session)
    url = base(session) + "items/0/chat/"
    for _ in range(2):
        assert client.post(url + "turns/", {"text": "Hello!", "client_id": "same"}, format="json").status_code == 200
    assert ChatTurn.objects.filter(chat__assignment__token=session["token"], role="user").count() == 1


def test_rater_api_chat_refusals_are_problems_naming_the_field(study):
    session = _session(study)
    client = rater_client(session)
    url = base(session) + "items/0/chat/"
    empty = client.post(url + "turns/", {"text": "   "}, format="json")
    assert empty.status_code == 400 and empty["Content-Type"] == "application/problem+json"
    assert "text" in problem_fields(empty)
    unknown = client.post(url + "turns/", {"text": "hi", "colour": "red"}, format="json")
    assert unknown.status_code == 400 and "colour" in problem_fields(unknown)
    too_long = client.post(url + "turns/", {"text": "x" * 5000}, format="json")
    assert too_long.status_code == 400 and "text" in problem_fields(too_long)
    early_end = client.post(url + "end/")
    assert early_end.status_code == 409 and set(early_end.json()) >= {"type", "title", "detail", "errors"}
    assert not ChatTurn.objects.filter(chat__assignment__token=session["token"]).exists()


def test_rater_api_chat_of_another_rater_or_without_key_is_404(study):
    mine, theirs = _session(study), enter(study, secret="another-bot-secret-0002").json()
    client = rater_client(theirs)
    url = base(mine) + "items/0/chat/"
    assert client.get(url).status_code == 404
    assert client.post(url + "turns/", {"text": "Hi"}, format="json").status_code == 404
    assert client.post(url + "end/").status_code == 404
    assert not Chat.objects.filter(assignment__token=mine["token"]).exists()


def test_rater_api_chat_on_a_study_without_chats_is_404(make_study):
    session = _session(make_study("likert"))
    response = rater_client(session).get(base(session) + "items/0/chat/")
    assert response.status_code == 404 and response.json()["type"].endswith("not_found")
    item = rater_client(session).get(base(session) + "items/0/").json()
    assert item["chat_url"] is None


def test_rater_api_chat_after_submit_is_409(study):
    session = _session(study)
    client = rater_client(session)
    url = base(session) + "items/0/chat/"
    client.post(url + "turns/", {"text": "Hello!"}, format="json")
    client.post(url + "turns/", {"text": "How are you?"}, format="json")
    client.post(url + "end/")
    item = client.get(base(session) + "items/0/").json()
    client.put(base(session) + "items/0/answer/", {"answers": valid_answers(item)}, format="json")
    assert client.post(base(session) + "submit/", {"questionnaire": questionnaire_answers(session)},
                       format="json").status_code == 200
    after = client.post(url + "turns/", {"text": "More?"}, format="json")
    assert after.status_code == 409


def test_rater_api_chat_too_fast_is_a_429_with_retry_after(user, local_bot, loopback_allowed):
    bot_system("rule-bot", local_bot.url("rule"))
    study = chat_study(user, ["rule-bot"], unit_config={"messages_per_minute": 1, "max_turns": 5})
    session = _session(study)
    client = rater_client(session)
    url = base(session) + "items/0/chat/"
    assert client.post(url + "turns/", {"text": "Hello!"}, format="json").status_code == 200
    fast = client.post(url + "turns/", {"text": "Again!"}, format="json")
    assert fast.status_code == 429 and int(fast["Retry-After"]) >= 1
    assert fast.json()["type"] == "urn:concord:problem:throttled"
    assert ChatTurn.objects.filter(chat__assignment__token=session["token"], role="user").count() == 1
