"""Practice for a chat-then-rate study: the researcher writes a scripted practice conversation (user and bot
turns), its expected answer on the study's criteria and the explanation, on the study page's Practice card or
through the API (the same service, each problem named by field); the rater reads that transcript on the
practice page, answers the study's questions, sees the feedback, and only a pass goes on to the chat. The
rater never chats with a bot in practice. Two systems side by side and the builder's preview are refused
with their reason; another researcher's study is a 404 on every route."""
import re

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse
from django.utils import translation

from studies.authoring import builder
from studies.authoring import services as authoring
from studies.designs.ratings import field_name
from studies.models import Assignment, Chat, PracticeAnswer, PracticeAttempt, PracticeItem, Study
from studies.onboarding import selectors as onboarding_selectors
from studies.onboarding import services as onboarding
from studies.rating import invites
from tests.api.test_convention import client_of
from tests.problems import problem_fields
from tests.studies.chat.helpers import bot_system, chat_study

pytestmark = pytest.mark.django_db

TRANSCRIPT = "user: Hi! Can you recommend a book?\nbot: Banana. Banana banana.\nuser: A book, please.\nbot: Banana."
RULES = [{"response": 1, "criterion": "coherence", "max": 2}]
EXPLANATION = "The bot never answers the question: its coherence is **1 or 2**."


@pytest.fixture
def draft(user, local_bot, loopback_allowed):
    bot_system("rulebot", local_bot.url("rule"))
    return chat_study(user, ["rulebot"], publish=False, raters_per_item=2)


def practice_add(study, **extra):
    return onboarding.practice_item_create(study=study, context=extra.pop("context", TRANSCRIPT), responses=None,
                                           rules=extra.pop("rules", RULES),
                                           explanation=extra.pop("explanation", EXPLANATION), **extra)


def test_chat_practice_item_is_the_written_transcript_judged_whole(draft):
    item = practice_add(draft)
    assert item.response_ids == [item.conversation_id]
    assert [t["speaker"] for t in item.conversation.turns] == ["user", "system", "user", "system"]
    assert item.conversation.turns[1]["text"] == "Banana. Banana banana."
    assert item.rules == [{"response": item.conversation_id, "criterion": "coherence", "max": 2}]
    panel = onboarding_selectors.study_practice_panel(draft)
    assert panel["items"][0]["rules"] == RULES and panel["pass_mark"] == 1
    assert panel["items"][0]["expected"] == ["How coherent was the system in this conversation?: Dialogue A: at most 2"]
    assert not Chat.objects.exists()  # nothing of a chat: the practice is not a conversation with a bot


@pytest.mark.parametrize(("extra", "field", "words"), [
    ({"context": "user: Hi\nnarrator: Once upon a time"}, "context[1].speaker", 'start each line with "user:" or "bot:"'),
    ({"context": "user: Hi\nyou: Hello?"}, "context", "at least one bot turn"),
    ({"context": ""}, "context", "give the conversation"),
    ({"rules": [{"response": 2, "criterion": "coherence", "max": 2}]}, "rules[0].response", ""),
    ({"rules": [{"response": 1, "criterion": "nope", "max": 2}]}, "rules[0].criterion", ""),
    ({"explanation": " "}, "explanation", "say why"),
])
def test_chat_practice_problems_name_their_field_and_nothing_is_written(draft, extra, field, words):
    with pytest.raises(ValidationError) as refused:
        practice_add(draft, **extra)
    assert field in refused.value.message_dict, refused.value.message_dict
    assert words in " ".join(refused.value.message_dict[field])
    assert not PracticeItem.objects.exists()


def test_chat_practice_speakers_may_be_named_as_the_researcher_likes(draft):
    item = practice_add(draft, context=[{"speaker": "Human", "text": "Hello"}, {"speaker": "Assistant", "text": "Hi!"}])
    assert item.conversation.turns == [{"speaker": "user", "text": "Hello"}, {"speaker": "system", "text": "Hi!"}]


def test_side_by_side_chat_practice_is_refused_with_its_reason(user, local_bot, loopback_allowed):
    bot_system("rulebot", local_bot.url("rule"))
    bot_system("echobot", local_bot.url("echo"))
    study = chat_study(user, ["rulebot", "echobot"], design="bws", publish=False)
    with pytest.raises(ValidationError) as refused:
        practice_add(study, rules=[{"best": 1}])
    assert "two systems side by side" in " ".join(refused.value.message_dict["rules"])


def test_chat_preview_offers_no_practice_but_says_where_to_write_one(draft):
    offer = builder.expected_offer(draft)
    assert "practice" not in offer["expected_uses"]
    assert "write a practice conversation" in (offer["practice_note"] or offer["expected_refusal"])


def test_chat_practice_written_on_the_practice_card(client, user, draft):
    client.force_login(user)
    page = client.get(reverse("studies:study_detail", args=[draft.slug])).content.decode()
    assert "bot: text" in page and 'name="responses"' not in page
    url = reverse("studies:study_practice_action", args=[draft.slug, "create"])
    rule = {"rule-0-criterion": "coherence", "rule-0-response": "1", "rule-0-expects": "max", "rule-0-value": "2"}
    bad = client.post(url, {"context": "user: Hi\nnarrator: Once", "explanation": EXPLANATION, **rule}, follow=True)
    text = bad.content.decode()
    assert "The practice item was not added" in text and "context[1].speaker: start each line with" in text
    assert not PracticeItem.objects.exists()
    done = client.post(url, {"context": TRANSCRIPT, "explanation": EXPLANATION, **rule}, follow=True)
    assert "Practice item added." in done.content.decode(), done.content.decode()[:3000]
    (item,) = PracticeItem.objects.filter(study=draft)
    assert item.rules == [{"response": item.conversation_id, "criterion": "coherence", "max": 2}]


def test_chat_practice_written_through_the_api(api, draft):
    url = f"/api/studies/{draft.slug}/practice/items/"
    bad = api.post(url, {"context": "user: Hi\nnarrator: Once", "rules": RULES, "explanation": EXPLANATION},
                   format="json")
    assert bad.status_code == 400 and any("speaker" in name for name in problem_fields(bad)), problem_fields(bad)
    created = api.post(url, {"context": TRANSCRIPT, "rules": RULES, "explanation": EXPLANATION}, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["rules"] == RULES
    assert api.get(f"/api/studies/{draft.slug}/practice/").json()["items"][0]["rules"] == RULES


def test_chat_practice_routes_are_404_for_another_researcher(client, draft, other_user):
    item = practice_add(draft)
    bob = client_of(other_user)
    assert bob.post(f"/api/studies/{draft.slug}/practice/items/",
                    {"context": TRANSCRIPT, "rules": RULES, "explanation": EXPLANATION}, format="json").status_code == 404
    assert bob.delete(f"/api/studies/{draft.slug}/practice/items/{item.pk}/").status_code == 404
    assert bob.get(f"/api/studies/{draft.slug}/practice/").status_code == 404
    client.force_login(other_user)
    for action in ("create", "delete", "configure"):
        answer = client.post(reverse("studies:study_practice_action", args=[draft.slug, action]),
                             {"context": TRANSCRIPT, "explanation": EXPLANATION, "item": item.pk, "pass_mark": 1})
        assert answer.status_code == 404, action
    assert PracticeItem.objects.filter(study=draft).count() == 1


def published_with_practice(draft, *, retakes=0):
    practice_add(draft)
    practice_add(draft, context="user: What is 2 + 2?\nbot: 2 + 2 is 4.",
                 rules=[{"response": 1, "criterion": "coherence", "min": 4}], explanation="A clear, right answer.")
    onboarding.onboarding_configure(study=draft, pass_mark=2, retakes=retakes)
    authoring.study_publish(study=draft)
    draft.refresh_from_db()
    return draft


def answer(client, page, study, values: dict[str, int]):
    """Post the practice page's own form: every criterion of the one conversation."""
    html = page.content.decode()
    token = re.search(r'name="form_token" value="([0-9a-f]+)"', html).group(1)
    action = re.search(r'<form method="post" id="item-form"[^>]* action="([^"]+)"', html).group(1)
    position = int(action.rstrip("/").rsplit("/", 1)[1])
    item = onboarding_selectors.practice_items(study)[position]
    data = {"form_token": token, "active_ms": "900"}
    data.update({field_name(item.conversation_id, name, item.response_ids): str(values.get(name, 3))
                 for name in study.criteria.values_list("name", flat=True)})
    return client.post(action, data)


def consent(client, page):
    html = page.content.decode()
    token = re.search(r'name="form_token" value="([0-9a-f]+)"', html).group(1)
    attempt = PracticeAttempt.objects.order_by("-pk").first()
    return client.post(reverse("raters:practice", args=[attempt.token]), {"form_token": token, "agree": "yes"},
                       follow=True)


def test_chat_practice_rater_reads_the_transcript_answers_sees_feedback_then_chats(draft):
    study = published_with_practice(draft)
    client = Client()
    link = invites.invite_create(study=study)
    first = consent(client, client.get(f"/r/{study.slug}/?invite={link.token}", follow=True))
    html = first.content.decode()
    assert first.status_code == 200 and "Practice 1 of 2" in html and "Practice conversation" in html
    assert "Banana. Banana banana." in html and "How coherent was the system in this conversation?" in html
    assert not Assignment.objects.exists() and not Chat.objects.exists()
    feedback = answer(client, first, study, {"coherence": 1})
    text = feedback.content.decode()
    assert feedback.status_code == 200 and 'data-agreed="yes"' in text and "its coherence is" in text
    assert "at most 2" in text
    second = client.get(re.search(r'href="([^"]+)"[^>]*data-testid="practice-next"', text).group(1))
    assert "2 + 2 is 4." in second.content.decode()
    done = answer(client, second, study, {"coherence": 5})
    assert 'data-agreed="yes"' in done.content.decode()
    result = client.get(reverse("raters:practice", args=[PracticeAttempt.objects.get().token]))
    assert 'data-result="passed"' in result.content.decode()
    form_token = re.search(r'name="form_token" value="([0-9a-f]+)"', result.content.decode()).group(1)
    onward = client.post(reverse("raters:practice_continue", args=[PracticeAttempt.objects.get().token]),
                         {"form_token": form_token}, follow=True)
    assert onward.status_code == 200 and Assignment.objects.filter(study=study).count() == 1
    assert PracticeAnswer.objects.filter(agreed=True).count() == 2


def test_chat_practice_fail_gives_no_slot_and_no_chat(draft):
    study = published_with_practice(draft)
    client = Client()
    link = invites.invite_create(study=study)
    first = consent(client, client.get(f"/r/{study.slug}/?invite={link.token}", follow=True))
    feedback = answer(client, first, study, {"coherence": 5})
    text = feedback.content.decode()
    assert 'data-agreed="no"' in text and "Your answer differs from ours" in text
    second = client.get(re.search(r'href="([^"]+)"[^>]*data-testid="practice-next"', text).group(1))
    answer(client, second, study, {"coherence": 5})
    attempt = PracticeAttempt.objects.get()
    assert attempt.status == PracticeAttempt.Status.FAILED and (attempt.agreed, attempt.shown) == (1, 2)
    result = client.get(reverse("raters:practice", args=[attempt.token]))
    assert 'data-result="failed"' in result.content.decode()
    assert not Assignment.objects.exists() and not Chat.objects.exists()


def test_chat_practice_page_in_arabic(draft):
    study = published_with_practice(draft)
    Study.objects.filter(pk=study.pk).update(language="ar")
    client = Client()
    link = invites.invite_create(study=study)
    first = consent(client, client.get(f"/r/{study.slug}/?invite={link.token}", follow=True))
    html = first.content.decode()
    assert '<html lang="ar" dir="rtl">' in html
    with translation.override("ar"):
        assert translation.gettext("Practice conversation") in html
    assert "Practice conversation" not in html


def test_chat_practice_in_the_rater_api(draft):
    """The same practice over the rater API: the transcript among the item's content, the study's questions as
    fields, feedback after the answer, and the slot (the chat) only after the pass."""
    from rest_framework.test import APIClient

    from tests.api.rater_helpers import enter

    study = published_with_practice(draft)
    refused = enter(study)
    assert refused.status_code == 409 and refused.json()["type"].endswith("practice_required")
    rater = APIClient()
    rater.credentials(HTTP_X_CONCORD_RATER_KEY=refused.json()["practice"]["key"])
    base = f"/api/rate/practice/{refused.json()['practice']['token']}/"
    items = rater.get(base + "items/").json()["results"]
    assert "Banana. Banana banana." in str(items[0]) and "2 + 2 is 4." in str(items[1])
    for item, value in zip(items, (1, 5), strict=True):
        fields = {f["name"]: f for f in item["fields"] if f["kind"] == "scale"}
        assert {f["criterion"] for f in fields.values()} == {"coherence", "engagingness", "overall"}
        given = {name: (value if f["criterion"] == "coherence" else 3) for name, f in fields.items()}
        answered = rater.put(base + f"items/{item['position']}/answer/", {"answers": given}, format="json")
        assert answered.status_code == 200, answered.content
        assert answered.json()["feedback"]["agreed"] is True
    assert rater.get(base).json()["status"] == "passed" and not Assignment.objects.exists()
    onward = rater.post(base + "continue/")
    assert onward.status_code in (200, 201), onward.content
    assert Assignment.objects.filter(study=study).count() == 1 and not Chat.objects.exists()
