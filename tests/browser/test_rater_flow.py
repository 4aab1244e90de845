"""Raters in a real browser: one full assignment per design, then the database must hold exactly
the ratings entered; plus validation (client and server), autosave, resume, and the refusal of a
second condition. Item screens are saved as screenshots."""
import re

import pytest

from studies.authoring import services
from studies.designs.common import field_name
from studies.models import Assignment, Rater, Rating
from tests.factories import prolific_id

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def begin(page, live_server, study, worker):
    page.goto(f"{live_server.url}/r/{study.slug}/?PROLIFIC_PID={prolific_id(worker)}&STUDY_ID=e8bc163c82eee18733288c7d&SESSION_ID={prolific_id('x-' + worker + '')}")
    page.check("input[name=agree]")
    page.click("button:has-text('Start')")
    page.wait_for_url(re.compile(r".*/items/0/$"))


def answer_item(page, design, step):
    """Fill one item screen; return {(item position, field name): value entered} (every screen names its
    responses A, B, ...: the position tells the screens apart)."""
    position = int(page.url.rstrip("/").rsplit("/", 1)[1])
    given = {}
    if design == "likert":
        for i, row in enumerate(page.locator(".likert-row").all()):
            value = (i + step) % 6 + 1
            row.locator(f"label.point:has(input[value='{value}'])").click()
            given[position, row.get_attribute("data-field")] = value
    elif design in ("rme", "bme"):
        for i, box in enumerate(page.locator(".magnitude-row input").all()):
            value = 40 + 35 * i + step
            box.fill(str(value))
            given[position, box.get_attribute("name")] = value
    else:
        lists = page.locator("ol.ranking").all()
        # first criterion: drag the last response to the top; second: rank with the selects
        first = lists[0]
        first.locator("li.rank-item").last.drag_to(first.locator("li.rank-item").first)
        if any(s.input_value() == "" for s in first.locator("select").all()):
            first.locator("li.rank-item").first.locator("button.move[data-step='1']").click()
        for other in lists[1:]:
            selects = other.locator("select").all()
            for rank, select in zip([3, 1, 4, 2], selects, strict=True):
                select.select_option(str(rank))
        for select in page.locator("ol.ranking select").all():
            given[position, select.get_attribute("name")] = int(select.input_value())
    return given


def stored(worker):
    """{(item position, field name): value} of the worker's stored ratings, as answer_item gives them."""
    assignment = Assignment.objects.get(rater__external_id=prolific_id(worker))
    slots = {s.item_id: s for s in assignment.assignment_items.all()}
    return {(slots[i].position, field_name(r, c, slots[i].response_order)): int(v if v is not None else k)
            for i, r, c, v, k in Rating.objects.filter(assignment=assignment).values_list(
                "item_id", "response_id", "criterion__name", "value", "rank")}


@pytest.mark.parametrize("design", ["likert", "rme", "bme", "bws"])
def test_full_assignment_stores_exactly_what_was_entered(live_server, page, screenshot, make_study, design):
    study = make_study(design, raters_per_item=2, items_per_assignment=3, platform="prolific")
    worker = f"w-{design}"
    begin(page, live_server, study, worker)
    entered = {}
    for step in range(3):
        if step == 0:
            if design in ("rme", "bme"):
                shown = Assignment.objects.get(rater__external_id=prolific_id(worker)).assignment_items.get(position=0).item
                anchor = float(page.get_by_test_id("reference-value").inner_text())
                assert anchor == (100 if design == "rme" else shown.reference_value)
            assert page.locator("article.response").count() == (3 if design in ("rme", "bme") else 4)
            assert "human" not in page.locator("section.responses").inner_text().lower()
            screenshot(page, f"item-{design}")
        entered.update(answer_item(page, design, step))
        page.click("form#item-form button[type=submit]")
        page.wait_for_load_state("networkidle")
    assert "last questions" in page.locator("h1").inner_text()
    page.check("input[name=prior_rating_experience][value=no]")
    page.check("input[name=prior_agent_experience][value=yes]")
    page.select_option("select[name=age_band]", "25-34")
    page.click("button:has-text('Submit')")
    code = page.get_by_test_id("completion-code").inner_text()
    assert page.get_by_role("link", name="Return to Prolific").get_attribute("href").endswith(f"cc={code}")
    assignment = Assignment.objects.get(rater__external_id=prolific_id(worker))
    assert (assignment.status, assignment.completion_code) == ("submitted", code)
    assert stored(worker) == entered
    assert len(entered) == 3 * 2 * (3 if design in ("rme", "bme") else 4)
    rater = Rater.objects.get(external_id=prolific_id(worker))
    assert (rater.prior_rating_experience, rater.prior_agent_experience, rater.questionnaire) == (False, True, {"age_band": "25-34"})
    assert assignment.assignment_items.filter(started_at__isnull=False, answered_at__isnull=False).count() == 3


def test_bad_magnitudes_are_explained_and_kept_client_and_server_side(live_server, page, screenshot, make_study):
    study = make_study("rme", raters_per_item=2, items_per_assignment=2, platform="prolific")
    begin(page, live_server, study, "w-typo")
    boxes = page.locator(".magnitude-row input").all()
    for box in boxes:
        box.fill("80")
    boxes[1].fill("1500")
    page.click("form#item-form button[type=submit]")
    assert page.url.endswith("/items/0/")  # the page stopped the submit
    assert page.locator(".magnitude-row.has-error .field-error").first.inner_text() == "use a number from 0 to 999"
    assert boxes[1].input_value() == "1500"
    with page.expect_navigation():
        page.evaluate("document.getElementById('item-form').submit()")  # without the page's checks
    assert "Some answers need attention" in page.content()
    # the server's message is the page's (RatingsDesign.typed_value_parse, studies.designs.ratings)
    assert page.locator(".magnitude-row.has-error .field-error").inner_text() == "use a number from 0 to 999"
    assert page.locator(".magnitude-row input").nth(1).input_value() == "1500"
    assert page.locator(".magnitude-row input").nth(0).input_value() == "80"
    screenshot(page, "validation-error")
    assert Rating.objects.count() == 0


def test_autosave_and_resume_after_reload(live_server, page, make_study):
    study = make_study("likert", raters_per_item=2, items_per_assignment=3, platform="prolific")
    begin(page, live_server, study, "w-resume")
    first = answer_item(page, "likert", 0)
    page.click("form#item-form button[type=submit]")
    page.wait_for_url(re.compile(r".*/items/1/$"))
    row = page.locator(".likert-row").first
    row.locator("label.point:has(input[value='2'])").click()
    page.locator(".autosave:has-text('Saved')").wait_for()
    page.goto(f"{live_server.url}/r/{study.slug}/?PROLIFIC_PID=132917d128ccd3f6f0571f52&STUDY_ID=e8bc163c82eee18733288c7d&SESSION_ID=55f46dba3d671f916f7e9293")  # reopen
    page.wait_for_url(re.compile(r".*/items/1/$"))
    assert row.locator("input[value='2']").is_checked()  # the autosaved answer came back
    page.click("text=Back")
    for (_, field), value in first.items():
        assert page.locator(f"input[name='{field}'][value='{value}']").is_checked()
    assert stored("w-resume") == first


def test_a_submit_answers_with_the_next_item_and_reload_back_and_resubmit_are_safe(live_server, page, make_study):
    """One request per item: the submit's answer is the next item's page, shown at its own address;
    a reload then fetches that item (nothing is sent again), Back shows the answered item with its
    answers, and sending it again stores nothing twice."""
    study = make_study("likert", raters_per_item=2, items_per_assignment=3, platform="prolific")
    begin(page, live_server, study, "w-nav")
    first = answer_item(page, "likert", 0)
    documents = []
    page.on("request", lambda r: documents.append((r.method, r.url.split("/r/a/")[-1]))
            if r.resource_type == "document" else None)
    page.click("form#item-form button[type=submit]")
    page.wait_for_url(re.compile(r".*/items/1/$"))
    assert "Conversation 2 of 3" in page.locator("main").inner_text()
    assert [method for method, _ in documents] == ["POST"]  # no redirect, no second request
    assert documents[0][1].endswith("/items/0/")
    documents.clear()
    page.reload()
    assert page.url.endswith("/items/1/") and "Conversation 2 of 3" in page.locator("main").inner_text()
    assert [method for method, _ in documents] == ["GET"]  # the reload re-sent nothing
    page.go_back()
    page.wait_for_url(re.compile(r".*/items/0/$"))
    for (_, field), value in first.items():
        assert page.locator(f"input[name='{field}'][value='{value}']").is_checked()
    page.click("form#item-form button[type=submit]")  # the same answers again
    page.wait_for_url(re.compile(r".*/items/1/$"))
    assert stored("w-nav") == first and Rating.objects.filter(assignment__rater__external_id=prolific_id("w-nav")).count() == 8
    second = answer_item(page, "likert", 1)
    page.click("form#item-form button[type=submit]")
    page.wait_for_url(re.compile(r".*/items/2/$"))
    documents.clear()
    page.go_back()  # to an entry that was a submit's answer: the item at its address, nothing re-sent
    page.wait_for_url(re.compile(r".*/items/1/$"))
    assert "Conversation 2 of 3" in page.locator("main").inner_text()
    assert "POST" not in [method for method, _ in documents]
    for (_, field), value in second.items():
        assert page.locator(f"input[name='{field}'][value='{value}']").is_checked()
    assert stored("w-nav") == {**first, **second}


def test_a_second_condition_of_the_same_experiment_is_refused(live_server, page, make_study, user):
    experiment = services.experiment_create(owner=user, title="Between subjects")
    likert = make_study("likert", experiment=experiment, platform="prolific")
    bws = make_study("bws", experiment=experiment, platform="prolific")
    begin(page, live_server, likert, "w-both")
    page.goto(f"{live_server.url}/r/{bws.slug}/?PROLIFIC_PID=d4d3d158589ce28304e4aae5&STUDY_ID=ad328846aa18b32a33581637&SESSION_ID=03e0769b10886aef0ff21708")
    assert "already taken part in this study through another link" in page.locator("main").inner_text()
    assert Assignment.objects.filter(rater__external_id=prolific_id("w-both")).count() == 1


def test_phone_sized_screen_and_mturk_hand_back(live_server, browser, screenshot, make_study):
    study = make_study("likert", raters_per_item=2, items_per_assignment=1, platform="mturk")
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.goto(f"{live_server.url}/r/{study.slug}/?workerId=A1B2&assignmentId=ASG9&hitId=HIT7"
              f"&turkSubmitTo=https%3A%2F%2Fworkersandbox.mturk.com")
    page.check("input[name=agree]")
    page.click("button:has-text('Start')")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # nothing wider than the phone
    screenshot(page, "item-likert-phone")
    answer_item(page, "likert", 1)
    page.click("form#item-form button[type=submit]")
    page.check("input[name=prior_rating_experience][value=yes]")
    page.check("input[name=prior_agent_experience][value=yes]")
    page.click("button:has-text('Submit')")
    form = page.locator("form[action='https://workersandbox.mturk.com/mturk/externalSubmit']")
    assert form.locator("input[name=assignmentId]").input_value() == "ASG9"
    assert form.locator("input[name=completion_code]").input_value() == page.get_by_test_id("completion-code").inner_text()
    context.close()
