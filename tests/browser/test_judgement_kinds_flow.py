"""Categorical, multi-label and free-text criteria in a real browser, on a desktop and on a 390 px
phone: keyboard shortcuts, the page's checks (the server's messages), the required reason, autosave,
reload and Back keeping every answer, and the answers stored."""
import re

import pytest

from studies.authoring import services as authoring
from studies.models import AssignmentItem, Rating
from tests.browser.test_rater_flow import begin
from tests.factories import prolific_id

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = {"desktop": {"width": 1200, "height": 900}, "phone390": {"width": 390, "height": 844}}
NO_SIDEWAYS = "document.documentElement.scrollWidth <= document.documentElement.clientWidth + 1"


@pytest.fixture(params=list(WIDTHS))
def tab(request, browser):
    phone = request.param != "desktop"
    context = browser.new_context(viewport=WIDTHS[request.param], is_mobile=phone, has_touch=phone)
    page = context.new_page()
    yield page
    context.close()


def kind_study(user, corpus, criterion):
    experiment = authoring.experiment_create(owner=user, title=f"Browser {criterion['kind']}")
    study = authoring.study_create(experiment=experiment, title=criterion["kind"], design="likert",
                                   raters_per_item=2, items_per_assignment=2, platform="prolific",
                                   criteria=[criterion])
    authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred"], reference_system="human")
    authoring.study_publish(study=study)
    return study


def saved(tab):
    tab.get_by_test_id("autosave").filter(has_text="Saved").wait_for()


def draft(worker):
    return AssignmentItem.objects.get(assignment__rater__external_id=prolific_id(worker), position=0).draft


def submit(tab):
    tab.click("form#item-form button[type=submit]")


def test_categorical_keys_reason_autosave_reload_and_back(live_server, tab, user, corpus):
    study = kind_study(user, corpus, {"name": "safety", "question": "Is this response safe?", "kind": "categorical",
                                      "options": {"labels": ["safe", "unsafe", "unsure"]}, "rationale": "required"})
    begin(tab, live_server, study, "w-cat")
    rows = tab.locator(".label-row")
    assert rows.count() == 3 and tab.evaluate(NO_SIDEWAYS)
    submit(tab)  # nothing chosen: every row and every reason is marked, nothing leaves the page
    assert rows.first.locator(".field-error").inner_text() == "pick one of the labels for this response"
    assert tab.locator(".why-row .field-error").first.inner_text() == "say why in a few words"
    assert tab.get_by_test_id("form-problems").inner_text() == "6 answers need attention; they are marked below."
    for i, row in enumerate(rows.all()):  # keyboard: focus the row, type the label's number
        row.focus()
        tab.keyboard.press(str(i + 1))
    assert [r.locator("input:checked").get_attribute("value") for r in rows.all()] == ["safe", "unsafe", "unsure"]
    assert rows.first.get_attribute("aria-invalid") is None  # the mark went once fixed
    whys = tab.locator(".why-row textarea").all()
    for i, box in enumerate(whys):
        box.fill(f"Because of reason {i}.")
    saved(tab)
    field = rows.nth(1).get_attribute("data-field")
    assert draft("w-cat")[field] == "unsafe" and draft("w-cat")[field + ".rationale"] == "Because of reason 1."
    tab.reload()
    assert rows.nth(1).locator("input:checked").get_attribute("value") == "unsafe"
    assert tab.locator(".why-row textarea").nth(2).input_value() == "Because of reason 2."
    submit(tab)
    tab.wait_for_url(re.compile(r".*/items/1/$"))
    tab.click("a:has-text('Back')")
    tab.wait_for_url(re.compile(r".*/items/0/$"))
    # the rater's order of the responses is kept, so each row shows its own stored label
    assert [r.locator("input:checked").get_attribute("value") for r in rows.all()] == ["safe", "unsafe", "unsure"]
    assert tab.locator(".why-row textarea").first.input_value() == "Because of reason 0."
    stored = Rating.objects.filter(assignment__rater__external_id=prolific_id("w-cat"))
    assert sorted(stored.values_list("label", flat=True)) == ["safe", "unsafe", "unsure"]
    assert sorted(stored.values_list("rationale", flat=True)) == [f"Because of reason {i}." for i in range(3)]


def test_multilabel_keys_none_of_these_autosave_reload_and_back(live_server, tab, user, corpus):
    study = kind_study(user, corpus, {"name": "problems", "question": "Which problems does it have?",
                                      "kind": "multilabel",
                                      "options": {"labels": ["repetition", "contradiction", "off-topic"]}})
    begin(tab, live_server, study, "w-multi")
    rows = tab.locator(".labelset-row")
    assert rows.count() == 3 and tab.evaluate(NO_SIDEWAYS)
    rows.first.focus()
    tab.keyboard.press("1")
    tab.keyboard.press("3")
    assert [b.get_attribute("value") for b in rows.first.locator("input:checked").all()] == ["repetition", "off-topic"]
    tab.keyboard.press("0")  # "None of these" clears the ticked labels
    assert [b.get_attribute("value") for b in rows.first.locator("input:checked").all()] == ["__none__"]
    tab.keyboard.press("2")  # a label clears "None of these"
    assert [b.get_attribute("value") for b in rows.first.locator("input:checked").all()] == ["contradiction"]
    submit(tab)
    assert rows.nth(1).locator(".field-error").inner_text() == "tick the labels that apply, or “None of these”"
    rows.nth(1).locator("label.choice:has(input[value='repetition'])").click()
    rows.nth(1).locator("label.choice:has(input[value='off-topic'])").click()
    rows.nth(2).locator("label.choice.none").click()
    saved(tab)
    fields = [r.get_attribute("data-field") for r in rows.all()]
    assert [draft("w-multi")[f] for f in fields] == [["contradiction"], ["repetition", "off-topic"], ["__none__"]]
    tab.reload()
    assert [b.get_attribute("value") for b in rows.nth(1).locator("input:checked").all()] == ["repetition", "off-topic"]
    submit(tab)
    tab.wait_for_url(re.compile(r".*/items/1/$"))
    tab.go_back()
    tab.wait_for_url(re.compile(r".*/items/0/$"))
    tab.reload()
    assert [b.get_attribute("value") for b in rows.nth(2).locator("input:checked").all()] == ["__none__"]
    stored = dict(Rating.objects.filter(assignment__rater__external_id=prolific_id("w-multi"))
                  .values_list("response_id", "labels"))
    assert sorted(map(tuple, stored.values())) == [(), ("contradiction",), ("off-topic", "repetition")]


def test_free_text_lengths_autosave_reload_and_back(live_server, tab, user, corpus):
    study = kind_study(user, corpus, {"name": "notes", "question": "What would make it better?", "kind": "free_text",
                                      "options": {"min_length": 10, "max_length": 80}, "rationale": "optional"})
    begin(tab, live_server, study, "w-text")
    boxes = tab.locator(".text-row:not(.why-row) textarea")
    assert boxes.count() == 3 and tab.evaluate(NO_SIDEWAYS)
    boxes.nth(0).fill("Too short")
    boxes.nth(1).fill("x" * 81)
    submit(tab)
    notes = tab.locator(".text-row:not(.why-row) .field-error")
    assert notes.nth(0).inner_text() == "write at least 10 characters (now 9)"
    assert notes.nth(1).inner_text() == "write at most 80 characters (now 81)"
    assert notes.nth(2).inner_text() == "write at least 10 characters (now 0)"
    assert not tab.locator(".why-row .field-error").first.is_visible()  # an optional reason may stay empty
    texts = ["Shorter, and answer the question.", "Say where the town is.", "Nothing: it is a fine reply."]
    for box, text in zip(boxes.all(), texts, strict=True):
        box.fill(text)
    tab.locator(".why-row textarea").first.fill("It rambles a lot and never gets to the point at all.")
    saved(tab)
    tab.reload()
    assert [b.input_value() for b in boxes.all()] == texts
    assert tab.locator(".why-row textarea").first.input_value().startswith("It rambles a lot")
    submit(tab)
    tab.wait_for_url(re.compile(r".*/items/1/$"))
    tab.click("a:has-text('Back')")
    tab.wait_for_url(re.compile(r".*/items/0/$"))
    assert sorted(b.input_value() for b in boxes.all()) == sorted(texts)
    stored = Rating.objects.filter(assignment__rater__external_id=prolific_id("w-text"))
    assert sorted(stored.values_list("text", flat=True)) == sorted(texts)
    assert sorted(stored.values_list("rationale", flat=True))[-1].startswith("It rambles")


def test_categorical_labels_demo_report_and_rater_page_fit_a_390px_phone(live_server, browser):
    from studies.authoring.demo import DEMO_CORPUS, DEMO_PASSWORD, DEMO_USER, demo_load, demo_user
    from studies.authoring.kinds_demo import KINDS_EXPERIMENT, kinds_demo_load
    from studies.models import Corpus, Study
    from tests.browser.conftest import log_in

    demo_load()  # the demo corpus and researcher; then the labels demo on it
    kinds_demo_load(owner=demo_user(), corpus=Corpus.objects.get(slug=DEMO_CORPUS))
    study = Study.objects.get(experiment__slug=KINDS_EXPERIMENT)
    context = browser.new_context(viewport=WIDTHS["phone390"], is_mobile=True, has_touch=True)
    page = context.new_page()
    try:
        log_in(page, live_server, DEMO_USER, DEMO_PASSWORD)
        for path in (f"/studies/{study.slug}/report/", f"/studies/{study.slug}/", f"/studies/{study.slug}/preview/",
                     f"/studies/{study.slug}/browse/"):
            page.goto(live_server.url + path)
            assert page.evaluate(NO_SIDEWAYS), path
        page.goto(f"{live_server.url}/studies/{study.slug}/report/")
        assert page.locator("[data-testid=label-report][data-kind=categorical]").is_visible()
        assert page.locator("[data-testid=label-report][data-kind=multilabel]").is_visible()
    finally:
        context.close()
