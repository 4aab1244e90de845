"""A rater never loses an answer to the connection: a change made offline waits in the browser, is sent
when the connection is back, and wins over the server's older answer after a reload; "Next" pressed
offline keeps the page and goes on once the connection is back; a chat message typed but not sent
survives a reload as a draft. Playwright's context.set_offline cuts the browser's network."""
import re

import pytest

from studies.models import AssignmentItem
from tests.browser.conftest import wait_until
from tests.factories import prolific_id
from tests.studies.chat.helpers import bot_system, chat_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
OFFLINE = "Not saved yet — offline; will be sent when the connection is back"


def start(browser, live_server, study, who):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    tab = context.new_page()
    tab.goto(f"{live_server.url}/r/{study.slug}/?PROLIFIC_PID={prolific_id(who)}&SESSION_ID={prolific_id('s' + who)}")
    tab.check("input[name=agree]")
    tab.click("button:has-text('Start')")
    tab.wait_for_url(re.compile(r".*/items/0/$"))
    return context, tab


def pick(tab, row: int, point: int) -> str:
    label = tab.locator(".likert-row").nth(row).locator(f"label.point:has(input[value='{point}'])")
    label.click()
    return label.locator("input").get_attribute("name")


def checked(tab, name: str):
    return tab.evaluate(f"(document.querySelector('input[name=\"{name}\"]:checked') || {{}}).value || null")


def server_draft(study, name: str, value: str, tab) -> None:
    slot = AssignmentItem.objects.get(assignment__study=study, position=0)
    for _ in range(150):
        slot.refresh_from_db(fields=["draft"])
        if (slot.draft or {}).get(name) == value:
            return
        tab.wait_for_timeout(100)
    raise AssertionError(f"the server's draft has {name}={(slot.draft or {}).get(name)!r}, not {value!r}")


def test_an_offline_change_survives_the_connection_s_return_and_a_reload(live_server, browser, make_study):
    study = make_study("likert", platform="prolific")
    context, tab = start(browser, live_server, study, "offline-change")
    try:
        name = pick(tab, 0, 2)
        server_draft(study, name, "2", tab)  # saved while online
        context.set_offline(True)
        pick(tab, 0, 4)
        wait_until(tab, f"document.querySelector('[data-testid=autosave]').textContent === {OFFLINE!r}")
        # The connection is back, but the save does not reach the server yet, and the page is reloaded:
        # the server still has 2; the newer 4, kept in the browser, wins.
        tab.route("**/draft/", lambda route: route.abort())
        context.set_offline(False)
        tab.reload()
        tab.wait_for_selector(".likert-row")
        assert checked(tab, name) == "4"
        tab.unroute("**/draft/")
        context.set_offline(True)
        context.set_offline(False)  # the connection returns: the waiting answer is sent
        server_draft(study, name, "4", tab)
        wait_until(tab, "document.querySelector('[data-testid=autosave]').textContent === 'Saved'")
        tab.reload()
        tab.wait_for_selector(".likert-row")
        assert checked(tab, name) == "4"
        assert tab.evaluate("Object.keys(localStorage).filter((k) => k.startsWith('concord-draft:')).length") == 0
    finally:
        context.close()


@pytest.mark.parametrize("failure", ["dropped", "server_error"])
def test_a_save_that_fails_while_online_is_sent_again_by_itself(live_server, browser, make_study, failure):
    """No "online" event follows a connection reset or a server's 503 (the browser never went offline):
    the page tries again by itself, and the server ends with the answer."""
    study = make_study("likert", platform="prolific")
    context, tab = start(browser, live_server, study, f"retry-{failure}")
    try:
        refused = []

        def fail_once(route):
            if len(refused) == 2:  # a click sends twice (input, change): both fail, then nothing wakes the page
                route.continue_()
            elif failure == "dropped":
                refused.append(route.request.url)
                route.abort("connectionreset")
            else:
                refused.append(route.request.url)
                route.fulfill(status=503, body="busy")

        tab.route("**/draft/", fail_once)
        name = pick(tab, 0, 3)
        server_draft(study, name, "3", tab)  # no further change, no event: the retry alone brings it
        assert len(refused) == 2
        wait_until(tab, "document.querySelector('[data-testid=autosave]').textContent === 'Saved'")
    finally:
        context.close()


def test_next_pressed_offline_keeps_the_page_and_goes_on_when_the_connection_is_back(live_server, browser,
                                                                                      make_study):
    study = make_study("likert", platform="prolific")
    context, tab = start(browser, live_server, study, "offline-next")
    try:
        rows = tab.locator(".likert-row").count()
        names = {pick(tab, row, row % 5 + 1): str(row % 5 + 1) for row in range(rows)}
        context.set_offline(True)
        tab.click("form#item-form button[type=submit]")
        problem = tab.get_by_test_id("form-problems")
        problem.wait_for(state="visible")
        assert "connection is gone" in problem.inner_text()
        assert tab.url.endswith("/items/0/") and tab.locator(".likert-row").count() == rows  # still this page
        assert all(checked(tab, name) == value for name, value in names.items())
        context.set_offline(False)
        tab.wait_for_url(re.compile(r".*/items/1/$"), timeout=30000)
        slot = AssignmentItem.objects.get(assignment__study=study, position=0)
        assert slot.answered_at is not None
    finally:
        context.close()


def test_a_chat_message_typed_but_not_sent_survives_a_reload_as_a_draft(live_server, browser, user, local_bot,
                                                                         loopback_allowed):
    bot_system("draft-bot", local_bot.url("rule"))
    study = chat_study(user, ["draft-bot"], design="likert", design_config={"points": 5}, items_per_assignment=1)
    study.platform = "prolific"
    study.save(update_fields=["platform"])
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    tab = context.new_page()
    try:
        tab.goto(f"{live_server.url}/r/{study.slug}/?PROLIFIC_PID={prolific_id('drafter')}"
                 f"&SESSION_ID={prolific_id('sdrafter')}")
        tab.check("input[name=agree]")
        tab.click("button:has-text('Start')")
        tab.wait_for_url(re.compile(r".*/items/0/chat/$"))
        tab.fill("#chat-text", "I was about to say something about sailing")
        tab.reload()
        tab.wait_for_selector("#chat-text")
        assert tab.input_value("#chat-text") == "I was about to say something about sailing"
        tab.click("[data-testid=send]")  # sent: the draft is gone with it
        wait_until(tab, "document.querySelectorAll('.chat-side li.turn.side-a').length >= 1")
        tab.reload()
        tab.wait_for_selector("#chat-text")
        assert tab.input_value("#chat-text") == ""
    finally:
        context.close()
