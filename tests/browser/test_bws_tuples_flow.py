"""A full bws_tuples assignment in a real browser: best and worst picked by mouse, by keyboard
(1-4 then b / w) and by touch on a phone-sized screen; the same response cannot be both; the
database then holds exactly the picks made."""
import re

import pytest

from studies.designs.bws_tuples import tuple_field
from studies.models import Assignment, BestWorstChoice
from tests.browser.conftest import wait_until
from tests.factories import prolific_id

LETTERS = "ABCDEFGH"  # a screen names its members by letter, never by id

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
CRITERIA = ("readability", "coherence")


def begin(page, live_server, study, worker):
    page.goto(f"{live_server.url}/r/{study.slug}/?PROLIFIC_PID={prolific_id(worker)}&STUDY_ID=e8bc163c82eee18733288c7d&SESSION_ID={prolific_id('x-' + worker + '')}")
    page.check("input[name=agree]")
    page.click("button:has-text('Start')")
    page.wait_for_url(re.compile(r".*/items/0/$"))


def order_on(worker, position):
    return Assignment.objects.get(rater__external_id=prolific_id(worker)).assignment_items.get(position=position).response_order


def stored(worker):
    """{(item position in the assignment, criterion, best|worst): response id} as stored."""
    assignment = Assignment.objects.get(rater__external_id=prolific_id(worker))
    position = dict(assignment.assignment_items.values_list("item_id", "position"))
    return {(position[item], c, kind): rid for item, c, best, worst in BestWorstChoice.objects.filter(assignment=assignment)
            .values_list("item_id", "criterion__name", "best_id", "worst_id") for kind, rid in (("best", best), ("worst", worst))}


def submit(page):
    page.click("form#item-form button[type=submit]")
    page.wait_for_load_state("networkidle")


def finish(page):
    assert "last questions" in page.locator("h1").inner_text()
    page.check("input[name=prior_rating_experience][value=no]")
    page.check("input[name=prior_agent_experience][value=yes]")
    page.click("button:has-text('Submit')")
    return page.get_by_test_id("completion-code").inner_text()


def test_full_assignment_by_mouse_and_keyboard_stores_exactly_the_picks(live_server, page, screenshot, make_study):
    study = make_study("bws_tuples", raters_per_item=2, items_per_assignment=2, platform="prolific")
    worker = "w-tuples"
    begin(page, live_server, study, worker)
    entered = {}
    # item 1, by mouse: each member is shown with its own conversation
    order = order_on(worker, 0)
    assert page.locator("article.tuple-member").count() == 4
    assert page.locator("article.tuple-member .chat").count() == 4
    assert page.locator("section.conversation").count() == 0
    assert "human" not in page.locator("section.tuple-members").inner_text().lower()
    screenshot(page, "item-bws_tuples")
    first = page.locator(f"fieldset[data-criterion={CRITERIA[0]}]")
    first.locator(f"input[name='{tuple_field('best', CRITERIA[0])}'][value='{LETTERS[1]}']").locator("..").click()
    # the response picked as best cannot be worst too
    assert first.locator(f"input[name='{tuple_field('worst', CRITERIA[0])}'][value='{LETTERS[1]}']").is_disabled()
    first.locator(f"input[name='{tuple_field('worst', CRITERIA[0])}'][value='{LETTERS[3]}']").locator("..").click()
    entered.update({(0, CRITERIA[0], "best"): order[1], (0, CRITERIA[0], "worst"): order[3]})
    # autosaved: a reload shows the picks again
    wait_until(page, "document.querySelector('.autosave').textContent === 'Saved'")
    page.reload()
    assert first.locator(f"input[name='{tuple_field('best', CRITERIA[0])}'][value='{LETTERS[1]}']").is_checked()
    assert first.locator(f"input[name='{tuple_field('worst', CRITERIA[0])}'][value='{LETTERS[3]}']").is_checked()
    assert first.locator(f"input[name='{tuple_field('worst', CRITERIA[0])}'][value='{LETTERS[1]}']").is_disabled()
    # the second question is still open: the page says so and does not leave
    page.click("form#item-form button[type=submit]")
    assert page.url.endswith("/items/0/")
    second = page.locator(f"fieldset[data-criterion={CRITERIA[1]}]")
    assert "pick the best and the worst" in second.locator(".bw-problem").inner_text()
    # keyboard: 3 then b marks the third response best, 2 then w the second worst
    second.focus()
    for key in ("3", "b", "2", "w"):
        page.keyboard.press(key)
    entered.update({(0, CRITERIA[1], "best"): order[2], (0, CRITERIA[1], "worst"): order[1]})
    submit(page)
    assert page.url.endswith("/items/1/")
    # item 2, keyboard only, moving a pick: 1 b then 1 w moves response 1 from best to worst
    order = order_on(worker, 1)
    for criterion in CRITERIA:
        page.locator(f"fieldset[data-criterion={criterion}]").focus()
        for key in ("1", "b", "1", "w", "4", "b"):
            page.keyboard.press(key)
        entered.update({(1, criterion, "best"): order[3], (1, criterion, "worst"): order[0]})
    submit(page)
    code = finish(page)
    assignment = Assignment.objects.get(rater__external_id=prolific_id(worker))
    assert (assignment.status, assignment.completion_code) == ("submitted", code)
    assert stored(worker) == entered
    assert BestWorstChoice.objects.filter(assignment=assignment).count() == 2 * 2


def test_phone_sized_screen_by_touch_with_44px_targets(live_server, browser, screenshot, make_study):
    study = make_study("bws_tuples", raters_per_item=2, items_per_assignment=1, platform="prolific")
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    worker = "w-phone"
    begin(page, live_server, study, worker)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # nothing wider than the phone
    targets = page.locator("label.bw-pick").all()
    assert len(targets) == 4 * 2 * 2
    for target in targets:
        box = target.bounding_box()
        assert box["width"] >= 44 and box["height"] >= 44
    order = order_on(worker, 0)
    for criterion, (best, worst) in zip(CRITERIA, ((0, 2), (3, 1)), strict=True):
        fieldset = page.locator(f"fieldset[data-criterion={criterion}]")
        fieldset.locator(f"input[name='{tuple_field('best', criterion)}'][value='{LETTERS[best]}']").locator("..").tap()
        fieldset.locator(f"input[name='{tuple_field('worst', criterion)}'][value='{LETTERS[worst]}']").locator("..").tap()
    screenshot(page, "item-bws_tuples-phone")
    submit(page)
    finish(page)
    assert stored(worker) == {(0, CRITERIA[0], "best"): order[0], (0, CRITERIA[0], "worst"): order[2],
                              (0, CRITERIA[1], "best"): order[3], (0, CRITERIA[1], "worst"): order[1]}
    context.close()
