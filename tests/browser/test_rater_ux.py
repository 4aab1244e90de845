"""What raters see, in a real browser: the page's checks say what the server would say, all at once,
and clear when fixed; autosave news does not hide them; long Likert scales have keys; BWS ranks by
touch on a phone."""
import re

import pytest

from studies.designs import design_for
from studies.models import Assignment, Rating
from tests.browser.conftest import wait_until
from tests.browser.test_rater_flow import begin
from tests.factories import prolific_id
from tests.studies.test_rater_ux import ME

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TYPED = ["12.5", " 80 ", ".5", "0", "", "-40", "1500", "999.01", "12,5", "1,000", "ten", "1e3", "NaN", "12.5.1"]


def test_the_page_and_the_server_give_the_same_message_for_every_typed_value(live_server, page, make_study):
    study = make_study("rme", raters_per_item=2, items_per_assignment=2, platform="prolific")
    begin(page, live_server, study, "w-agree")
    boxes = page.locator(".magnitude-row input")
    note = page.locator(".magnitude-row .field-error").first
    for typed in TYPED:
        boxes.first.fill(typed)  # every other box stays empty, so the submit is always stopped
        page.click("form#item-form button[type=submit]")
        expected = design_for("rme").typed_value_parse(ME, typed)[1] or ""
        assert (note.inner_text() if note.is_visible() else "") == expected, typed
        assert (boxes.first.get_attribute("aria-invalid") == "true") == bool(expected), typed
    assert page.url.endswith("/items/0/") and Rating.objects.count() == 0


def test_all_problems_at_once_marks_clear_when_fixed_and_autosave_keeps_its_own_notice(live_server, page, make_study):
    study = make_study("rme", raters_per_item=2, items_per_assignment=2, platform="prolific")
    begin(page, live_server, study, "w-onepass")
    boxes = page.locator(".magnitude-row input").all()
    boxes[0].fill("-40")
    boxes[1].fill("12,5")
    page.click("form#item-form button[type=submit]")
    summary = page.get_by_test_id("form-problems")
    assert summary.inner_text() == f"{len(boxes)} answers need attention; they are marked below."
    assert page.locator(".magnitude-row.has-error").count() == len(boxes)
    assert boxes[0].evaluate("el => el === document.activeElement")  # the first problem has the focus
    errors = [row.locator(".field-error").inner_text() for row in page.locator(".magnitude-row").all()]
    assert errors[:2] == ["must not be negative: use a number from 0 to 999", "write 12.5 with a point, not a comma"]
    assert set(errors[2:]) == {"give a value for this response"}
    boxes[1].fill("12.5")  # fixed: its mark, message and aria-invalid go at once, without submitting
    assert boxes[1].get_attribute("aria-invalid") is None
    assert not page.locator(".magnitude-row").nth(1).locator(".field-error").is_visible()
    assert "has-error" not in page.locator(".magnitude-row").nth(1).get_attribute("class")
    assert summary.inner_text() == f"{len(boxes) - 1} answers need attention; they are marked below."
    page.get_by_test_id("autosave").filter(has_text="Saved").wait_for()  # the draft of "12.5" was saved...
    assert summary.inner_text().startswith(f"{len(boxes) - 1} answers need attention")  # ...in its own region
    for box in boxes:
        box.fill("37.5")
    assert summary.is_hidden()
    page.click("form#item-form button[type=submit]")
    page.wait_for_url(re.compile(r".*/items/1/$"))
    assignment = Assignment.objects.get(rater__external_id=prolific_id("w-onepass"))
    assert set(Rating.objects.filter(assignment=assignment).values_list("value", flat=True)) == {37.5}


def test_an_eleven_point_scale_takes_two_digit_keys(live_server, page, make_study):
    study = make_study("likert", raters_per_item=2, items_per_assignment=2, platform="prolific", points=11)
    begin(page, live_server, study, "w-keys")
    assert "type both digits quickly, or 0 alone for 10" in page.locator(".keys").first.inner_text()
    row = page.locator(".likert-row").first
    checked = lambda: row.locator("input:checked").get_attribute("value")  # noqa: E731
    row.focus()
    page.keyboard.press("1")
    page.keyboard.press("1")
    assert checked() == "11"
    page.keyboard.press("0")
    assert checked() == "10"
    page.wait_for_timeout(1100)  # a pause starts a new number
    page.keyboard.press("7")
    assert checked() == "7"
    page.keyboard.press("1")
    page.keyboard.press("2")  # 12 is not a point: the 2 starts over
    assert checked() == "2"


def touch_drag(tab, start, end, steps=8):
    """A finger drag through the DevTools protocol: real touch events, from which Chromium makes the
    pointer events (pointerType "touch") a phone would."""
    cdp = tab.context.new_cdp_session(tab)
    (x0, y0), (x1, y1) = start, end
    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x0, "y": y0}]})
    for i in range(1, steps + 1):
        point = {"x": x0 + (x1 - x0) * i / steps, "y": y0 + (y1 - y0) * i / steps}
        cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [point]})
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})


def test_bws_ranks_by_touch_drag_on_a_375px_phone(live_server, browser, make_study, screenshot):
    study = make_study("bws", raters_per_item=2, items_per_assignment=2, platform="prolific")
    context = browser.new_context(viewport={"width": 375, "height": 740}, is_mobile=True, has_touch=True,
                                  device_scale_factor=2)
    tab = context.new_page()
    try:
        begin(tab, live_server, study, "w-touch")
        assert tab.evaluate("document.documentElement.scrollWidth") <= 375
        ranking = tab.locator("ol.ranking").first
        fields = lambda: [li.get_attribute("data-field") for li in ranking.locator("li.rank-item").all()]  # noqa: E731
        before = fields()
        last, first = ranking.locator("li.rank-item .handle").last, ranking.locator("li.rank-item").first
        last.scroll_into_view_if_needed()
        handle, top = last.bounding_box(), first.bounding_box()
        touch_drag(tab, (handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2),
                   (handle["x"] + handle["width"] / 2, top["y"] + 2))
        assert fields() == [before[-1], *before[:-1]]
        ranks = [s.input_value() for s in ranking.locator("select").all()]
        assert ranks == ["1", "2", "3", "4"]
        wait_until(tab, "document.querySelector('[data-testid=autosave]').textContent === 'Saved'")
        slot = Assignment.objects.get(rater__external_id=prolific_id("w-touch")).assignment_items.get(position=0)
        assert slot.draft[before[-1]] == "1" and slot.draft[before[0]] == "2"
        screenshot(tab, "bws-touch-375")
    finally:
        context.close()


def test_a_server_refusal_is_cleared_field_by_field_as_the_rater_fixes_it(live_server, page, make_study):
    study = make_study("likert", raters_per_item=2, items_per_assignment=2, platform="prolific")
    begin(page, live_server, study, "w-server")
    rows = page.locator(".likert-row")
    rows.first.locator("label.point:has(input[value='3'])").click()
    with page.expect_navigation():
        page.evaluate("document.getElementById('item-form').submit()")  # past the page's checks
    summary = page.get_by_test_id("form-problems")
    assert "Some answers need attention" in summary.inner_text()
    marked = page.locator(".likert-row.has-error")
    assert marked.count() == rows.count() - 1
    assert marked.first.locator(".field-error").inner_text() == "pick a point for this response"
    assert marked.first.get_attribute("aria-invalid") == "true"
    first_marked = marked.first.get_attribute("data-field")
    marked.first.locator("label.point:has(input[value='5'])").click()
    fixed = page.locator(f".likert-row[data-field='{first_marked}']")
    assert "has-error" not in fixed.get_attribute("class") and fixed.get_attribute("aria-invalid") is None
    remaining = rows.count() - 2
    assert summary.inner_text() == (f"{remaining} answers need attention; they are marked below." if remaining > 1
                                    else "1 answer needs attention; it is marked below.")
