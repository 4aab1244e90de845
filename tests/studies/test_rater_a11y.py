"""Rater pages as assistive technology reads them (WCAG 2.1 AA): one h1 on every item page, every form
control named (the questionnaire's select by its question, the ACUTE "Why?" box by its visible label),
scrolling conversation columns reachable by keyboard, the chat announcing the system's writing but not
every keystroke's count, counts in the singular where there is one, internal values shown as words.
The browser scan of the same pages is tests/browser/test_a11y_axe.py."""
import re
from pathlib import Path

import pytest

from studies.models import PracticeItem
from studies.onboarding import selectors as onboarding_selectors
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from tests.studies.acute_helpers import acute_study, conversations_corpus, rate_all

pytestmark = pytest.mark.django_db
STATIC = Path(__file__).resolve().parents[2] / "static" / "concord"


def consented(study, worker="a11y"):
    assignment = rater_entry.assignment_start(
        study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id=worker), seed=1)
    return answering.assignment_consent(assignment=assignment)


def h1s(page: str) -> int:
    return len(re.findall(r"<h1[\s>]", page))


@pytest.mark.parametrize("design", ["likert", "rme", "bws"])
def test_a11y_item_page_of_each_design_has_exactly_one_h1(client, make_study, design):
    assignment = consented(make_study(design))
    page = client.get(f"/r/a/{assignment.token}/items/0/").content.decode()
    assert h1s(page) == 1
    assert re.search(r'<h1 class="task-heading">\w+[\w ]* 1 of \d+</h1>', page)


def test_a11y_acute_pair_page_has_one_h1_keyboard_scrollable_columns_and_reasons_named_by_their_label(client, user):
    study = acute_study(user, corpus=conversations_corpus(user, {"alpha": 2, "beta": 2}), raters_per_item=2,
                        items_per_assignment=2, reason="optional")
    page = client.get(f"/r/a/{consented(study).token}/items/0/").content.decode()
    assert h1s(page) == 1
    columns = re.findall(r'<ol class="acute-turns"[^>]*>', page)
    # Focusable and named, still lists (a region role would hide the turns as list items).
    assert columns == [f'<ol class="acute-turns" tabindex="0" aria-label="Conversation {n}">' for n in (1, 2)]
    # The reason box is inside its visible label ("Why? (optional)") and carries no other name.
    assert "Reason for" not in page and "Why? (optional)" in page
    assert re.search(r'<label class="pair-reason">Why\? \(optional\)\s*<textarea name="reason-[^"]+" rows', page)


def test_a11y_questionnaire_age_band_select_is_named_by_its_question(client, user):
    study = acute_study(user, corpus=conversations_corpus(user, {"alpha": 2, "beta": 2}), raters_per_item=2,
                        items_per_assignment=1)
    assignment = rate_all(study, "a11y", lambda slot, criterion: "left", submit=False)
    answering.assignment_consent(assignment=assignment)
    page = client.get(f"/r/a/{assignment.token}/questionnaire/").content.decode()
    assert h1s(page) == 1
    select = re.search(r'<select name="age_band"[^>]*>', page)
    assert select and 'aria-label="Your age (optional)"' in select.group(0)
    assert all("aria-label=" in tag for tag in re.findall(r'<input type="text"[^>]*>', page))


def started(study, worker):
    return rater_entry.assignment_start(
        study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id=worker), seed=1)


def test_a11y_start_page_counts_one_item_in_the_singular(client, make_study):
    one = started(make_study("likert", items_per_assignment=1, raters_per_item=1), "one")
    page = client.get(f"/r/a/{one.token}/").content.decode()
    assert re.search(r"There is <strong>1</strong> conversation\.", page) and "There are" not in page
    many = started(make_study("likert", items_per_assignment=3), "many")
    assert re.search(r"There are <strong>3</strong> conversations\.",
                     client.get(f"/r/a/{many.token}/").content.decode())


def test_a11y_chat_announces_the_system_writing_and_not_each_keystrokes_count():
    chat = (Path(__file__).resolve().parents[2] / "templates" / "raters" / "chat.html").read_text()
    typing = re.search(r'<p class="typing[^>]*>', chat).group(0)
    assert 'role="status"' in typing and 'aria-live="polite"' in typing
    counter = re.search(r'<span class="muted chars"[^>]*>', chat).group(0)
    assert 'aria-live="off"' in counter


def test_a11y_practice_feedback_shows_none_of_these_not_the_internal_value():
    assert onboarding_selectors.given_answer_text({"labels-topic": ["__none__"]}) == ["topic: labels None of these"]
    item = PracticeItem(response_ids=[], rules=[{"criterion": "topic", "labels": ["__none__"]}])
    assert all("__none__" not in line for line in onboarding_selectors.expected_answer_text(item))


def test_a11y_styles_break_words_with_hyphens_and_show_a_disabled_button_as_disabled():
    css = {path.name: path.read_text() for path in STATIC.glob("*.css")}
    assert not [name for name, text in css.items() if "overflow-wrap: anywhere" in text]
    assert "button:disabled" in css["concord.css"] and "not-allowed" in css["concord.css"]
    # A focused question is marked beside its legend, not by an outline through it.
    assert re.search(r"fieldset\[tabindex\]:focus[^{]*\{[^}]*outline: none", css["rater.css"])
