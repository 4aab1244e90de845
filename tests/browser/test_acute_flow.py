"""The ACUTE-Eval comparison page in a real browser at 1280 and 390 px: two whole conversations side by
side (stacked on a phone, nothing wider than the screen), the judged speaker's turns marked, the
client refusing a missing choice or reason, the database then holding exactly the choices made with
the conversations in the order shown; the report renders."""
import re

import pytest

from studies.models import Assignment, Comparison
from tests.factories import prolific_id
from tests.studies.acute_helpers import acute_study, conversations_corpus

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
QUESTIONS = ("engagingness", "interestingness", "humanness", "knowledgeability")


def begin(page, live_server, study, worker):
    page.goto(f"{live_server.url}/r/{study.slug}/?PROLIFIC_PID={prolific_id(worker)}&STUDY_ID=e8bc163c82eee18733288c7d"
              f"&SESSION_ID={prolific_id('x-' + worker)}")
    page.check("input[name=agree]")
    page.click("button:has-text('Start')")
    page.wait_for_url(re.compile(r".*/items/0/$"))


def study_of(user, **kw):
    corpus = conversations_corpus(user, {"metabot": 2, "otherbot": 2}, turns=6)
    return acute_study(user, corpus=corpus, raters_per_item=2, items_per_assignment=2, platform="prolific", **kw)


def stored(worker):
    assignment = Assignment.objects.get(rater__external_id=prolific_id(worker))
    return {(c.item.position, c.criterion.name): (c.choice, c.reason, [c.left_conversation_id, c.right_conversation_id])
            for c in Comparison.objects.filter(assignment=assignment).select_related("item", "criterion")}


def boxes(page):
    return [page.get_by_test_id(f"acute-{side}").bounding_box() for side in ("left", "right")]


def test_acute_page_at_1280_shows_two_conversations_side_by_side_with_the_judged_turns_marked(
        live_server, browser, screenshot, user):
    study = study_of(user)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        begin(page, live_server, study, "w-acute-wide")
        left, right = boxes(page)
        assert abs(left["y"] - right["y"]) < 2 and left["x"] + left["width"] <= right["x"]  # side by side
        for side in ("left", "right"):
            article = page.get_by_test_id(f"acute-{side}")
            assert article.locator("li.acute-turn").count() == 6
            assert article.locator("li.acute-turn.judged").count() == 3  # the bot's turns
            judged = article.locator("li.acute-turn.judged").first.evaluate("e => getComputedStyle(e).backgroundColor")
            other = article.locator("li.acute-turn:not(.judged)").first.evaluate(
                "e => getComputedStyle(e).backgroundColor")
            assert judged != other
        text = page.get_by_test_id("acute-pair").inner_text()
        assert "metabot" in text.lower() or "otherbot" in text.lower()  # the turns' own text names the system
        assert "Speaker 1" in text and "Speaker 2" in text and "Partner" in text
        assert page.locator("fieldset.pairwise-criterion").count() == 4
        assert page.locator("section.conversation").count() == 0  # no third conversation above the two
        screenshot(page, "item-acute-1280")
    finally:
        context.close()


def test_acute_page_at_390_stacks_the_conversations_and_fits_the_screen(live_server, browser, screenshot, user):
    study = study_of(user)
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = context.new_page()
    try:
        begin(page, live_server, study, "w-acute-phone")
        left, right = boxes(page)
        assert right["y"] >= left["y"] + left["height"]  # stacked
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        box = page.locator("label.pair-choice").first.bounding_box()
        assert box["height"] >= 44 and box["width"] >= 44
        screenshot(page, "item-acute-390")
    finally:
        context.close()


def test_acute_full_assignment_at_1280_by_keyboard_and_click_stores_the_shown_order(live_server, browser, user):
    study = study_of(user)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    worker = "w-acute-keys"
    try:
        begin(page, live_server, study, worker)
        assignment = Assignment.objects.get(rater__external_id=prolific_id(worker))
        slots = {s.position: (s.item.position, s.response_order) for s in assignment.assignment_items.select_related("item")}
        expected = {}
        for step in range(2):
            if step == 0:
                page.click("form#item-form button[type=submit]")  # nothing chosen: refused in the page
                assert page.locator(".pairwise-criterion.has-error").count() == 4
                for key in "abab":
                    page.keyboard.press(key)  # each key answers one question and moves on
                choices = dict(zip(QUESTIONS, ("left", "right", "left", "right"), strict=True))
            else:
                for name in QUESTIONS:
                    page.locator(f".pairwise-criterion[data-criterion={name}] label.pair-choice[data-key=b]").click()
                choices = dict.fromkeys(QUESTIONS, "right")
            page.click("form#item-form button[type=submit]")  # the reasons are required
            assert page.locator(".pairwise-criterion.has-error").count() == 4
            for name in QUESTIONS:
                page.fill(f"textarea[name=reason-{name}]", f"why {step} {name}")
            position, order = slots[step]
            expected.update({(position, name): (choice, f"why {step} {name}", order) for name, choice in choices.items()})
            page.click("form#item-form button[type=submit]")
            page.wait_for_load_state("networkidle")
        assert stored(worker) == expected
    finally:
        context.close()


def test_acute_on_a_phone_by_touch_then_the_report_in_a_browser(live_server, browser, screenshot, user):
    study = study_of(user, reason="off")
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = context.new_page()
    try:
        begin(page, live_server, study, "w-acute-touch")
        assert page.locator("textarea").count() == 0 and page.locator("label.pair-choice.tie").count() == 0
        for _ in range(2):
            for name in QUESTIONS:
                page.locator(f".pairwise-criterion[data-criterion={name}] label.pair-choice[data-key=a]").tap()
            page.click("form#item-form button[type=submit]")
            page.wait_for_load_state("networkidle")
        assert sorted({v[0] for v in stored("w-acute-touch").values()}) == ["left"]
        assert len(stored("w-acute-touch")) == 8
    finally:
        context.close()
    report = browser.new_context(viewport={"width": 390, "height": 844})
    tab = report.new_page()
    try:
        from tests.browser.conftest import log_in

        log_in(tab, live_server, "alice", "pw-concord")
        tab.goto(f"{live_server.url}/studies/{study.slug}/report/")
        assert tab.get_by_test_id("acute-report").count() == 1
        screenshot(tab, "report-acute-390")
    finally:
        report.close()


def test_acute_check_pair_at_1280_looks_like_any_pair_and_a_wrong_answer_flags_the_rater(live_server, browser,
                                                                                         screenshot, user):
    from studies.authoring import checks
    from studies.authoring import services as authoring

    corpus = conversations_corpus(user, {"metabot": 2, "otherbot": 2}, turns=4)
    study = acute_study(user, corpus=corpus, raters_per_item=2, items_per_assignment=1, platform="prolific",
                        reason="off", publish=False)
    item = checks.check_item_create(study=study, kind="gold", rules=[{"greater": 1, "than": 2}], conversations=[
        "user: what do you do for fun?\nbot: I climb on weekends, and you?\nuser: I hike\nbot: Which trail?",
        "user: what do you do for fun?\nbot: i dont know\nuser: any hobbies?\nbot: i dont know"])
    checks.study_checks_configure(study=study, positions="1", min_pass_rate=1)
    authoring.study_publish(study=study)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    worker = "w-acute-check"
    try:
        begin(page, live_server, study, worker)
        assignment = Assignment.objects.get(rater__external_id=prolific_id(worker))
        first = assignment.assignment_items.order_by("position").first()
        assert first.item_id == item.pk  # the check pair is the first screen
        text = page.get_by_test_id("acute-pair").inner_text()
        assert "I climb on weekends" in text and "i dont know" in text and "Speaker 1" in text
        for side in ("left", "right"):
            assert page.get_by_test_id(f"acute-{side}").locator("li.acute-turn.judged").count() == 2
        screenshot(page, "item-acute-check-pair-1280")
        degenerate = "a" if first.response_order[0] != item.check_rules[0]["greater"] else "b"
        bodies = []
        for _ in range(2):  # the check pair (the degenerate side, wrongly), then the study's pair
            bodies.append(page.locator("body").inner_text().lower())
            for name in QUESTIONS:
                page.locator(f".pairwise-criterion[data-criterion={name}] label.pair-choice[data-key={degenerate}]").click()
            page.click("form#item-form button[type=submit]")
            page.wait_for_load_state("networkidle")
        for word in ("check", "gold", "attention", "known answer"):  # nothing on the screen tells it apart
            assert bodies[0].count(word) == bodies[1].count(word)
        assert len(stored(worker)) == 8
    finally:
        context.close()
    from studies.rating import answers as answering

    assignment.refresh_from_db()
    if assignment.status == Assignment.Status.STARTED:
        answering.assignment_submit(assignment=assignment)
        assignment.refresh_from_db()
    assert (assignment.checks_shown, assignment.checks_passed, assignment.checks_failed) == (1, 0, True)
