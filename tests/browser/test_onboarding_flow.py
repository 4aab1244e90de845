"""Onboarding in a real browser, on a desktop window and on a 390 px phone: an MTurk worker follows
the study link, answers the practice items with the Likert form, reads the feedback after each, and
either fails (told politely, asked to return the HIT, no slot, the link does not offer a second try)
or passes and goes on to the study's start page with a slot. Nothing sticks out sideways on the phone."""
import re

import pytest

from studies.authoring import services as authoring
from studies.models import Assignment, PracticeAnswer, PracticeAttempt, Rater, Study
from studies.onboarding import services as onboarding

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VIEWPORTS = {"desktop": {"width": 1200, "height": 900}, "phone": {"width": 390, "height": 844}}
ENTRY = "/r/{slug}/?workerId={worker}&assignmentId=A{worker}&hitId=H1&turkSubmitTo=https://www.mturk.com"


def agree(tab):
    """Consent comes first: the start page, then the first practice item."""
    assert tab.locator("[data-testid=practice-first]").count() == 1
    tab.check("input[name=agree]")
    tab.click("button:has-text('Start')")
    tab.wait_for_url(re.compile(r".*/r/p/[^/]+/items/0/$"))


@pytest.fixture
def practice_study(make_study):
    study = make_study("likert", publish=False, platform="mturk", raters_per_item=2, items_per_assignment=3)
    onboarding.practice_item_create(study=study, context="A: Can I book a table for two?\nB: Of course, when?",
                                    responses=["Tonight at eight, please.", "Purple seventeen banana."],
                                    rules=[{"response": 2, "max": 2}],
                                    explanation="Response B has nothing to do with the question: **1 or 2**.")
    onboarding.practice_item_create(study=study, context="A: Where is the station?",
                                    responses=["Second street on the left.", "I like trains."],
                                    rules=[{"greater": 1, "than": 2}],
                                    explanation="Response A gives the way; B does not, so A is rated higher.")
    onboarding.onboarding_configure(study=study, pass_mark=2)
    authoring.study_publish(study=study)
    return study


def answer(tab, values):
    """Click one Likert point per row (A, B) for every criterion and ask for the feedback."""
    from playwright.sync_api import expect

    for i, row in enumerate(tab.locator(".likert-row").all()):
        point = row.locator(f"label.point:has(input[value='{values[i % 2]}'])")
        point.click()
        expect(point.locator("input")).to_be_checked()  # a tap lost on a busy phone shows here, not as a hang
    tab.click("[data-testid=practice-submit]")
    tab.wait_for_selector("[data-testid=practice-feedback]")


def fits(tab, width):
    assert tab.evaluate("document.documentElement.scrollWidth") <= width


@pytest.mark.parametrize("screen", ["desktop", "phone"])
def test_onboarding_practice_failed_in_the_browser(live_server, browser, screenshot, practice_study, screen):
    viewport = VIEWPORTS[screen]
    context = browser.new_context(viewport=viewport, is_mobile=screen == "phone", has_touch=screen == "phone")
    tab = context.new_page()
    try:
        tab.goto(live_server.url + ENTRY.format(slug=practice_study.slug, worker="WFAIL"))
        agree(tab)
        assert "Practice 1 of 2" in tab.inner_text("body")
        fits(tab, viewport["width"])
        tab.click("[data-testid=practice-submit]")  # nothing chosen: the page says so, nothing is stored
        assert tab.locator("[data-testid=form-problems]").is_visible()
        assert PracticeAnswer.objects.count() == 0
        answer(tab, (3, 5))
        assert tab.get_attribute("[data-testid=practice-feedback]", "data-agreed") == "no"
        assert "Your answer differs from ours" in tab.inner_text("body")
        assert tab.inner_text("[data-testid=practice-explanation] strong") == "1 or 2"
        screenshot(tab, f"practice-feedback-{screen}")
        tab.reload()  # a reload shows the feedback again, not a second try
        assert tab.locator("[data-testid=practice-feedback]").count() == 1
        tab.click("[data-testid=practice-next]")
        answer(tab, (5, 1))
        assert tab.get_attribute("[data-testid=practice-feedback]", "data-agreed") == "yes"
        tab.click("[data-testid=practice-next]")
        result = tab.inner_text("[data-testid=practice-result]")
        assert "Thank you for your time" in result and "1 of 2" in result and "return this HIT" in result
        fits(tab, viewport["width"])
        screenshot(tab, f"practice-failed-{screen}")
        tab.goto(live_server.url + ENTRY.format(slug=practice_study.slug, worker="WFAIL"))
        assert tab.get_attribute("[data-testid=practice-result]", "data-result") == "failed"
        assert PracticeAttempt.objects.get().status == "failed"
        assert not Assignment.objects.exists() and not Rater.objects.exists()
    finally:
        context.close()


@pytest.mark.parametrize("screen", ["desktop", "phone"])
def test_onboarding_practice_passed_in_the_browser(live_server, browser, screenshot, practice_study, screen):
    viewport = VIEWPORTS[screen]
    context = browser.new_context(viewport=viewport, is_mobile=screen == "phone", has_touch=screen == "phone")
    tab = context.new_page()
    try:
        tab.goto(live_server.url + ENTRY.format(slug=practice_study.slug, worker="WPASS"))
        agree(tab)
        answer(tab, (4, 1))
        assert "Your answer matches ours" in tab.inner_text("body")
        fits(tab, viewport["width"])
        tab.click("[data-testid=practice-next]")
        answer(tab, (5, 2))
        tab.click("[data-testid=practice-next]")
        assert "you passed the practice" in tab.inner_text("[data-testid=practice-result]")
        assert not Assignment.objects.exists()  # the slot comes only when the rater goes on
        screenshot(tab, f"practice-passed-{screen}")
        tab.click("[data-testid=practice-continue]")
        tab.wait_for_url(re.compile(r".*/r/a/[^/]+/items/0/$"))  # consent was given before the practice
        assignment = Assignment.objects.get()
        assert assignment.rater.external_id == "WPASS" and tab.locator("input[name=agree]").count() == 0
        fits(tab, viewport["width"])
        tab.goto(live_server.url + ENTRY.format(slug=practice_study.slug, worker="WPASS"))  # back: no practice again
        assert f"/r/a/{assignment.token}/" in tab.url
    finally:
        context.close()


@pytest.mark.parametrize("screen", ["desktop", "phone"])
def test_onboarding_researcher_practice_card_and_report_in_the_browser(live_server, browser, screenshot, screen):
    """The study page's Practice card (a refused item shows its problems field by field) and the report's
    Practice section of the demo study with onboarding, without sideways scrolling on a phone."""
    from studies.authoring.demo import DEMO_PASSWORD, DEMO_USER, demo_user
    from studies.authoring.practice_demo import DEMO_ONBOARDING_STUDY, onboarding_demo_load
    from tests.browser.conftest import log_in

    onboarding_demo_load(owner=demo_user())
    from studies.authoring import editing

    draft = editing.study_duplicate(study=Study.objects.get(slug=DEMO_ONBOARDING_STUDY))  # a draft keeps its practice
    viewport = VIEWPORTS[screen]
    context = browser.new_context(viewport=viewport, is_mobile=screen == "phone", has_touch=screen == "phone")
    tab = context.new_page()
    try:
        log_in(tab, live_server, DEMO_USER, DEMO_PASSWORD)
        tab.goto(f"{live_server.url}/studies/{draft.slug}/#practice")
        assert tab.locator("[data-testid=practice-item]").count() == 3
        tab.click("#practice summary:has-text('Add a practice item')")
        tab.fill("#practice textarea[name=context]", "A: Hi")
        tab.fill("#practice textarea[name=responses]", "Hello!\nZzz")
        # the expected answer by controls (no JSON): response C, which the item does not have
        assert tab.locator("#practice textarea[name=rules]").count() == 0
        assert not tab.locator("#practice [name=rule-0-value]").is_visible()  # nothing expected yet
        tab.select_option("#practice [name=rule-0-response]", label="C")
        tab.select_option("#practice [name=rule-0-expects]", label="is exactly")
        assert not tab.locator("#practice [name=rule-0-than]").is_visible()  # only the fields this rule uses
        tab.fill("#practice [name=rule-0-value]", "2")
        tab.click("#practice button:has-text('Add the practice item')")
        tab.wait_for_selector("[data-testid=error-rules]")
        assert "rule 1 (response)" in tab.inner_text("[data-testid=error-rules]")
        assert tab.locator("[data-testid=error-explanation]").is_visible()
        assert tab.input_value("#practice textarea[name=responses]") == "Hello!\nZzz"  # kept as typed
        assert tab.input_value("#practice [name=rule-0-value]") == "2"
        fits(tab, viewport["width"])
        screenshot(tab, f"practice-card-{screen}")
        tab.select_option("#practice [name=rule-0-response]", label="A")
        tab.fill("#practice [name=rule-0-tolerance]", "1")
        tab.fill("#practice textarea[name=explanation]", "A greets back.")
        tab.click("#practice button:has-text('Add the practice item')")
        tab.wait_for_selector("#practice [data-testid=practice-item] >> nth=3")
        added = draft.practice_items.order_by("position").last()
        assert added.rules == [{"response": added.response_ids[0], "min": 1.0, "max": 3.0}]  # as the API stores it
        tab.wait_for_load_state("networkidle")
        tab.goto(f"{live_server.url}/studies/{DEMO_ONBOARDING_STUDY}/report/")
        section = tab.inner_text("[data-testid=practice-report]")
        assert "75%" in section and "Practice items most often failed" in section
        fits(tab, viewport["width"])
    finally:
        context.close()
