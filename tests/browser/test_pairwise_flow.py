"""A pairwise (A/B) assignment in a real browser: keyboard (a / b / t), clicks and a mobile-sized touch
screen; the client refuses a missing choice or a missing required reason; the database then holds
exactly the choices made, with the sides as shown; the report renders. Screenshots are kept."""
import re

import pytest

from studies.models import Assignment, Comparison
from tests.factories import prolific_id

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def begin(page, live_server, study, worker):
    page.goto(f"{live_server.url}/r/{study.slug}/?PROLIFIC_PID={prolific_id(worker)}&STUDY_ID=e8bc163c82eee18733288c7d&SESSION_ID={prolific_id('x-' + worker + '')}")
    page.check("input[name=agree]")
    page.click("button:has-text('Start')")
    page.wait_for_url(re.compile(r".*/items/0/$"))


def stored(worker):
    assignment = Assignment.objects.get(rater__external_id=prolific_id(worker))
    return {(c.item.position, c.criterion.name): (c.choice, c.reason, [c.left_id, c.right_id])
            for c in Comparison.objects.filter(assignment=assignment).select_related("item", "criterion")}


def test_full_pairwise_assignment_by_keyboard_and_click(live_server, page, screenshot, make_study, user):
    study = make_study("pairwise", raters_per_item=2, items_per_assignment=3, platform="prolific", reason="required")
    worker = "w-pairwise"
    begin(page, live_server, study, worker)
    assignment = Assignment.objects.get(rater__external_id=prolific_id(worker))
    orders = {s.item.position: s.response_order for s in assignment.assignment_items.select_related("item")}
    positions = {s.position: s.item.position for s in assignment.assignment_items.select_related("item")}
    expected = {}
    for step in range(3):
        assert page.locator("section.pair article.response").count() == 2
        assert "human" not in page.locator("section.pair").inner_text().lower()
        if step == 0:
            screenshot(page, "item-pairwise")
            # Nothing chosen: the page refuses before sending and marks both questions.
            page.click("form#item-form button[type=submit]")
            assert page.locator(".pairwise-criterion.has-error").count() == 2
            assert re.search(r"/items/0/$", page.url)
            page.keyboard.press("a")  # first question: A (left)
            page.keyboard.press("t")  # moves on by itself: second question, tie
            choices = {"readability": "left", "coherence": "tie"}
        elif step == 1:
            page.locator(".pairwise-criterion[data-criterion=readability] label.pair-choice[data-key=b]").click()
            page.locator(".pairwise-criterion[data-criterion=coherence] label.pair-choice[data-key=a]").click()
            choices = {"readability": "right", "coherence": "left"}
        else:
            page.keyboard.press("b")
            page.keyboard.press("b")
            choices = {"readability": "right", "coherence": "right"}
        assert page.locator("input[name=choice-readability]:checked").get_attribute("value") == choices["readability"]
        # The reason is required: without it the page refuses; typing 'a' in the box is text, not a choice.
        page.click("form#item-form button[type=submit]")
        assert page.locator(".pairwise-criterion.has-error").count() == 2
        for criterion in choices:
            page.fill(f"textarea[name=reason-{criterion}]", f"a reason {step} {criterion}")
        page.locator("textarea[name=reason-coherence]").press("a")
        assert page.locator("input[name=choice-coherence]:checked").get_attribute("value") == choices["coherence"]
        for criterion, choice in choices.items():
            suffix = "a" if criterion == "coherence" else ""
            expected[(positions[step], criterion)] = (choice, f"a reason {step} {criterion}{suffix}", orders[positions[step]])
        page.click("form#item-form button[type=submit]")
        page.wait_for_load_state("networkidle")
    assert "last questions" in page.locator("h1").inner_text()
    assert stored(worker) == expected
    page.check("input[name=prior_rating_experience][value=no]")
    page.check("input[name=prior_agent_experience][value=yes]")
    page.click("button:has-text('Submit')")
    assert page.get_by_test_id("completion-code").inner_text()
    assert Assignment.objects.get(rater__external_id=prolific_id(worker)).status == "submitted"


def test_pairwise_on_a_phone_by_touch_and_the_report(live_server, browser, screenshot, make_study, user):
    study = make_study("pairwise", raters_per_item=2, items_per_assignment=2, platform="prolific", allow_tie=False,
                       reason="off")
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = context.new_page()
    try:
        begin(page, live_server, study, "w-phone")
        assert page.locator("label.pair-choice.tie").count() == 0 and page.locator("textarea").count() == 0
        box = page.locator("label.pair-choice").first.bounding_box()
        assert box["height"] >= 44 and box["width"] >= 44  # a comfortable touch target
        left, right = (page.locator("section.pair article.response").nth(i).bounding_box() for i in (0, 1))
        assert right["y"] > left["y"]  # stacked on a narrow screen
        screenshot(page, "item-pairwise-phone")
        for _ in range(2):
            page.locator(".pairwise-criterion[data-criterion=readability] label.pair-choice[data-key=a]").tap()
            page.locator(".pairwise-criterion[data-criterion=coherence] label.pair-choice[data-key=b]").tap()
            page.click("form#item-form button[type=submit]")
            page.wait_for_load_state("networkidle")
        assert sorted(v[0] for v in stored("w-phone").values()) == ["left", "left", "right", "right"]
    finally:
        context.close()
    report = browser.new_context(viewport={"width": 1200, "height": 900})
    tab = report.new_page()
    try:
        from tests.browser.conftest import log_in

        log_in(tab, live_server, "alice", "pw-concord")
        tab.goto(f"{live_server.url}/studies/{study.slug}/report/")
        assert tab.get_by_test_id("pairwise-report").count() == 1
        assert "No submitted comparisons yet" in tab.get_by_test_id("pairwise-report").inner_text()
    finally:
        report.close()


def test_the_pairwise_report_in_a_browser(live_server, page, screenshot, make_study, user):
    from tests.browser.conftest import log_in
    from tests.studies import test_pairwise as helpers

    study = helpers.finished_study(make_study, n_raters=4, contrarian=True)
    log_in(page, live_server, "alice", "pw-concord")
    page.goto(f"{live_server.url}/studies/{study.slug}/report/")
    section = page.get_by_test_id("pairwise-report")
    assert section.locator("[data-testid=win-rates] tbody tr").count() == 2 * 6
    assert section.locator("[data-testid=bt-strengths] tbody tr").count() == 2 * 4
    figures = section.locator("figure.plot img")
    assert figures.count() == 2
    for k in range(2):  # the Bradley–Terry plots load (naturalWidth > 0 once the SVG is drawn)
        assert figures.nth(k).evaluate("img => img.complete && img.naturalWidth > 0")
    screenshot(page, "report-pairwise")


def test_pairwise_choice_and_reason_are_autosaved_and_come_back_after_a_reload(live_server, page, make_study):
    study = make_study("pairwise", raters_per_item=2, items_per_assignment=2, platform="prolific", reason="optional")
    begin(page, live_server, study, "w-pairwise-draft")
    page.locator(".pairwise-criterion[data-criterion=readability] label.pair-choice[data-key=b]").click()
    reason = "B answers the question; A changes the topic " * 3  # longer than a number's 20 characters
    page.fill("textarea[name=reason-readability]", reason)
    page.locator(".autosave:has-text('Saved')").wait_for()
    page.wait_for_timeout(600)  # the debounced save of the last keystroke
    page.locator(".autosave:has-text('Saved')").wait_for()
    page.reload()
    assert page.locator("input[name=choice-readability]:checked").get_attribute("value") == "right"
    assert page.locator("textarea[name=reason-readability]").input_value() == reason
    assert not Comparison.objects.exists()  # a draft is not a judgment
