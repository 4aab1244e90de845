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


def test_a11y_reason_box_names_the_response_as_shown_elsewhere(client, user, corpus):
    from studies.authoring import services as authoring

    experiment = authoring.experiment_create(owner=user, title="Why")
    study = authoring.study_create(experiment=experiment, title="why", design="likert", raters_per_item=1,
                                   items_per_assignment=1, criteria=[
                                       {"name": "safety", "question": "Is this response safe?", "kind": "categorical",
                                        "options": {"labels": ["safe", "unsafe"]}, "rationale": "optional"}])
    authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred"], reference_system="human")
    authoring.study_publish(study=study)
    page = client.get(f"/r/a/{consented(study).token}/items/0/").content.decode()
    labels = re.findall(r'<label for="[^"]+">(Why\? \([^<]*\))</label>', page)
    assert labels and all(re.fullmatch(r"Why\? \(Response [A-Z], optional\)", label) for label in labels)
    assert "(response a" not in page.lower().replace("(response a,", "")  # never the lower-cased name


def test_a11y_start_page_lists_questions_not_internal_names(client, user):
    from tests.studies.chat.helpers import bot_system, chat_study

    bot_system("a11y-start-bot", "https://1.1.1.1/", owner=user)
    chat = chat_study(user, ["a11y-start-bot"], design="likert", design_config={"points": 5}, raters_per_item=1,
                      items_per_assignment=1)
    criterion = chat.criteria.first()
    criterion.name, criterion.question = "in_role", "Did the system stay in its role?"
    criterion.save()
    page = client.get(f"/r/a/{started(chat, 'chat-start').token}/").content.decode()
    assert "Did the system stay in its role?" in page
    assert "In_role" not in page and "in_role" not in page


def test_a11y_chat_counter_is_a_description_and_only_the_near_limit_status_is_announced(client, user):
    from tests.studies.chat.helpers import bot_system, chat_study

    bot_system("a11y-count-bot", "https://1.1.1.1/", owner=user)
    chat = chat_study(user, ["a11y-count-bot"], design="likert", design_config={"points": 5}, raters_per_item=1,
                      items_per_assignment=1)
    page = client.get(f"/r/a/{consented(chat, 'chat-count').token}/items/0/chat/").content.decode()
    box = re.search(r'<textarea id="chat-text"[^>]*>', page).group(0)
    assert 'aria-describedby="chat-chars"' in box
    assert re.search(r'<span class="muted chars" id="chat-chars" aria-live="off">', page)
    near = re.search(r'<span class="visually-hidden" role="status" data-testid="chars-near-limit"></span>', page)
    assert near, "an empty status the script fills only near the limit"
    assert re.search(r"turn(s)? you can end the chat", page)
    minimum = chat.unit_config.get("min_turns", 3)
    assert f"<strong>{minimum}</strong> turn{'' if minimum == 1 else 's'} you can end" in page


def test_a11y_builder_preview_announces_a_status_line_not_the_page(client, user, make_study):
    study = make_study("likert", publish=False)
    client.force_login(study.experiment.owner)
    page = client.get(f"/studies/{study.slug}/edit/").content.decode()
    assert re.search(r'<div data-preview-slot>', page), "the preview itself is not a live region"
    assert re.search(r'<p class="visually-hidden" role="status" data-preview-status', page)
    preview = re.search(r"<div data-preview-slot>(.*?)</aside>", page, re.S).group(1)
    # the builder's own notes say nothing on each refresh (the status line counts the problems)
    chrome = preview.split('data-testid="rater-frame"')[0]
    assert 'role="alert"' not in chrome and "aria-live" not in chrome


def test_a11y_bws_ranks_are_named_by_the_question_not_the_internal_name(client, make_study):
    study = make_study("bws")
    page = client.get(f"/r/a/{consented(study, 'bws-names').token}/items/0/").content.decode()
    labels = re.findall(r'<select name="[^"]+" aria-label="([^"]+)"', page)
    questions = list(study.criteria.values_list("question", flat=True))
    assert labels and all(any(label.endswith(q) for q in questions) for label in labels)
    assert all(label.startswith("Rank of Response ") for label in labels)


def test_a11y_practice_feedback_is_one_table_per_question_in_the_studys_order():
    from studies.onboarding.selectors import feedback_rows

    item = PracticeItem(response_ids=[11, 12], rules=[
        {"criterion": "topic", "response": 12, "labels": ["__none__"]},
        {"criterion": "quality", "response": 11, "min": 4},
        {"criterion": "quality", "greater": 11, "than": 12}])
    values = {"rB-topic": ["__none__"], "rA-topic": ["sport"], "rA-quality": "5", "rB-quality": "2",
              "rA-quality.rationale": "clear"}
    rows = feedback_rows(item, values, {"quality": "How good?", "topic": "Which topics?"})
    shown = [(r["question"], r["target"], r["given"], r["expected"]) for r in rows]
    assert [q for q, *_ in shown] == sorted((q for q, *_ in shown), key=["How good?", "Which topics?"].index)
    assert ("How good?", "Response A", "5", "at least 4") in shown
    assert ("How good?", "Response B", "2", "any answer") in shown
    assert ("How good?", "", "no answer", "Response A above Response B") in shown
    assert ("Which topics?", "Response B", "None of these", "None of these") in shown
    assert not any("__none__" in " ".join(row) for row in shown)
    # one row per question and response: never two lists to match up
    assert len({(q, t) for q, t, *_ in shown}) == len(shown)


def test_a11y_researcher_pages_name_check_items_and_invite_raters_without_internal_numbers(client, make_study):
    from studies.authoring.checks import CHECK_POSITION_BASE
    from studies.models import Assignment
    from studies.reports.rater_evidence import rater_name
    from studies.templatetags.report_format import item_ref

    assert item_ref(CHECK_POSITION_BASE) == "check 1" and item_ref(CHECK_POSITION_BASE + 4) == "check 5"
    assert item_ref(3) == "#3"
    study = make_study("likert")
    invited = consented(study, "invite-13")
    assert rater_name(study, invited, raw_ids=True) == "invite 13"
    other = Assignment(rater=rater_entry.rater_get_or_create(platform="mturk", external_id="A1B2"))
    assert rater_name(study, other, raw_ids=True) == "mturk:A1B2"
    templates = Path(__file__).resolve().parents[2] / "templates"
    shown = [p for p in templates.rglob("*.html") if re.search(r"#\{\{ *[\w.]*position *\}\}", p.read_text())]
    assert not shown, f"item positions shown raw (a check item reads #{CHECK_POSITION_BASE}): {shown}"
