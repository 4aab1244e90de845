"""A chat study with a check (a scripted bot reply) in Chromium against the real local bot server: the rater's
first chat shows the scripted reply as the bot's 2nd reply (the bot is asked only for the others), the rater
rates that conversation low, chats and rates the regular item, and submits; the assignment passes its check."""
import re

import pytest

from studies.authoring import checks
from studies.authoring import services as authoring
from studies.models import Assignment, Chat
from tests.browser.conftest import wait_until
from tests.factories import prolific_id
from tests.studies.chat.helpers import bot_system, chat_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
INSULT = "Your question is stupid. Bananas are purple."


def send(page, text: str, replies: int) -> None:
    page.fill("#chat-text", text)
    page.click("[data-testid=send]")
    wait_until(page, f"document.querySelectorAll('.chat-side:first-child li.turn.side-a').length >= {replies}")


def chat_and_rate(page, study, value: int, position: int) -> None:
    page.wait_for_url(re.compile(rf".*/items/{position}/chat/$"))
    send(page, "Hello there", 1)
    send(page, "I like sailing on the lake", 2)
    page.click("[data-testid=end]")
    page.wait_for_url(re.compile(rf".*/items/{position}/$"))
    for criterion in study.criteria.values_list("name", flat=True):
        page.locator(f".likert-row[data-field='rA-{criterion}'] label.point:has(input[value='{value}'])").click()
    page.click("form#item-form button[type=submit]")
    page.wait_for_load_state("networkidle")


def test_chat_check_scripted_reply_in_the_browser(live_server, page, user, local_bot, loopback_allowed):
    bot_system("browser-checkbot", local_bot.url("rule"))
    study = chat_study(user, ["browser-checkbot"], design="likert", design_config={"points": 5},
                       raters_per_item=2, items_per_assignment=1, publish=False)
    item = checks.check_item_create(study=study, kind="gold", scripted_reply=INSULT, position=2,
                                    rules=[{"criterion": "overall", "response": 1, "max": 2}])
    checks.study_checks_configure(study=study, positions="1")
    authoring.study_publish(study=study)
    study.platform = "prolific"
    study.save(update_fields=["platform"])
    page.goto(f"{live_server.url}/r/{study.slug}/?PROLIFIC_PID={prolific_id('checked')}"
              f"&STUDY_ID=e8bc163c82eee18733288c7d&SESSION_ID={prolific_id('x-checked')}")
    page.check("input[name=agree]")
    page.click("button:has-text('Start')")
    page.wait_for_url(re.compile(r".*/items/0/chat/$"))
    requests = len(local_bot.requests)
    send(page, "Hello there", 1)
    send(page, "I like sailing on the lake", 2)
    assert page.locator(".chat-side li.turn.side-a p").last.inner_text() == INSULT  # shown as the bot's reply
    assert len(local_bot.requests) == requests + 1  # the bot was asked for the first reply only
    page.click("[data-testid=end]")
    page.wait_for_url(re.compile(r".*/items/0/$"))
    for criterion in study.criteria.values_list("name", flat=True):
        page.locator(f".likert-row[data-field='rA-{criterion}'] label.point:has(input[value='1'])").click()
    page.click("form#item-form button[type=submit]")
    page.wait_for_load_state("networkidle")
    chat_and_rate(page, study, 4, 1)
    assert "last questions" in page.locator("h1").inner_text()
    page.check("input[name=prior_rating_experience][value=no]")
    page.check("input[name=prior_agent_experience][value=yes]")
    page.click("button:has-text('Submit')")
    assert re.search(r"\S", page.get_by_test_id("completion-code").inner_text())
    assignment = Assignment.objects.get(rater__external_id=prolific_id("checked"))
    assert (assignment.checks_shown, assignment.checks_passed, assignment.checks_failed) == (1, 1, False)
    assert Chat.objects.get(assignment=assignment, item=item).conversation.turns[3]["check"] is True
