"""Span annotation in a real browser: words marked with a mouse drag and clicks and with the keyboard at
1280 px, and with a finger (touch taps, no text selection) on a 390 px phone; the page's own check before
sending, autosave and reload keeping the spans, and the offsets stored being the marked words'."""
import io
import re

import pytest

from studies.analysis.spans import tokens
from studies.authoring import services as authoring
from studies.corpora import services as corpus_imports
from studies.models import Rating, Response
from tests.browser.test_rater_flow import begin
from tests.conftest import jsonl_bytes

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LABELS = ["factual error", "unsafe", "off-topic"]
NO_SIDEWAYS = "document.documentElement.scrollWidth <= document.documentElement.clientWidth + 1"


@pytest.fixture
def corpus(user):
    """Responses of several words each (a word alone, a run of words and the last word can be marked)."""
    header = {"concord": "dialogues/1", "systems": ["seq2seq", "hred"]}
    conversations = [{"id": f"c{i}", "turns": [f"Where is Paris {i}?"],
                      "responses": {"seq2seq": f"Paris is in Spain, I think {i}.",
                                    "hred": f"It is the capital of France {i}."}} for i in range(3)]
    return corpus_imports.dialogues_import(stream=io.BytesIO(jsonl_bytes(conversations, header)),
                                           source_name="spans.jsonl", owner=user).corpus


def span_study(user, corpus):
    experiment = authoring.experiment_create(owner=user, title="Browser spans")
    study = authoring.study_create(experiment=experiment, title="Spans", design="likert", raters_per_item=2,
                                   items_per_assignment=2, platform="prolific",
                                   criteria=[{"name": "errors", "question": "Mark what is wrong", "kind": "spans",
                                              "options": {"labels": LABELS}}])
    authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred"])
    authoring.study_publish(study=study)
    return study


@pytest.fixture
def desktop(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def phone(browser):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = context.new_page()
    yield page
    context.close()


def words(row):
    return row.locator(".span-token")


def stored_spans(study):
    """The stored spans by response, each as (the marked text, its label)."""
    out = {}
    for rating in Rating.objects.filter(assignment__study=study, item__position__gte=0, criterion__name="errors"):
        text = Response.objects.get(pk=rating.response_id).text
        out[rating.response_id] = [(text[s["start"]:s["end"]], s["label"]) for s in rating.spans]
    return out


def nothing_elsewhere(tab, keep):
    """Every other row: "Nothing to mark here"."""
    for i, row in enumerate(tab.get_by_test_id("span-row").all()):
        if i not in keep:
            row.get_by_test_id("span-nothing").click()


def submit(tab):
    tab.click("form#item-form button[type=submit]")


def test_span_mouse_drag_and_clicks_mark_words_at_1280(live_server, desktop, user, corpus):
    study = span_study(user, corpus)
    begin(desktop, live_server, study, "w-span-mouse")
    row = desktop.get_by_test_id("span-row").first
    tokens = words(row)
    first, third = tokens.nth(0).bounding_box(), tokens.nth(2).bounding_box()
    desktop.mouse.move(first["x"] + 2, first["y"] + first["height"] / 2)
    desktop.mouse.down()
    desktop.mouse.move(third["x"] + third["width"] - 2, third["y"] + third["height"] / 2, steps=5)
    desktop.mouse.up()
    assert row.get_by_test_id("span-item").count() == 1
    assert all("marked" in (tokens.nth(i).get_attribute("class") or "") for i in range(3))
    row.locator("label.span-label", has_text="off-topic").click()  # the label for the next span
    last = tokens.count() - 1
    tokens.nth(last).click()
    tokens.nth(last).click()  # a word alone: clicked twice
    assert row.get_by_test_id("span-item").count() == 2
    expected = [" ".join(tokens.nth(i).inner_text() for i in range(3)), tokens.nth(last).inner_text()]
    nothing_elsewhere(desktop, keep={0})
    submit(desktop)
    desktop.wait_for_url(re.compile(r".*/items/1/$"))
    marked = [spans for spans in stored_spans(study).values() if spans]
    assert len(marked) == 1
    (given,) = marked
    assert [label for _, label in given] == ["factual error", "off-topic"]
    assert [text for text, _ in given] == expected  # the stored offsets are the marked words' (single spaces here)


def test_span_keyboard_marks_relabels_and_unmarks_at_1280(live_server, desktop, user, corpus):
    study = span_study(user, corpus)
    begin(desktop, live_server, study, "w-span-keys")
    row = desktop.get_by_test_id("span-row").first
    doc = row.get_by_test_id("span-doc").first
    doc.focus()
    desktop.keyboard.press("2")  # the second label: unsafe
    desktop.keyboard.press("ArrowRight")
    desktop.keyboard.press("Space")  # start at the second word
    desktop.keyboard.press("ArrowRight")
    desktop.keyboard.press("Enter")  # end at the third: nothing is sent
    assert desktop.url.endswith("/items/0/")
    assert row.get_by_test_id("span-item").count() == 1 and "unsafe" in row.get_by_test_id("span-item").inner_text()
    desktop.keyboard.press("End")
    desktop.keyboard.press("Space")
    desktop.keyboard.press("Space")
    assert row.get_by_test_id("span-item").count() == 2
    desktop.keyboard.press("Delete")  # unmark the span under the cursor
    assert row.get_by_test_id("span-item").count() == 1
    tokens = words(row)
    assert "marked" in tokens.nth(1).get_attribute("class") and "marked" in tokens.nth(2).get_attribute("class")
    assert "marked" not in (tokens.nth(0).get_attribute("class") or "")
    nothing_elsewhere(desktop, keep={0})
    submit(desktop)
    desktop.wait_for_url(re.compile(r".*/items/1/$"))
    (given,) = [spans for spans in stored_spans(study).values() if spans]
    assert given == [(given[0][0], "unsafe")] and len(given[0][0].split()) >= 1


def test_span_touch_taps_mark_and_unmark_words_at_390(live_server, phone, user, corpus):
    study = span_study(user, corpus)
    begin(phone, live_server, study, "w-span-touch")
    assert phone.evaluate(NO_SIDEWAYS)
    row = phone.get_by_test_id("span-row").first
    tokens = words(row)
    tokens.nth(0).tap()  # the first word...
    assert "anchor" in tokens.nth(0).get_attribute("class")
    tokens.nth(1).tap()  # ...then the last
    assert row.get_by_test_id("span-item").count() == 1
    tokens.nth(1).tap()  # a tap on a marked word unmarks its span
    assert row.get_by_test_id("span-item").count() == 0
    row.locator("label.span-label", has_text="factual error").tap()
    tokens.nth(1).tap()
    tokens.nth(1).tap()  # one word: tapped twice
    assert row.get_by_test_id("span-item").count() == 1
    assert phone.evaluate("window.getSelection().toString()") == ""  # no text selection was needed
    assert phone.evaluate(NO_SIDEWAYS)
    for other in phone.get_by_test_id("span-row").all()[1:]:
        other.get_by_test_id("span-nothing").tap()
    phone.locator("form#item-form button[type=submit]").tap()
    phone.wait_for_url(re.compile(r".*/items/1/$"))
    (given,) = [spans for spans in stored_spans(study).values() if spans]
    assert [label for _, label in given] == ["factual error"] and len(given[0][0].split()) == 1


def test_span_unanswered_stops_the_send_and_reload_keeps_marked_spans(live_server, desktop, user, corpus):
    study = span_study(user, corpus)
    begin(desktop, live_server, study, "w-span-keep")
    submit(desktop)  # nothing marked and nothing confirmed: every row says so, nothing leaves the page
    notes = desktop.locator(".span-row .field-error")
    assert desktop.url.endswith("/items/0/")
    assert notes.first.inner_text() == "mark the spans, or confirm there is nothing to mark"
    row = desktop.get_by_test_id("span-row").first
    words(row).nth(0).click()
    words(row).nth(0).click()
    assert row.get_attribute("aria-invalid") is None
    desktop.get_by_test_id("autosave").filter(has_text="Saved").wait_for()
    desktop.reload()
    row = desktop.get_by_test_id("span-row").first
    assert row.get_by_test_id("span-item").count() == 1 and "marked" in words(row).nth(0).get_attribute("class")


def test_span_touch_in_a_dialogue_turn_stores_the_turn_at_390(live_server, phone, user):
    from studies.models import Conversation
    from tests.studies.test_design_contract import dialogue_corpus_bytes

    corpus = corpus_imports.dialogues_import(stream=io.BytesIO(dialogue_corpus_bytes(4)), source_name="fed.json",
                                             owner=user).corpus
    experiment = authoring.experiment_create(owner=user, title="Browser dialogue spans")
    study = authoring.study_create(experiment=experiment, title="Dialogue spans", design="likert", unit="dialogue",
                                   raters_per_item=2, items_per_assignment=2, platform="prolific",
                                   criteria=[{"name": "errors", "question": "Mark what is wrong", "kind": "spans",
                                              "options": {"labels": LABELS}}])
    authoring.study_items_build(study=study, corpus=corpus, seed=1)
    authoring.study_publish(study=study)
    begin(phone, live_server, study, "w-span-turns")
    assert phone.evaluate(NO_SIDEWAYS)
    second = phone.get_by_test_id("span-doc").nth(1)  # the dialogue's second turn
    assert second.get_attribute("data-turn") == "1"
    second.locator(".span-token").nth(0).tap()
    second.locator(".span-token").nth(1).tap()
    assert phone.get_by_test_id("span-item").count() == 1
    phone.locator("form#item-form button[type=submit]").tap()
    phone.wait_for_url(re.compile(r".*/items/1/$"))
    rating = Rating.objects.get(assignment__study=study, spans__isnull=False)
    (span,) = rating.spans
    text = Conversation.objects.get(pk=rating.conversation_id).turns[1]["text"]
    assert span["turn"] == 1 and span["label"] == LABELS[0]
    first_two = tokens(text)[:2]
    assert (span["start"], span["end"]) == (first_two[0][0], first_two[1][1])  # the two tapped words' offsets
