"""Per-turn annotation in Chromium: a dialogue rated turn by turn (each bot turn's behaviours ticked under it,
autosaved, kept over a reload, stored keyed by turn) at 1280 px with a mouse and at 390 px with touch; and a
chat whose per-turn questions come after each bot reply, the next message held back until they are answered,
then shown ticked on the rating page. The database holds exactly what was ticked. Screens are saved."""
import re

import pytest

from studies.authoring import services as authoring
from studies.models import Assignment, Chat, Rating
from tests.browser.conftest import wait_until
from tests.browser.test_rater_flow import begin
from tests.factories import prolific_id
from tests.studies.chat.helpers import bot_system
from tests.studies.per_turn_helpers import SMALL, corpus_make

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
VIEWPORTS = [pytest.param((1280, 900), False, id="desktop-1280"), pytest.param((390, 844), True, id="touch-390")]


def context_for(browser, viewport, touch):
    return browser.new_context(viewport={"width": viewport[0], "height": viewport[1]}, has_touch=touch,
                               is_mobile=touch)


def press(locator, touch):
    if touch:
        locator.tap()
    else:
        locator.click()


@pytest.mark.parametrize(("viewport", "touch"), VIEWPORTS)
def test_per_turn_dialogue_rated_turn_by_turn(live_server, browser, screenshot, user, viewport, touch):
    corpus = corpus_make(user, n=2, slug=f"per-turn-browser-{viewport[0]}")
    experiment = authoring.experiment_create(owner=user, title="Per-turn in the browser")
    study = authoring.study_create(experiment=experiment, title="turn by turn", design="likert", unit="dialogue",
                                   criteria=[SMALL], raters_per_item=1, items_per_assignment=2, platform="prolific")
    authoring.study_items_build(study=study, corpus=corpus)
    authoring.study_publish(study=study)
    context = context_for(browser, viewport, touch)
    page = context.new_page()
    worker = f"turns-{viewport[0]}"
    begin(page, live_server, study, worker)
    dialogue = page.get_by_test_id("per-turn-A")
    assert dialogue.locator("li.turn").count() == 4  # the whole dialogue, once
    assert dialogue.locator("li.turn.judged").count() == 2  # the bot's two turns carry the questions
    assert page.get_by_test_id("turn-1").count() == 0  # the user's turn is not asked about
    press(page.get_by_test_id("turn-2").locator("label.choice", has_text="redundant"), touch)
    press(page.get_by_test_id("turn-4").locator("label.choice", has_text="irrelevant"), touch)
    press(page.get_by_test_id("turn-4").locator("label.choice", has_text="contradiction"), touch)
    wait_until(page, "document.querySelector('[data-testid=autosave]').textContent.includes('Saved')")
    page.reload()
    assert page.get_by_test_id("turn-2").locator("input[value=redundant]").is_checked()  # autosaved
    assert page.get_by_test_id("turn-4").locator("input[value=contradiction]").is_checked()
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport[0]  # nothing runs off a phone
    screenshot(page, f"per-turn-{viewport[0]}")
    first = Assignment.objects.get(rater__external_id=prolific_id(worker)).assignment_items.get(position=0)
    press(page.locator("form#item-form button[type=submit]"), touch)
    page.wait_for_url(re.compile(r".*/items/1/$"))
    rating = Rating.objects.get(assignment=first.assignment, item_id=first.item_id)
    assert rating.turns == {"1": ["redundant"], "3": ["contradiction", "irrelevant"]}
    assert rating.conversation_id == first.item.conversation_id
    context.close()


@pytest.mark.parametrize(("viewport", "touch"), VIEWPORTS)
def test_per_turn_chat_questions_after_each_bot_reply(live_server, browser, screenshot, user, local_bot,
                                                       loopback_allowed, viewport, touch):
    bot_system("per-turn-bot", local_bot.url("rule"))
    experiment = authoring.experiment_create(owner=user, title="Model-chat")
    study = authoring.study_create(
        experiment=experiment, title="chat per turn", design="likert", unit="chat", platform="prolific",
        criteria=[{"name": "overall"}, {**SMALL, "question": "Did this reply have a problem?"}],
        raters_per_item=2, items_per_assignment=1, unit_config={"min_turns": 2, "max_turns": 4})
    authoring.study_items_build(study=study, systems=["per-turn-bot"])
    authoring.study_publish(study=study)
    context = context_for(browser, viewport, touch)
    page = context.new_page()
    worker = f"chat-turns-{viewport[0]}"
    page.goto(f"{live_server.url}/r/{study.slug}/?PROLIFIC_PID={prolific_id(worker)}&STUDY_ID=e8bc163c82eee18733288c7d"
              f"&SESSION_ID={prolific_id('x-' + worker)}")
    page.check("input[name=agree]")
    page.click("button:has-text('Start')")
    page.wait_for_url(re.compile(r".*/items/0/chat/$"))
    page.fill("#chat-text", "Hello there")
    page.click("[data-testid=send]")
    wait_until(page, "document.querySelector('[data-testid=turn-questions-1]')")
    assert page.get_by_test_id("send").is_disabled()  # the chat waits for the questions
    press(page.get_by_test_id("turn-questions-1").locator("label.choice", has_text="redundant"), touch)
    press(page.get_by_test_id("turn-questions-save-1"), touch)
    wait_until(page, "!document.querySelector('[data-testid=send]').disabled")
    page.fill("#chat-text", "I like sailing on the lake")
    page.click("[data-testid=send]")
    wait_until(page, "document.querySelector('[data-testid=turn-questions-3]')")
    assert page.get_by_test_id("send").is_disabled()
    press(page.get_by_test_id("turn-questions-save-3"), touch)  # nothing ticked: none of the problems
    wait_until(page, "document.querySelector('[data-testid=turn-questions-3]').textContent.includes('Saved')")
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport[0]
    screenshot(page, f"per-turn-chat-{viewport[0]}")
    press(page.get_by_test_id("end"), touch)
    page.wait_for_url(re.compile(r".*/items/0/$"))
    assert page.get_by_test_id("turn-2").locator("input[value=redundant]").is_checked()  # the chat's answers
    assert not page.get_by_test_id("turn-4").locator("input:checked").count()
    press(page.locator(".likert-row[data-field='rA-overall'] label.point:has(input[value='4'])"), touch)
    press(page.locator("form#item-form button[type=submit]"), touch)
    page.wait_for_load_state("networkidle")
    assert "last questions" in page.locator("h1").inner_text()
    assignment = Assignment.objects.get(rater__external_id=prolific_id(worker))
    chat = Chat.objects.get(assignment=assignment)
    stored = Rating.objects.get(assignment=assignment, criterion__name="problems")
    assert stored.turns == {"1": ["redundant"], "3": []} and stored.conversation_id == chat.conversation_id
    context.close()
