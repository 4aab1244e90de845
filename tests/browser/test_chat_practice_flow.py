"""A chat study's practice in a real browser: an invited rater reads the scripted practice conversation the
researcher wrote (no chat with a bot), rates it on the study's questions, reads the feedback, passes, and only
then goes on to the study, whose first page is the chat."""
import re

import pytest

from studies.authoring import services as authoring
from studies.models import Assignment, Chat, PracticeAnswer
from studies.onboarding import services as onboarding
from studies.rating import invites
from tests.studies.chat.helpers import bot_system, chat_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def chat_practice_study(user, local_bot, loopback_allowed):
    bot_system("rulebot", local_bot.url("rule"))
    study = chat_study(user, ["rulebot"], publish=False, raters_per_item=2)
    onboarding.practice_item_create(
        study=study, context="user: Can you recommend a book?\nbot: Banana. Banana banana.", responses=None,
        rules=[{"response": 1, "criterion": "coherence", "max": 2}],
        explanation="The bot never answers: its coherence is **1 or 2**.")
    onboarding.onboarding_configure(study=study, pass_mark=1)
    authoring.study_publish(study=study)
    return study


def test_chat_practice_rated_then_the_chat_in_the_browser(live_server, browser, screenshot, chat_practice_study):
    link = invites.invite_create(study=chat_practice_study)
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    tab = context.new_page()
    try:
        tab.goto(f"{live_server.url}/r/{chat_practice_study.slug}/?invite={link.token}")
        tab.check("input[name=agree]")
        tab.click("button:has-text('Start')")
        tab.wait_for_url(re.compile(r".*/r/p/[^/]+/items/0/$"))
        dialogue = tab.inner_text("[data-testid=dialogue]")
        assert "Practice conversation" in dialogue and "Banana. Banana banana." in dialogue
        assert tab.locator("textarea, input[type=text]").count() == 0  # nothing to chat with in practice
        rows = tab.locator(".likert-row").all()
        assert len(rows) == 3  # the study's three questions about the one conversation
        for row, value in zip(rows, (1, 3, 3), strict=True):
            row.locator(f"label.point:has(input[value='{value}'])").click()
        tab.click("[data-testid=practice-submit]")
        tab.wait_for_selector("[data-testid=practice-feedback]")
        assert tab.get_attribute("[data-testid=practice-feedback]", "data-agreed") == "yes"
        assert tab.inner_text("[data-testid=practice-explanation] strong") == "1 or 2"
        screenshot(tab, "chat-practice-feedback")
        tab.click("[data-testid=practice-next]")
        assert "you passed the practice" in tab.inner_text("[data-testid=practice-result]")
        assert not Assignment.objects.exists() and not Chat.objects.exists()
        tab.click("[data-testid=practice-continue]")
        tab.wait_for_url(re.compile(r".*/r/a/[^/]+/.*"))
        assert Assignment.objects.filter(study=chat_practice_study).count() == 1
        assert PracticeAnswer.objects.get().agreed
    finally:
        context.close()
