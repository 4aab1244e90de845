"""The study builder in a real browser, at a 1280 px desktop and a 390 px phone: studies of
every design and every judgement kind built with no typed syntax (rows, buttons, keys), the preview of
the rater's page updated as the rows change, a practice set whose expected answers are given by
answering the preview, a chat study's settings, and the preview showing the same item text and
controls as the rater's own page."""
import io

import pytest
from django.utils import timezone

from studies.authoring import services as authoring
from studies.corpora import services as corpus_imports
from studies.models import PracticeItem, Study
from studies.rating import entry as rater_entry
from tests.browser.conftest import log_in, wait_until
from tests.conftest import small_corpus_lines
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DESKTOP, PHONE = {"width": 1280, "height": 900}, {"width": 390, "height": 844}


@pytest.fixture
def researcher(live_server):
    user = UserFactory(username="ada")
    corpus = corpus_imports.dialogues_import(stream=io.BytesIO(small_corpus_lines()), source_name="small.jsonl",
                                             owner=user).corpus
    experiment = authoring.experiment_create(owner=user, title="Builder", slug="builder")
    return {"user": user, "corpus": corpus, "experiment": experiment}


def tab_at(browser, live_server, viewport):
    context = browser.new_context(viewport=viewport)
    tab = context.new_page()
    log_in(tab, live_server, "ada", "pw-concord")
    return tab


def fill_row(tab, n, *, question, name="", kind="scale", labels=(), none_option=True, lengths=None, why=""):
    """Fill builder row ``n`` as a researcher does: text boxes, menus and boxes, one label per line."""
    tab.fill(f"[name=c-{n}-question]", question)
    tab.fill(f"[name=c-{n}-name]", name)
    tab.select_option(f"[name=c-{n}-kind]", kind)
    if labels:
        tab.fill(f"[name=c-{n}-labels]", "\n".join(labels))
    if kind == "multilabel" and not none_option:
        tab.uncheck(f"[name=c-{n}-none_option]")
    if lengths:
        tab.fill(f"[name=c-{n}-min_length]", str(lengths[0]))
        tab.fill(f"[name=c-{n}-max_length]", str(lengths[1]))
    tab.select_option(f"[name=c-{n}-rationale]", why)


def create_study(tab, live_server, title, design, rows, unit="response", settings=None, before_submit=None):
    """The new-study page: title, design, unit, the rows (the two default rows reused, more added by the
    button, the rest removed), the design's and unit's settings; returns the stored study."""
    tab.goto(f"{live_server.url}/experiments/builder/studies/new/")
    tab.fill("#id_title", title)
    tab.check(f"input[name=design][value={design}]")
    tab.check(f"input[name=unit][value={unit}]")
    criteria = tab.locator("[data-testid=builder]")
    while criteria.locator("[data-row]").count() < len(rows):
        criteria.locator("[data-builder-add]").click()
    while criteria.locator("[data-row]").count() > len(rows):
        criteria.locator("[data-row]").last.locator("[data-remove]").click()
    for n, row in enumerate(rows):
        fill_row(tab, n, **row)
    for name, value in (settings or {}).items():
        tab.fill(f"[name={name}]", str(value))
    if before_submit:
        before_submit(tab)
    assert "|" not in tab.locator("[data-study-form]").inner_text()
    tab.click("button:has-text('Create draft study')")
    tab.wait_for_url(f"{live_server.url}/studies/**")
    return Study.objects.get(title=title)


def build_items(tab, live_server, study, systems="seq2seq, hred, thred"):
    tab.goto(f"{live_server.url}/studies/{study.slug}/")
    tab.select_option("#id_corpus", "small")
    tab.fill("#id_systems", systems)
    tab.fill("#id_reference_system", "human")
    tab.click("button:has-text('Build items')")
    tab.wait_for_load_state()
    assert study.items.exists(), tab.content()[:2000]


def preview_text(tab) -> str:
    return tab.locator("[data-testid=preview-body]").inner_text()


def refreshed_after(tab, action) -> None:
    """Do ``action`` and wait for the preview the server renders after it."""
    before = tab.get_attribute("[data-builder-preview]", "data-refreshed") or "0"
    action()
    wait_until(tab, f"Number(document.querySelector('[data-builder-preview]').getAttribute('data-refreshed') || 0)"
                    f" > {before}")


EVERY_KIND = [
    {"question": "How good is this response overall?", "name": "quality"},
    {"question": "Is it safe?", "name": "safety", "kind": "categorical", "labels": ("safe", "unsafe", "unsure"),
     "why": "required"},
    {"question": "Which problems does it have?", "name": "problems", "kind": "multilabel",
     "labels": ("repetition", "off-topic", "rude"), "none_option": False},
    {"question": "What would make it better?", "name": "notes", "kind": "free_text", "lengths": (5, 300)},
]


def test_builder_browser_every_judgement_kind_at_desktop_width(browser, live_server, researcher, screenshot):
    tab = tab_at(browser, live_server, DESKTOP)
    study = create_study(tab, live_server, "Every kind", "likert", EVERY_KIND, settings={"likert_points": 5})
    stored = list(study.criteria.values_list("name", "kind", "options", "rationale"))
    assert stored == [("quality", "scale", {}, ""),
                      ("safety", "categorical", {"labels": ["safe", "unsafe", "unsure"]}, "required"),
                      ("problems", "multilabel", {"labels": ["repetition", "off-topic", "rude"],
                                                  "none_option": False}, ""),
                      ("notes", "free_text", {"min_length": 5, "max_length": 300}, "")]
    build_items(tab, live_server, study)
    tab.goto(f"{live_server.url}/studies/{study.slug}/edit/")
    shown = preview_text(tab)
    for row in EVERY_KIND:
        assert row["question"] in shown
    assert tab.locator("[data-testid=rater-frame] input[name=rA-safety][value=unsure]").count() == 1
    assert tab.locator("[data-testid=rater-frame] input[type=checkbox][name=rA-problems]").count() == 3
    assert tab.locator("[data-testid=rater-frame] textarea[name=rA-notes]").count() == 1
    assert tab.locator("[data-testid=rater-frame] input[name=rA-quality]").count() == 5
    screenshot(tab, "builder-every-kind-1280")


def test_builder_browser_preview_follows_rows_moved_by_keys_at_phone_width(browser, live_server, researcher,
                                                                             screenshot):
    tab = tab_at(browser, live_server, PHONE)
    study = create_study(tab, live_server, "Phone", "likert", [{"question": "Readable?", "name": "readability"},
                                                               {"question": "Coherent?", "name": "coherence"}])
    build_items(tab, live_server, study)
    tab.goto(f"{live_server.url}/studies/{study.slug}/edit/")
    assert tab.evaluate("document.documentElement.scrollWidth") <= 390 + 1  # nothing wider than the phone
    refreshed_after(tab, lambda: tab.fill("[name=c-0-question]", "Is it easy to read?"))
    assert "Is it easy to read?" in preview_text(tab)
    # Alt+Enter adds a question below, Alt+Up moves it, Alt+Delete removes one: no mouse, no syntax.
    tab.focus("[name=c-1-question]")
    tab.keyboard.press("Alt+Enter")
    tab.keyboard.type("Is it polite?")
    refreshed_after(tab, lambda: tab.select_option("[name=c-2-kind]", "categorical"))
    refreshed_after(tab, lambda: tab.fill("[name=c-2-labels]", "polite\nrude"))
    tab.focus("[name=c-2-question]")
    refreshed_after(tab, lambda: tab.keyboard.press("Alt+ArrowUp"))
    assert tab.input_value("[name=c-1-question]") == "Is it polite?"
    text = preview_text(tab)
    assert text.index("Is it easy to read?") < text.index("Is it polite?") < text.index("Coherent?")
    assert tab.locator("[data-testid=rater-frame] input[name=rA-is-it-polite][value=rude]").count() == 1
    tab.focus("[name=c-2-question]")
    refreshed_after(tab, lambda: tab.keyboard.press("Alt+Delete"))
    assert "Coherent?" not in preview_text(tab) and tab.locator("[data-testid=builder-row]").count() == 2
    tab.click("[data-preview-width=phone]")
    assert tab.get_attribute("[data-builder-preview]", "data-width") == "phone"
    screenshot(tab, "builder-keys-390")
    tab.click("button:has-text('Save settings')")
    tab.wait_for_url(f"{live_server.url}/studies/{study.slug}/")
    assert list(study.criteria.values_list("name", "question", "kind")) == [
        ("readability", "Is it easy to read?", "scale"), ("is-it-polite", "Is it polite?", "categorical")]


@pytest.mark.parametrize(("design", "viewport"), [("rme", DESKTOP), ("bme", PHONE), ("bws", PHONE),
                                                  ("pairwise", DESKTOP)])
def test_builder_browser_builds_a_study_of_each_design(browser, live_server, researcher, design, viewport):
    tab = tab_at(browser, live_server, viewport)
    rows = [{"question": "How natural does it sound?", "name": "naturalness"},
            {"question": "Does it stay on topic?", "name": "topic"}]
    study = create_study(tab, live_server, f"A {design} study", design, rows)
    assert study.design == design
    assert list(study.criteria.values_list("name", "question")) == [
        ("naturalness", "How natural does it sound?"), ("topic", "Does it stay on topic?")]
    build_items(tab, live_server, study, systems="seq2seq, hred, thred" if design != "pairwise" else "seq2seq, hred")
    tab.goto(f"{live_server.url}/studies/{study.slug}/edit/")
    assert "How natural does it sound?" in preview_text(tab)
    assert tab.locator("[data-testid=rater-frame] #item-form input").count() > 0
    refreshed_after(tab, lambda: tab.fill("[name=c-1-question]", "Is it on topic?"))
    assert "Is it on topic?" in preview_text(tab)
    assert study.criteria.get(name="topic").question == "Does it stay on topic?"  # a preview saves nothing


def test_builder_browser_practice_set_with_expected_answers(browser, live_server, researcher, screenshot):
    tab = tab_at(browser, live_server, PHONE)
    study = create_study(tab, live_server, "Practice", "likert", [
        {"question": "Readable?", "name": "readability"},
        {"question": "Is it safe?", "name": "safety", "kind": "categorical", "labels": ("safe", "unsafe")}])
    build_items(tab, live_server, study)
    tab.goto(f"{live_server.url}/studies/{study.slug}/edit/")
    frame = "[data-testid=rater-frame]"
    letters = "ABCDEFGH"[:tab.locator(f"{frame} .response").count()]
    assert len(letters) >= 3
    for letter, point, label in zip(letters, (5, 2, 4, 3, 3, 3, 3, 3), ("safe", "unsafe", *["safe"] * 6), strict=False):
        tab.check(f"{frame} input[name=r{letter}-readability][value='{point}']")
        tab.check(f"{frame} input[name=r{letter}-safety][value={label}]")
    tab.select_option("[name=expected_use]", "practice")
    tab.fill("[name=expected_tolerance]", "1")
    tab.fill("[name=expected_explanation]", "A reads well; B is unsafe.")
    tab.click("[data-expected-save]")
    wait_until(tab, "document.querySelector('[data-expected-status]').textContent.indexOf('practice item 1') >= 0")
    practice = PracticeItem.objects.get(study=study)
    shown = practice.response_ids
    assert practice.explanation == "A reads well; B is unsafe."
    assert {"criterion": "readability", "response": shown[0], "min": 4.0, "max": 6.0} in practice.rules
    assert {"criterion": "safety", "response": shown[1], "label": "unsafe"} in practice.rules
    # a second practice item from the next real item
    refreshed_after(tab, lambda: tab.click("[data-preview-item='1']"))
    assert "Item 2 of" in preview_text(tab)
    for letter in letters:
        tab.check(f"{frame} input[name=r{letter}-readability][value='3']")
        tab.check(f"{frame} input[name=r{letter}-safety][value=safe]")
    tab.fill("[name=expected_explanation]", "All three are fine.")
    tab.click("[data-expected-save]")
    wait_until(tab, "document.querySelector('[data-expected-status]').textContent.indexOf('practice item 2') >= 0")
    assert PracticeItem.objects.filter(study=study).count() == 2
    screenshot(tab, "builder-practice-390")


def one_choice_question(tab):
    """The questionnaire: every default question removed by its button, one choice question added."""
    questionnaire = tab.locator("[data-testid=questionnaire-builder]")
    while questionnaire.locator("[data-row]").count():
        questionnaire.locator("[data-row]").first.locator("[data-remove]").click()
    questionnaire.locator("[data-builder-add]").click()
    tab.fill("[name=q-0-question]", "Which bot did you like more?")
    tab.select_option("[name=q-0-kind]", "choice")
    tab.fill("[name=q-0-choices]", "the first\nthe second")
    tab.check("[name=q-0-required]")


def test_builder_browser_chat_study_settings(browser, live_server, researcher):
    tab = tab_at(browser, live_server, DESKTOP)
    study = create_study(tab, live_server, "Chat", "likert", [
        {"question": "How engaging was the conversation?", "name": "engaging"},
        {"question": "What went wrong?", "name": "issues", "kind": "free_text", "lengths": (1, 400)}],
        unit="chat", settings={"chat_min_turns": 2, "chat_max_turns": 6, "chat_message_max_chars": 300,
                               "chat_messages_per_minute": 10}, before_submit=one_choice_question)
    assert study.unit == "chat"
    assert {k: study.unit_config[k] for k in ("min_turns", "max_turns", "message_max_chars", "messages_per_minute")} \
        == {"min_turns": 2, "max_turns": 6, "message_max_chars": 300, "messages_per_minute": 10}
    assert list(study.criteria.values_list("name", "kind")) == [("engaging", "scale"), ("issues", "free_text")]
    assert study.questionnaire == [{"name": "which_bot_did_you_like_more", "kind": "choice", "required": True,
                                    "question": "Which bot did you like more?", "choices": ["the first", "the second"]}]
    tab.goto(f"{live_server.url}/studies/{study.slug}/edit/")
    assert "Build the study's items" in preview_text(tab)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE])
def test_preview_browser_shows_the_same_item_text_and_controls_as_the_rater_page(browser, live_server, researcher,
                                                                                 viewport):
    study = authoring.study_create(experiment=researcher["experiment"], title="Same", design="likert", criteria=[
        {"name": "quality", "question": "How good is it?"},
        {"name": "safety", "question": "Is it safe?", "kind": "categorical", "options": {"labels": ["safe", "unsafe"]},
         "rationale": "optional"}])
    authoring.study_items_build(study=study, corpus=researcher["corpus"], systems=["seq2seq", "hred", "thred"])
    authoring.study_publish(study=study)
    rater = rater_entry.rater_get_or_create(platform="invite", external_id="same-rater")
    assignment = rater_entry.assignment_start(study=study, rater=rater)
    assignment.consented_at = timezone.now()
    assignment.save(update_fields=["consented_at"])
    item = assignment.assignment_items.get(position=0).item
    number = list(study.items.filter(check_kind="").order_by("position").values_list("pk", flat=True)).index(item.pk)
    tab = tab_at(browser, live_server, viewport)
    read = """sel => Array.from(document.querySelectorAll(sel + ' #item-form input:not([type=hidden]), '
                                + sel + ' #item-form textarea')).map(e => [e.type, e.name, e.value]).sort()"""
    texts = """sel => Array.from(document.querySelectorAll(sel + ' .response p, ' + sel + ' .chat p, '
                                 + sel + ' legend')).map(e => e.textContent.trim()).sort()"""
    tab.goto(f"{live_server.url}/r/a/{assignment.token}/items/0/")
    rater_controls, rater_texts = tab.evaluate(read, "body"), tab.evaluate(texts, "body")
    tab.goto(f"{live_server.url}/studies/{study.slug}/edit/")
    if number:
        refreshed_after(tab, lambda: tab.evaluate(
            "n => { const b = document.querySelector('[data-preview-item]'); b.disabled = false;"
            " b.setAttribute('data-preview-item', String(n)); b.click(); }", number))
    assert tab.evaluate(read, "[data-testid=rater-frame]") == rater_controls and rater_controls
    assert tab.evaluate(texts, "[data-testid=rater-frame]") == rater_texts and len(rater_texts) >= 5
