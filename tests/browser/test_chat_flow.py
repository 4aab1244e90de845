"""A full chat-then-rate task in Chromium against the real local bot server: entry, consent, the chat
(messages sent with the page's script, the bot's replies shown, the end button held back until the
minimum number of turns), the rating of the whole conversation, the questionnaire and the code; on a
desktop screen and a 390 px phone. Side by side, two systems answer each message and the rater ranks
the two conversations. A failing bot is reported, the message kept, and the rater may end the chat.
The database then holds the transcript (with timing) and exactly the ratings entered."""
import re

import pytest

from studies.models import Assignment, Chat, Conversation, Rating
from tests.browser.conftest import wait_until
from tests.factories import prolific_id
from tests.studies.chat.helpers import bot_system, chat_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def send(page, text: str, replies: int) -> None:
    page.fill("#chat-text", text)
    page.click("[data-testid=send]")
    wait_until(page, f"document.querySelectorAll('.chat-side:first-child li.turn.side-a').length >= {replies}")


@pytest.mark.parametrize("viewport", [(1200, 900), (390, 844)], ids=["desktop", "phone"])
def test_chat_then_rate_in_the_browser(live_server, browser, screenshot, user, local_bot, loopback_allowed, viewport):
    bot_system("browser-rulebot", local_bot.url("rule", "openai"), protocol="openai")
    study = chat_study(user, ["browser-rulebot"], design="likert", design_config={"points": 5},
                       raters_per_item=2, items_per_assignment=1)
    study.platform = "prolific"
    study.save(update_fields=["platform"])
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    page = context.new_page()
    worker = f"chatter-{viewport[0]}"
    page.goto(f"{live_server.url}/r/{study.slug}/?PROLIFIC_PID={prolific_id(worker)}&STUDY_ID=e8bc163c82eee18733288c7d&SESSION_ID={prolific_id('x-' + worker + '')}")
    page.check("input[name=agree]")
    page.click("button:has-text('Start')")
    page.wait_for_url(re.compile(r".*/items/0/chat/$"))
    assert "browser-rulebot" not in page.content()  # the rater never learns which system
    assert page.get_by_test_id("end").is_disabled()
    send(page, "Hello there", 1)
    assert not page.get_by_test_id("retry").is_visible()  # nothing failed: nothing to try again
    assert page.locator(".chat-side li.turn.side-a p").last.inner_text() == "Hello! What would you like to talk about today?"
    assert page.get_by_test_id("end").is_disabled()  # one turn of at least two
    send(page, "I like sailing on the lake", 2)
    assert page.locator(".chat-side li.turn.side-a p").last.inner_text() == "What do you like most about sailing on the lake?"
    assert page.get_by_test_id("turn-count").inner_text().startswith("Turns: 2")
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport[0]  # nothing runs off a phone
    screenshot(page, f"chat-{viewport[0]}")
    page.click("[data-testid=end]")
    page.wait_for_url(re.compile(r".*/items/0/$"))
    assignment = Assignment.objects.get(rater__external_id=prolific_id(worker))
    chat = Chat.objects.get(assignment=assignment)
    transcript = page.get_by_test_id("dialogue")
    assert transcript.locator("li.turn").count() == 4
    assert transcript.locator("li.turn").last.inner_text().endswith("sailing on the lake?")
    assert "browser-rulebot" not in page.content()
    screenshot(page, f"chat-rate-{viewport[0]}")
    entered = {}
    for i, criterion in enumerate(study.criteria.values_list("name", flat=True)):
        value = i % 5 + 3
        page.locator(f".likert-row[data-field='rA-{criterion}'] "  # the one transcript, named by letter
                     f"label.point:has(input[value='{value}'])").click()
        entered[criterion] = value
    page.click("form#item-form button[type=submit]")
    page.wait_for_load_state("networkidle")
    assert "last questions" in page.locator("h1").inner_text()
    page.check("input[name=prior_rating_experience][value=no]")
    page.check("input[name=prior_agent_experience][value=yes]")
    page.click("button:has-text('Submit')")
    assert re.search(r"\S", page.get_by_test_id("completion-code").inner_text())
    context.close()
    turns = Conversation.objects.get(pk=chat.conversation_id).turns
    assert [t["speaker"] for t in turns] == ["user", "system", "user", "system"]
    assert all(t["seconds"] is not None for t in turns)
    stored = Rating.objects.filter(assignment=assignment)
    assert {name: v for name, v in stored.values_list("criterion__name", "value")} == entered
    assert set(stored.values_list("conversation_id", flat=True)) == {chat.conversation_id}


def test_chat_side_by_side_in_the_browser(live_server, page, screenshot, user, local_bot, loopback_allowed):
    bot_system("side-rule", local_bot.url("rule"))
    bot_system("side-parrot", local_bot.url("parrot"))
    study = chat_study(user, ["side-rule", "side-parrot"], design="bws", design_config={"tuple_size": 2},
                       unit_config={"systems_per_chat": 2}, raters_per_item=1, items_per_assignment=1)
    study.platform = "prolific"
    study.save(update_fields=["platform"])
    begin_chat(page, live_server, study, "side-by-side")
    send(page, "Hi", 1)
    wait_until(page, "document.querySelectorAll('[data-testid=chat-side-B] li.turn.side-a').length >= 1")
    texts = {page.get_by_test_id(f"chat-side-{s}").locator("li.turn.side-a p").last.inner_text() for s in "AB"}
    assert texts == {"Hello! What would you like to talk about today?", "You said: Hi"}
    send(page, "I feel fine", 2)
    screenshot(page, "chat-side-by-side")
    page.click("[data-testid=end]")
    page.wait_for_url(re.compile(r".*/items/0/$"))
    assignment = Assignment.objects.get(rater__external_id=prolific_id("side-by-side"))
    order = assignment.assignment_items.get().response_order
    assert len(order) == 2
    for letter, conversation_id in zip("AB", order, strict=True):  # the transcripts in the rater's order
        shown = page.get_by_test_id(f"dialogue-{letter}").locator("li.turn")
        assert shown.count() == 4
        assert shown.last.inner_text().endswith(Conversation.objects.get(pk=conversation_id).turns[-1]["text"])
    entered = {}
    for ranking in page.locator("ol.ranking").all():
        criterion = ranking.get_attribute("data-criterion") or ranking.locator("select").first.get_attribute("name") \
            .split("-", 1)[1]
        for letter, conversation_id, rank in zip("AB", order, (2, 1), strict=True):
            ranking.locator(f"select[name='r{letter}-{criterion}']").select_option(str(rank))
            entered[(conversation_id, criterion)] = rank
    page.click("form#item-form button[type=submit]")
    page.wait_for_load_state("networkidle")
    assert "last questions" in page.locator("h1").inner_text()
    stored = Rating.objects.filter(assignment=assignment).values_list("conversation_id", "criterion__name", "rank")
    assert {(c, n): r for c, n, r in stored} == entered


def test_chat_failing_bot_in_the_browser(live_server, page, user, local_bot, loopback_allowed):
    bot_system("browser-broken", local_bot.url("garbage"), retries=0)
    study = chat_study(user, ["browser-broken"], raters_per_item=1, items_per_assignment=1)
    study.platform = "prolific"
    study.save(update_fields=["platform"])
    begin_chat(page, live_server, study, "unlucky")
    page.fill("#chat-text", "Anyone home?")
    page.click("[data-testid=send]")
    wait_until(page, "!document.querySelector('[data-testid=bot-error]').hidden")
    assert "could not be read" in page.get_by_test_id("bot-error").inner_text()
    assert page.locator(".chat-side li.turn.mine p").last.inner_text() == "Anyone home?"  # kept
    assert page.get_by_test_id("retry").is_visible() and not page.get_by_test_id("end").is_disabled()
    page.click("[data-testid=retry]")
    wait_until(page, "!document.querySelector('[data-testid=bot-error]').hidden")
    page.click("[data-testid=end]")
    page.wait_for_url(re.compile(r".*/items/0/$"))
    chat = Chat.objects.get(assignment__rater__external_id=prolific_id("unlucky"))
    assert chat.end_reason == Chat.EndReason.BOT_FAILED and chat.failures == 2
    assert [t["text"] for t in chat.conversation.turns] == ["Anyone home?"]


def begin_chat(page, live_server, study, worker):
    page.goto(f"{live_server.url}/r/{study.slug}/?PROLIFIC_PID={prolific_id(worker)}&STUDY_ID=e8bc163c82eee18733288c7d&SESSION_ID={prolific_id('x-' + worker + '')}")
    page.check("input[name=agree]")
    page.click("button:has-text('Start')")
    page.wait_for_url(re.compile(r".*/items/0/chat/$"))
