"""An answer the page took survives an immediate reload: on a 390 px phone and at 1280 px, a
rater picks every point of an item and the page is reloaded 50 ms after the last click; every answer
comes back (saved at once on a pick, flushed with a keepalive request when the page is left, kept in the
tab until the server has it). And the practice asks for consent before its first item."""
import re

import pytest

from studies.authoring import services as authoring
from studies.models import AssignmentItem
from studies.onboarding import services as onboarding
from tests.factories import prolific_id

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def context_page(browser, width):
    phone = width < 500
    context = browser.new_context(viewport={"width": width, "height": 800 if phone else 900}, is_mobile=phone,
                                  has_touch=phone)
    return context, context.new_page()


@pytest.mark.parametrize("width", [390, 1280])
def test_answers_picked_then_reloaded_at_once_all_come_back(live_server, browser, make_study, width, screenshot):
    study = make_study("likert", platform="prolific")
    context, tab = context_page(browser, width)
    try:
        tab.goto(f"{live_server.url}/r/{study.slug}/?PROLIFIC_PID={prolific_id(f'w{width}')}"
                 f"&SESSION_ID={prolific_id(f's{width}')}")
        tab.check("input[name=agree]")
        tab.click("button:has-text('Start')")
        tab.wait_for_url(re.compile(r".*/items/0/$"))
        rows = tab.locator(".likert-row")
        assert rows.count() >= 6
        picked = {}
        for i in range(6):
            point = rows.nth(i).locator("label.point").nth(i % 5)
            point.click()  # a tap on the point
            choice = point.locator("input")
            picked[choice.get_attribute("name")] = choice.get_attribute("value")
        tab.wait_for_timeout(50)
        tab.reload()
        tab.wait_for_selector(".likert-row")
        back = {name: tab.evaluate(f"(document.querySelector('input[name=\"{name}\"]:checked') || {{}}).value || null")
                for name in picked}
        screenshot(tab, f"autosave-reload-{width}")
        assert back == picked
        # and the server has them (the first item's draft), not only the tab
        slot = AssignmentItem.objects.get(assignment__study=study, position=0)
        for _ in range(100):
            slot.refresh_from_db(fields=["draft"])
            if all(slot.draft.get(name) == value for name, value in picked.items()):
                break
            tab.wait_for_timeout(100)
        assert {name: slot.draft.get(name) for name in picked} == picked
    finally:
        context.close()


@pytest.mark.parametrize("width", [390, 1280])
def test_the_practice_asks_for_consent_before_its_first_item(live_server, browser, make_study, width):
    study = make_study("likert", publish=False, platform="prolific")
    onboarding.practice_item_create(study=study, context="A: Hi!", responses=["Hello!", "Zzz"],
                                    rules=[{"response": 1, "min": 3}], explanation="A greets back.")
    authoring.study_publish(study=study)
    context, tab = context_page(browser, width)
    try:
        tab.goto(f"{live_server.url}/r/{study.slug}/?PROLIFIC_PID={prolific_id(f'c{width}')}"
                 f"&STUDY_ID={prolific_id('st')}&SESSION_ID={prolific_id(f'cs{width}')}")
        assert tab.locator("h1").inner_text() == "Before you start"
        assert tab.locator("[data-testid=practice-first]").is_visible()
        tab.check("input[name=agree]")
        tab.click("button:has-text('Start')")
        tab.wait_for_url(re.compile(r".*/r/p/[^/]+/items/0/$"))
        assert "Practice 1 of 1" in tab.content()
    finally:
        context.close()


@pytest.mark.parametrize("width", [390, 1280])
def test_the_new_study_form_shows_a_designs_settings_only_for_that_design(live_server, browser, user, width):
    from tests.browser.conftest import log_in

    experiment = authoring.experiment_create(owner=user, title="Form")
    context, tab = context_page(browser, width)
    try:
        log_in(tab, live_server, user.username, "pw-concord")
        tab.goto(f"{live_server.url}/experiments/{experiment.slug}/studies/new/")
        points = tab.locator("[data-field=likert_points]")
        assert not points.is_visible()  # nothing picked: no design's own settings
        tab.check("input[name=design][value=likert]")
        assert points.is_visible()
        tab.check("input[name=design][value=rme]")
        assert not points.is_visible()
    finally:
        context.close()


@pytest.mark.parametrize("width", [390, 1280])
def test_a_missing_required_reason_marks_the_why_box_not_the_answered_choice(live_server, browser, make_study, width):
    study = make_study("pairwise", raters_per_item=2, items_per_assignment=2, platform="prolific", reason="required")
    context, tab = context_page(browser, width)
    try:
        tab.goto(f"{live_server.url}/r/{study.slug}/?PROLIFIC_PID={prolific_id(f'pw{width}')}"
                 f"&SESSION_ID={prolific_id(f'ps{width}')}")
        tab.check("input[name=agree]")
        tab.click("button:has-text('Start')")
        tab.wait_for_url(re.compile(r".*/items/0/$"))
        first = tab.locator(".pairwise-criterion").first
        first.locator("label.pair-choice[data-key=a]").click()
        tab.click("form#item-form button[type=submit]")
        choices_outline = first.locator(".pair-choices").evaluate("e => getComputedStyle(e).outlineStyle")
        assert choices_outline == "none"  # the answered choice is not marked
        assert "reason-missing" in first.locator(".pair-reason").get_attribute("class")
        second = tab.locator(".pairwise-criterion").nth(1)  # nothing answered: its choices are marked
        assert second.locator(".pair-choices").evaluate("e => getComputedStyle(e).outlineStyle") == "solid"
    finally:
        context.close()


def test_keyboard_hints_are_not_shown_at_phone_width_even_without_touch(live_server, browser, make_study):
    study = make_study("likert", platform="prolific")
    context = browser.new_context(viewport={"width": 390, "height": 800})  # no touch: a narrow desktop window
    tab = context.new_page()
    try:
        tab.goto(f"{live_server.url}/r/{study.slug}/?PROLIFIC_PID={prolific_id('kh')}&SESSION_ID={prolific_id('khs')}")
        tab.check("input[name=agree]")
        tab.click("button:has-text('Start')")
        tab.wait_for_url(re.compile(r".*/items/0/$"))
        assert not tab.locator(".keys .key-hint").first.is_visible()
        assert "1 = lowest" in tab.locator(".keys").first.inner_text()
    finally:
        context.close()
