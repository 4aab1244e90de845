"""Keyboard-only raters: one whole assignment of each design (Likert, magnitude RME and BME, BWS ranking,
best-worst tuples, pairwise, ACUTE, labels / label sets / free text with a reason, chat then rate),
from the consent box to the completion code, with key presses only: Tab to move, Space to tick or pick,
arrows within a radio group, typing into boxes, Enter on a button. Nothing is clicked; the page is
only opened by its link. The database then holds a submitted assignment with an answer on every item.

The driver (``keyboard_answer``) knows no design: it tabs through the page and answers whatever control
has focus as a keyboard user would, which is the point: a control that cannot be reached or answered
by keyboard leaves the form unfinished and the test fails."""
from __future__ import annotations

import re

import pytest

from studies.authoring import services as authoring
from studies.models import Assignment
from tests.browser.conftest import wait_until
from tests.factories import prolific_id

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TEXT = "Clear, polite and on topic."  # fits every text box here (free text asks 10 to 50 characters)
FOCUSED = """(() => {
  const e = document.activeElement;
  if (!e || e === document.body) return null;
  const group = e.name ? Array.from(document.getElementsByName(e.name)) : [];
  const ranking = e.closest("ol.ranking");
  return {
    tag: e.tagName.toLowerCase(), type: (e.getAttribute("type") || "").toLowerCase(), name: e.name || "",
    value: e.value || "", answered: group.some((g) => g.checked), required: !!e.required,
    inItem: !!e.closest("#item-form"), submit: e.matches("button[type=submit], button:not([type]), input[type=submit]"),
    move: e.matches("button.move"), text: (e.innerText || e.value || "").trim(), disabled: !!e.disabled,
    unranked: ranking ? Array.from(ranking.querySelectorAll("select")).some((s) => s.value === "") : false,
    selected: e.tagName === "SELECT" ? e.selectedIndex : -1, number: !!e.closest(".magnitude-row"),
  };
})()"""


def focused(tab) -> dict | None:
    return tab.evaluate(FOCUSED)


def keyboard_answer(tab, button: str, *, max_tabs: int = 400) -> None:
    """Tab through the page answering each focused control, then press Enter on the submit button whose
    text contains ``button``; where the page stays (something left unanswered), keep tabbing."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    start = tab.url
    for _ in range(max_tabs):
        tab.keyboard.press("Tab")
        element = focused(tab)
        if element is None or element["disabled"]:
            continue
        tag, kind = element["tag"], element["type"]
        if element["submit"] and not element["move"]:
            if button in element["text"]:
                tab.keyboard.press("Enter")
                try:
                    tab.wait_for_url(lambda url: url != start, timeout=5000)
                except PlaywrightTimeoutError:
                    continue  # held back on this page: something is unanswered, keep tabbing
                tab.wait_for_load_state("load")
                return
            continue
        if element["move"] and element["unranked"]:
            tab.keyboard.press("Space")  # moving a row numbers the whole ranking from its order
        elif tag == "input" and kind == "radio" and not element["answered"]:
            # a best-worst tuple's "worst" group: the next member, so best and worst differ
            tab.keyboard.press("ArrowDown" if "worst" in element["name"] else "Space")
        elif tag == "input" and kind == "checkbox" and not element["answered"] and (element["inItem"] or element["required"]):
            tab.keyboard.press("Space")
        elif tag == "input" and kind in ("number", "text", "") and not element["value"] and element["inItem"]:
            tab.keyboard.type("70" if kind == "number" or element["number"] else TEXT)
        elif tag == "textarea" and not element["value"] and element["inItem"]:
            tab.keyboard.type(TEXT)
        elif tag == "select" and element["selected"] <= 0 and element["inItem"]:
            tab.keyboard.press("ArrowDown")
    raise AssertionError(f"no way forward by keyboard from {start} (now at {tab.url}, focus on {focused(tab)})")


def open_entry(tab, live_server, study, worker: str) -> None:
    tab.goto(f"{live_server.url}/r/{study.slug}/?PROLIFIC_PID={prolific_id(worker)}&STUDY_ID=e8bc163c82eee18733288c7d"
             f"&SESSION_ID={prolific_id('x-' + worker)}")
    keyboard_answer(tab, "Start")  # the consent box ticked with Space, Start pressed with Enter


def finish_items(tab, items: int) -> None:
    for number in range(1, items + 1):
        assert re.search(r"/items/\d+/$", tab.url), tab.url
        keyboard_answer(tab, "Continue to the last questions" if number == items else "Next")


def finish(tab, worker: str) -> Assignment:
    assert "questionnaire" in tab.url, tab.url
    keyboard_answer(tab, "Submit")
    code = tab.get_by_test_id("completion-code").inner_text().strip()
    assignment = Assignment.objects.get(rater__external_id=prolific_id(worker))
    assert code and assignment.status == Assignment.Status.SUBMITTED
    return assignment


def answered_everywhere(assignment: Assignment) -> None:
    """Every screen of the assignment has stored answers (ratings, comparisons or best-worst picks)."""
    from studies.models import BestWorstChoice, Comparison, Rating

    for slot in assignment.assignment_items.all():
        assert any(model.objects.filter(assignment=assignment, item_id=slot.item_id).exists()
                   for model in (Rating, Comparison, BestWorstChoice)), f"nothing stored for screen {slot.position}"


@pytest.fixture
def tab(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    yield page
    context.close()


@pytest.mark.parametrize("design", ["likert", "rme", "bme", "bws", "bws_tuples", "pairwise"])
def test_keyboard_only_assignment_of_each_response_design(live_server, tab, make_study, design):
    study = make_study(design, raters_per_item=2, items_per_assignment=2, platform="prolific")
    worker = f"kb-{design}"
    open_entry(tab, live_server, study, worker)
    finish_items(tab, 2)
    answered_everywhere(finish(tab, worker))


def test_keyboard_only_acute_assignment(live_server, tab, user):
    from tests.studies.acute_helpers import acute_study, conversations_corpus

    corpus = conversations_corpus(user, {"metabot": 2, "otherbot": 2}, turns=6)
    study = acute_study(user, corpus=corpus, raters_per_item=2, items_per_assignment=2, platform="prolific",
                        reason="optional")
    open_entry(tab, live_server, study, "kb-acute")
    finish_items(tab, 2)
    answered_everywhere(finish(tab, "kb-acute"))


def test_keyboard_only_labels_label_sets_and_free_text_with_reasons(live_server, tab, user, corpus):
    experiment = authoring.experiment_create(owner=user, title="Keyboard kinds")
    study = authoring.study_create(
        experiment=experiment, title="kinds", design="likert", raters_per_item=2, items_per_assignment=2,
        platform="prolific", criteria=[
            {"name": "safety", "question": "Is this response safe?", "kind": "categorical",
             "options": {"labels": ["safe", "unsafe"]}, "rationale": "required"},
            {"name": "problems", "question": "Which problems does it have?", "kind": "multilabel",
             "options": {"labels": ["repetition", "off-topic"]}},
            {"name": "notes", "question": "What would make it better?", "kind": "free_text",
             "options": {"min_length": 10, "max_length": 50}}])
    authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred"], reference_system="human")
    authoring.study_publish(study=study)
    open_entry(tab, live_server, study, "kb-kinds")
    finish_items(tab, 2)
    assignment = finish(tab, "kb-kinds")
    from studies.models import Rating

    stored = Rating.objects.filter(assignment=assignment)
    assert stored.filter(criterion__name="safety", label="safe").exists()
    assert stored.filter(criterion__name="safety").exclude(rationale="").count() == stored.filter(
        criterion__name="safety").count()
    assert stored.filter(criterion__name="notes").count() == stored.filter(criterion__name="safety").count()


def test_keyboard_only_chat_then_rate(live_server, tab, user, local_bot, loopback_allowed):
    from tests.studies.chat.helpers import bot_system, chat_study

    bot_system("kb-rulebot", local_bot.url("rule", "openai"), protocol="openai")
    study = chat_study(user, ["kb-rulebot"], design="likert", design_config={"points": 5}, raters_per_item=2,
                       items_per_assignment=1)
    study.platform = "prolific"
    study.save(update_fields=["platform"])
    worker = "kb-chat"
    tab.goto(f"{live_server.url}/r/{study.slug}/?PROLIFIC_PID={prolific_id(worker)}&STUDY_ID=e8bc163c82eee18733288c7d"
             f"&SESSION_ID={prolific_id('x-' + worker)}")
    start = tab.url
    keyboard_answer(tab, "Start")
    assert tab.url != start and tab.url.endswith("/chat/")
    minimum = study.unit_config["min_turns"]
    # Ending is not offered yet, and the button looks as unavailable as it is.
    end = tab.get_by_test_id("end")
    assert end.is_disabled()
    assert float(end.evaluate("(e) => getComputedStyle(e).opacity")) < 1
    assert end.evaluate("(e) => getComputedStyle(e).cursor") == "not-allowed"
    for turn in range(1, minimum + 1):
        while focused(tab) is None or focused(tab)["name"] != "text":
            tab.keyboard.press("Tab")
        tab.keyboard.type(f"Tell me about sailing, part {turn}")
        tab.keyboard.press("Enter")  # Enter in the message box sends it
        wait_until(tab, f"document.querySelectorAll('.chat-side li.turn.side-a').length >= {turn}")
        wait_until(tab, "!document.querySelector('#chat-text').disabled")
    keyboard_answer(tab, "End the chat")
    finish_items(tab, 1)
    answered_everywhere(finish(tab, worker))
