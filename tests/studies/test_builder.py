"""The study builder: criteria rows posted as structured fields (no syntax), the live preview
of the rater's page for a real item (the same templates and form context raters get, never saved),
and expected answers authored in that preview, each researcher-scoped."""
import re

import pytest
from django.utils.html import escape

from studies.authoring import services as authoring
from studies.authoring.criteria_rows import rows_parse, rows_read
from studies.designs import DESIGNS, design_for, unit_for
from studies.models import Criterion, PracticeItem, Study
from studies.rating import checks
from studies.rating import entry as rater_entry
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def row(n, **fields):
    """One builder row as the page posts it."""
    return {f"c-{n}-{key}": value for key, value in fields.items()}


def rows(*specs):
    data = {}
    for n, fields in enumerate(specs):
        data.update(row(n, **fields))
    return data


EVERY_KIND = rows(
    {"name": "quality", "kind": "scale", "question": "How good is it?", "help": "Overall."},
    {"name": "safety", "kind": "categorical", "question": "Is it safe?", "labels": "safe\nunsafe\nunsure",
     "rationale": "required"},
    {"name": "problems", "kind": "multilabel", "question": "Which problems?", "labels": "repetition\noff-topic"},
    {"name": "notes", "kind": "free_text", "question": "What would help?", "min_length": "10", "max_length": "500",
     "rationale": ""},
)


@pytest.fixture
def researcher(client, user):
    client.force_login(user)
    return client


@pytest.fixture
def intruder(client):
    client.force_login(UserFactory(username="mallory"))
    return client


def study_post(study_or_title, design="likert", **changes):
    title = getattr(study_or_title, "title", study_or_title)
    data = {"title": title, "design": design, "raters_per_item": 3, "items_per_assignment": 6,
            "platform": "invite", "instructions": "", "consent_text": "", "questionnaire": "", "likert_points": 6}
    data.update(changes)
    return data


def controls(html: str) -> list[tuple[str, str, str]]:
    """The rater form's controls in a page: (tag, type, name, value) of every input, textarea and select."""
    form = html[html.index('id="item-form"'):html.index("</form>", html.index('id="item-form"'))]
    found = []
    for tag, attrs in re.findall(r"<(input|textarea|select)\b([^>]*)>", form):
        get = dict(re.findall(r'(\w[\w-]*)="([^"]*)"', attrs))
        if get.get("type") == "hidden":
            continue
        found.append((tag, get.get("type", ""), get.get("name", ""), get.get("value", "")))
    return sorted(found)


# --- the rows ----------------------------------------------------------------------------------------


def test_builder_rows_parse_every_kind_into_specs():
    specs, problems = rows_parse(rows_read(EVERY_KIND))
    assert problems == []
    assert specs == [
        {"name": "quality", "question": "How good is it?", "help_text": "Overall.", "kind": "scale", "rationale": ""},
        {"name": "safety", "question": "Is it safe?", "help_text": "", "kind": "categorical", "rationale": "required",
         "options": {"labels": ["safe", "unsafe", "unsure"]}},
        {"name": "problems", "question": "Which problems?", "help_text": "", "kind": "multilabel", "rationale": "",
         "options": {"labels": ["repetition", "off-topic"], "none_option": False}},
        {"name": "notes", "question": "What would help?", "help_text": "", "kind": "free_text", "rationale": "",
         "options": {"min_length": 10, "max_length": 500}},
    ]


def test_builder_rows_bad_row_names_its_row_and_field_and_gives_no_specs():
    data = rows({"name": "quality", "question": "Good?"},
                {"name": "safety", "kind": "categorical", "question": "Safe?", "labels": "safe"},
                {"name": "notes", "kind": "free_text", "question": "Why?", "min_length": "ten"},
                {"name": "why", "question": "Q", "rationale": "sometimes"})
    specs, problems = rows_parse(rows_read(data))
    assert specs == []
    assert "row 2 (safety), options: give 2 to 12 labels, got 1" in problems
    assert "row 3 (notes), shortest answer: a whole number of characters, not “ten”" in problems
    assert any(p.startswith("row 4 (why), ask why: must be one of") for p in problems)
    assert not any(p.startswith("row 1") for p in problems)


def test_builder_rows_duplicate_names_name_both_rows():
    _, problems = rows_parse(rows_read(rows({"name": "a", "question": "x"}, {"name": "b", "question": "y"},
                                            {"name": "a", "question": "z"})))
    assert problems == ["rows 1, 3, short name: each criterion once (a is given 2 times)"]


def test_builder_rows_follow_their_numbers_skip_blank_rows_and_need_one():
    data = {**row(10, name="last", question="L"), **row(2, name="first", question="F"), **row(5, name="", kind="scale")}
    specs, problems = rows_parse(rows_read(data))
    assert problems == [] and [s["name"] for s in specs] == ["first", "last"]
    assert rows_parse(rows_read(row(0, name="", question="")))[1] == [
        "add at least one criterion (a question raters answer)"]


def test_builder_row_without_a_name_takes_it_from_the_question_or_says_which_row():
    specs, _ = rows_parse(rows_read(rows({"question": "Is it polite?"})))
    assert specs[0]["name"] == "is-it-polite"
    _, problems = rows_parse(rows_read(rows({"name": "a", "question": "x"}, {"name": "!!", "help": "only help"})))
    assert problems == ["row 2 (!!), short name: give a short name (letters, digits, hyphens)"]


def test_builder_create_page_posts_rows_and_stores_every_kind(researcher, user):
    experiment = authoring.experiment_create(owner=user, title="E", slug="e")
    response = researcher.post("/experiments/e/studies/new/", study_post("Kinds", **EVERY_KIND))
    assert response.status_code == 302
    study = experiment.studies.get()
    stored = list(study.criteria.values_list("name", "kind", "options", "rationale", "help_text"))
    assert stored == [("quality", "scale", {}, "", "Overall."),
                      ("safety", "categorical", {"labels": ["safe", "unsafe", "unsure"]}, "required", ""),
                      ("problems", "multilabel", {"labels": ["repetition", "off-topic"], "none_option": False}, "", ""),
                      ("notes", "free_text", {"min_length": 10, "max_length": 500}, "", "")]


def test_builder_create_page_refuses_a_bad_row_creates_nothing_and_keeps_what_was_typed(researcher, user):
    experiment = authoring.experiment_create(owner=user, title="E", slug="e")
    bad = rows({"name": "quality", "question": "Keep this question?"},
               {"name": "safety", "kind": "categorical", "question": "Safe?", "labels": "safe"})
    response = researcher.post("/experiments/e/studies/new/", study_post("Kinds", **bad))
    page = response.content.decode()
    assert response.status_code == 200 and not experiment.studies.exists()
    assert "row 2 (safety), options: give 2 to 12 labels, got 1" in page
    assert 'value="Keep this question?"' in page and 'name="c-1-labels"' in page


def test_builder_create_page_still_takes_the_old_text_when_no_rows_are_posted(researcher, user):
    experiment = authoring.experiment_create(owner=user, title="E", slug="e")
    response = researcher.post("/experiments/e/studies/new/", study_post(
        "Text", criteria="safety | Is it safe? | | categorical: safe, unsafe"))
    assert response.status_code == 302
    assert experiment.studies.get().criteria.get().options == {"labels": ["safe", "unsafe"]}


def test_builder_pages_show_rows_and_no_typed_syntax(researcher, user, make_study):
    experiment = authoring.experiment_create(owner=user, title="E", slug="e")
    study = make_study("likert", publish=False, labels=["bad", "poor", "fair", "good", "great", "superb"])
    for url in ("/experiments/e/studies/new/", f"/studies/{study.slug}/edit/"):
        page = researcher.get(url).content.decode()
        page = re.sub(r'<script id="builder-defaults" type="application/json">.*?</script>', "", page, flags=re.S)
        assert 'data-testid="builder-row"' in page and 'name="c-0-question"' in page
        assert 'name="criteria"' not in page  # the old text box, and its pipes, are gone
        assert "name | question" not in page and "separated by |" not in page and "[{" not in page
    assert experiment is not None
    page = researcher.get(f"/studies/{study.slug}/edit/").content.decode()
    assert "bad\npoor\nfair\ngood\ngreat\nsuperb</textarea>" in page  # point labels one per line


def test_builder_edit_saves_rows_in_their_new_order_and_likert_labels_by_line(researcher, make_study):
    study = make_study("likert", publish=False)
    response = researcher.post(f"/studies/{study.slug}/edit/", study_post(
        study, likert_points=3, likert_labels="low\nmiddle\nhigh",
        **rows({"name": "coherence", "question": "Coherent?"}, {"name": "readability", "question": "Readable?"})))
    assert response.status_code == 302
    study.refresh_from_db()
    assert list(study.criteria.values_list("name", "question")) == [("coherence", "Coherent?"),
                                                                     ("readability", "Readable?")]
    assert study.design_config["labels"] == ["low", "middle", "high"]


def test_builder_edit_refuses_a_bad_row_and_changes_nothing(researcher, make_study):
    study = make_study("likert", publish=False)
    before = list(study.criteria.values_list("name", "question", "kind"))
    response = researcher.post(f"/studies/{study.slug}/edit/", study_post(
        study, title="Renamed", **rows({"name": "x", "question": "X?", "kind": "multilabel", "labels": ""})))
    assert response.status_code == 200
    assert "row 1 (x), options: give 2 to 12 labels, got 0" in response.content.decode()
    study.refresh_from_db()
    assert study.title == "likert study" and list(study.criteria.values_list("name", "question", "kind")) == before


def test_builder_published_study_rows_are_read_only(researcher, make_study):
    study = make_study("likert", publish=True)
    before = list(study.criteria.values_list("name", "question"))
    page = researcher.get(f"/studies/{study.slug}/edit/").content.decode()
    assert re.search(r'name="c-0-question" value="[^"]*" maxlength="300" data-row-field="question" disabled', page)
    criteria = page[page.index('data-testid="builder"'):page.index("</fieldset>", page.index('data-testid="builder"'))]
    assert "data-builder-add" not in criteria and "data-remove" not in criteria  # the questionnaire stays editable
    researcher.post(f"/studies/{study.slug}/edit/", study_post(
        study, **rows({"name": "other", "question": "Changed?"})))
    assert list(study.criteria.values_list("name", "question")) == before


def test_builder_edit_page_of_another_researcher_is_not_found(intruder, make_study):
    study = make_study("likert", publish=False)
    assert intruder.get(f"/studies/{study.slug}/edit/").status_code == 404
    intruder.post(f"/studies/{study.slug}/edit/", study_post(study, **rows({"name": "mine", "question": "?"})))
    assert list(study.criteria.values_list("name", flat=True)) == ["readability", "coherence"]


# --- the preview -------------------------------------------------------------------------------------


def rater_page(client, study):
    """The first item page of a real rater of ``study`` and the item it shows."""
    from django.utils import timezone

    rater = rater_entry.rater_get_or_create(platform="invite", external_id="preview-rater")
    assignment = rater_entry.assignment_start(study=study, rater=rater)
    assignment.consented_at = timezone.now()
    assignment.save(update_fields=["consented_at"])
    slot = assignment.assignment_items.order_by("position").first()
    return client.get(f"/r/a/{assignment.token}/items/0/").content.decode(), slot.item


@pytest.mark.parametrize("design", ["likert", "rme", "bme", "bws", "pairwise"])
def test_preview_renders_the_same_item_text_and_controls_as_the_rater_page(researcher, make_study, design):
    study = make_study(design, publish=True)
    page, item = rater_page(researcher, study)
    position = list(study.items.filter(check_kind="").order_by("position").values_list("pk", flat=True)).index(item.pk)
    preview = researcher.get(f"/studies/{study.slug}/builder/preview/", {"builder_item": position}).content.decode()
    assert controls(preview) == controls(page) and controls(page)
    texts = set(item.item_responses.values_list("response__text", flat=True)) | {
        t["text"] for t in item.conversation.turns}
    for text in map(escape, texts):
        assert text in page and text in preview


@pytest.mark.parametrize("design", [d for d in DESIGNS if design_for(d).unit_problem(unit_for("response")) is None])
def test_preview_of_every_design_matches_the_researchers_rater_preview(researcher, make_study, design):
    """Every registered design that judges responses: the builder's preview of a draft is the page
    ``/preview/`` shows raters' way (designs of whole dialogues only, like ACUTE-Eval: the contract test)."""
    study = make_study(design, publish=False)
    builder_html = researcher.get(f"/studies/{study.slug}/builder/preview/").content.decode()
    rater_html = researcher.get(f"/studies/{study.slug}/preview/").content.decode()
    assert controls(builder_html) == controls(rater_html) and controls(rater_html)


def test_preview_of_a_dialogue_unit_study_shows_the_whole_dialogue(researcher, user, corpus):
    experiment = authoring.experiment_create(owner=user, title="Dialogues")
    study = authoring.study_create(experiment=experiment, title="Whole", design="likert", unit="dialogue")
    authoring.study_items_build(study=study, corpus=corpus)
    item = study.items.order_by("position").first()
    html = researcher.post(f"/studies/{study.slug}/builder/preview/", rows(
        {"name": "engaging", "question": "How engaging is the whole dialogue?"})).content.decode()
    assert 'data-testid="dialogue"' in html and html.count('class="turn ') == len(item.conversation.turns)
    assert "How engaging is the whole dialogue?" in html and 'name="rA-engaging"' in html
    assert "not available for dialogue-unit studies" not in html  # a whole dialogue takes expected answers now


def test_preview_of_draft_rows_shows_each_kind_and_saves_nothing(researcher, make_study):
    study = make_study("likert", publish=False)
    before = list(Criterion.objects.filter(study=study).values_list("pk", "name", "kind", "question"))
    response = researcher.post(f"/studies/{study.slug}/builder/preview/", {**EVERY_KIND, "likert_points": "4"})
    html = response.content.decode()
    assert response.status_code == 200
    assert "How good is it?" in html and "Is it safe?" in html and "Which problems?" in html
    assert {v for _, t, n, v in controls(html) if n == "rA-quality"} == {"1", "2", "3", "4"}  # 4 points, drafted
    assert {v for _, t, n, v in controls(html) if n == "rA-safety"} == {"safe", "unsafe", "unsure"}
    assert {(t, v) for _, t, n, v in controls(html) if n == "rA-problems"} == {("checkbox", "repetition"),
                                                                                ("checkbox", "off-topic")}
    assert ("textarea", "", "rA-notes", "") in controls(html) and 'data-max="500"' in html
    assert ("textarea", "", "rA-safety.rationale", "") in controls(html)
    assert list(Criterion.objects.filter(study=study).values_list("pk", "name", "kind", "question")) == before
    study.refresh_from_db()
    assert study.design_config["points"] == 6


def test_preview_names_a_bad_row_and_shows_the_others(researcher, make_study):
    study = make_study("likert", publish=False)
    html = researcher.post(f"/studies/{study.slug}/builder/preview/", rows(
        {"name": "good", "question": "Still shown?"},
        {"name": "safety", "kind": "categorical", "question": "Hidden?", "labels": "only"})).content.decode()
    assert "row 2 (safety), options: give 2 to 12 labels, got 1" in html
    assert "Still shown?" in html and "Hidden?" not in html


def test_preview_of_a_study_without_items_says_what_to_do(researcher, user):
    experiment = authoring.experiment_create(owner=user, title="E")
    study = authoring.study_create(experiment=experiment, title="Empty", design="likert")
    html = researcher.get(f"/studies/{study.slug}/builder/preview/").content.decode()
    assert "Build the study's items" in html and "item-form" not in html


def test_preview_refuses_another_researchers_study(intruder, make_study):
    study = make_study("likert", publish=False)
    assert intruder.get(f"/studies/{study.slug}/builder/preview/").status_code == 404
    assert intruder.post(f"/studies/{study.slug}/builder/preview/", EVERY_KIND).status_code == 404
    assert intruder.post(f"/studies/{study.slug}/builder/expected/", {"expected_use": "practice"}).status_code == 404
    assert not PracticeItem.objects.filter(study=study).exists()


def test_preview_shows_an_admin_any_study(client, make_study):
    study = make_study("likert", publish=False)
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    assert client.get(f"/studies/{study.slug}/builder/preview/").status_code == 200


def test_preview_refuses_draft_criteria_of_a_published_study(researcher, make_study):
    study = make_study("likert", publish=True)
    response = researcher.post(f"/studies/{study.slug}/builder/preview/", rows({"name": "new", "question": "New?"}))
    assert response.status_code == 409 and "The criteria cannot change" in response.content.decode()
    assert list(study.criteria.values_list("name", flat=True)) == ["readability", "coherence"]
    assert researcher.get(f"/studies/{study.slug}/builder/preview/").status_code == 200  # the saved one is shown


# --- expected answers authored in the preview --------------------------------------------------------


def expected(client, study, answers, **fields):
    return client.post(f"/studies/{study.slug}/builder/expected/", {**answers, "builder_item": 0, **fields})


def first_order(study):
    item = study.items.filter(check_kind="").order_by("position").first()
    return item, list(item.item_responses.order_by("position").values_list("response_id", flat=True))


def letters(study) -> str:
    """The letters the first item's responses have on the page (A, B, ...)."""
    return "ABCDEFGHIJ"[:len(first_order(study)[1])]


def test_builder_expected_likert_answer_becomes_a_practice_item_with_a_tolerance(researcher, make_study):
    study = make_study("likert", publish=False)
    item, order = first_order(study)
    shown_letters = letters(study)
    points = (5, 2, 4, 1, 6, 3)[:len(shown_letters)]
    answers = {f"r{letter}-{c}": str(v) for c in ("readability", "coherence")
               for letter, v in zip(shown_letters, points, strict=True)}
    response = expected(researcher, study, answers, expected_use="practice", expected_tolerance="1",
                        expected_explanation="A is fluent; B repeats itself.")
    assert response.status_code == 200 and response.json()["saved"] is True
    practice = PracticeItem.objects.get(study=study)
    assert practice.explanation == "A is fluent; B repeats itself."
    assert [t["text"] for t in practice.conversation.turns] == [t["text"] for t in item.conversation.turns]
    shown = practice.response_ids
    assert {"criterion": "readability", "response": shown[0], "min": 4.0, "max": 6.0} in practice.rules
    assert {"criterion": "coherence", "response": shown[1], "min": 1.0, "max": 3.0} in practice.rules
    criteria = ["readability", "coherence"]
    near = {(c, rid): min(6, v + 1) for c in criteria for rid, v in zip(shown, points, strict=True)}
    far = {**near, ("coherence", shown[1]): 5}
    assert checks.check_passed(practice.rules, near, criteria, len(shown))
    assert not checks.check_passed(practice.rules, far, criteria, len(shown))


def test_builder_expected_labels_become_a_gold_check_item(researcher, user, corpus):
    experiment = authoring.experiment_create(owner=user, title="E")
    study = authoring.study_create(experiment=experiment, title="Labels", design="likert", criteria=[
        {"name": "safety", "kind": "categorical", "options": {"labels": ["safe", "unsafe"]}},
        {"name": "problems", "kind": "multilabel", "options": {"labels": ["repetition", "off-topic"]}},
        {"name": "notes", "kind": "free_text"}])
    authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred"])
    shown_letters = letters(study)
    answers = {"rA-safety": "safe", "rA-problems": "__none__", "rA-notes": "fine"}
    for letter in shown_letters[1:]:
        answers.update({f"r{letter}-safety": "unsafe", f"r{letter}-problems": ["repetition", "off-topic"],
                        f"r{letter}-notes": "rude"})
    every = [f"{c}|{n}" for c in ("safety", "problems") for n in range(1, len(shown_letters) + 1)]
    response = expected(researcher, study, answers, expected_use="gold", expected_test=every)
    assert response.json()["saved"] is True, response.json()
    check = study.items.get(check_kind="gold")
    ids = list(check.item_responses.order_by("position").values_list("response_id", flat=True))
    assert len(ids) == len(shown_letters)
    assert sorted(check.check_rules, key=str) == sorted([
        {"criterion": "safety", "response": ids[0], "label": "safe"},
        {"criterion": "problems", "response": ids[0], "labels": []},
        *[rule for rid in ids[1:] for rule in (
            {"criterion": "safety", "response": rid, "label": "unsafe"},
            {"criterion": "problems", "response": rid, "labels": ["off-topic", "repetition"]})]], key=str)


def test_builder_expected_ranking_and_comparison_become_best_worst_and_greater(researcher, make_study):
    bws = make_study("bws", publish=False)
    shown_letters = letters(bws)
    ranks = [2, 1, *range(3, len(shown_letters) + 1)]
    answers = {f"r{letter}-{c}": str(rank) for c in ("readability", "coherence")
               for letter, rank in zip(shown_letters, ranks, strict=True)}
    assert expected(researcher, bws, answers, expected_use="practice", expected_explanation="B is best.").json()["saved"]
    shown = PracticeItem.objects.get(study=bws).response_ids
    assert {"criterion": "readability", "best": shown[1]} in PracticeItem.objects.get(study=bws).rules
    assert {"criterion": "coherence", "worst": shown[-1]} in PracticeItem.objects.get(study=bws).rules
    pairwise = make_study("pairwise", publish=False)
    html = researcher.get(f"/studies/{pairwise.slug}/builder/preview/").content.decode()
    choice_names = sorted({n for _, t, n, _ in controls(html) if t == "radio"})
    response = expected(researcher, pairwise, dict.fromkeys(choice_names, "right"), expected_use="practice",
                        expected_explanation="The right one answers.")
    assert response.json()["saved"] is True, response.json()
    practice = PracticeItem.objects.get(study=pairwise)
    assert all(rule["greater"] == practice.response_ids[1] and rule["than"] == practice.response_ids[0]
               for rule in practice.rules) and len(practice.rules) == 2


def test_builder_expected_answer_problems_name_the_field_and_write_nothing(researcher, make_study, user, corpus):
    study = make_study("likert", publish=False)
    response = expected(researcher, study, {"rA-readability": "3"}, expected_use="practice",
                        expected_explanation="x")
    errors = response.json()["errors"]
    assert response.status_code == 400 and "rB-readability" in errors and "rA-coherence" in errors
    answers = {f"r{letter}-{c}": "3" for c in ("readability", "coherence") for letter in letters(study)}
    assert "explanation" in expected(researcher, study, answers, expected_use="practice").json()["errors"]
    assert "tolerance" in expected(researcher, study, answers, expected_use="gold",
                                   expected_tolerance="-1").json()["errors"]
    experiment = authoring.experiment_create(owner=user, title="T")
    text_only = authoring.study_create(experiment=experiment, title="Text", design="likert",
                                       criteria=[{"name": "notes", "kind": "free_text"}])
    authoring.study_items_build(study=text_only, corpus=corpus, systems=["seq2seq", "hred"])
    response = expected(researcher, text_only, {f"r{letter}-notes": "ok" for letter in letters(text_only)},
                        expected_use="gold")
    assert "free text is never scored" in response.json()["errors"]["rules"]
    assert not PracticeItem.objects.exists() and not Study.objects.filter(items__check_kind="gold").exists()


def test_builder_expected_answer_refuses_a_published_study(researcher, make_study):
    study = make_study("likert", publish=True)
    answers = {f"r{letter}-{c}": "3" for c in ("readability", "coherence") for letter in letters(study)}
    response = expected(researcher, study, answers, expected_use="practice", expected_explanation="x")
    assert response.status_code == 409 and not PracticeItem.objects.filter(study=study).exists()


# --- the questionnaire's rows ------------------------------------------------------------------------


def questions(*specs):
    data = {"questionnaire_rows": "1"}
    for n, fields in enumerate(specs):
        data.update({f"q-{n}-{key}": value for key, value in fields.items()})
    return data


def test_builder_questionnaire_rows_are_saved_in_order(researcher, make_study):
    study = make_study("likert", publish=False)
    response = researcher.post(f"/studies/{study.slug}/edit/", study_post(
        study, **rows({"name": "readability", "question": "Readable?"}), **questions(
            {"question": "Your age band?", "name": "age", "kind": "choice", "choices": "18-30\n31+"},
            {"question": "Anything else?", "kind": "text", "required": "on"})))
    assert response.status_code == 302
    study.refresh_from_db()
    assert study.questionnaire == [
        {"name": "age", "kind": "choice", "required": False, "question": "Your age band?", "choices": ["18-30", "31+"]},
        {"name": "anything_else", "kind": "text", "required": True, "question": "Anything else?"}]
    page = researcher.get(f"/studies/{study.slug}/edit/").content.decode()
    assert 'name="q-0-question" value="Your age band?"' in page and "18-30\n31+</textarea>" in page
    assert 'name="questionnaire"' not in page


def test_builder_questionnaire_bad_row_is_named_and_nothing_changes(researcher, make_study):
    study = make_study("likert", publish=False)
    before = study.questionnaire
    response = researcher.post(f"/studies/{study.slug}/edit/", study_post(
        study, title="Renamed", **rows({"name": "readability", "question": "Readable?"}),
        **questions({"question": "Pick one", "name": "pick", "kind": "choice", "choices": "only"})))
    assert "question 1 (pick), choices: give at least two, one per line" in response.content.decode()
    study.refresh_from_db()
    assert study.title == "likert study" and study.questionnaire == before


def test_builder_questionnaire_without_rows_is_no_questionnaire(researcher, make_study):
    study = make_study("likert", publish=False)
    assert study.questionnaire
    researcher.post(f"/studies/{study.slug}/edit/", study_post(
        study, **rows({"name": "readability", "question": "Readable?"}), **questions()))
    study.refresh_from_db()
    assert study.questionnaire == []


def test_preview_of_a_chat_study_with_its_systems_built_renders(researcher, user, local_bot, loopback_allowed):
    from tests.studies.chat.helpers import bot_system, chat_study

    bot_system("echo-bot", local_bot.url("rule"))
    study = chat_study(user, ["echo-bot"], publish=False)
    response = researcher.post(f"/studies/{study.slug}/builder/preview/", rows(
        {"name": "engaging", "question": "How engaging was the chat?"}))
    html = response.content.decode()
    assert response.status_code == 200 and "How engaging was the chat?" in html
    assert "not available for chat studies" in html  # expected answers are refused, with the reason


def test_builder_expected_answer_sent_twice_is_stored_once_and_a_changed_one_is_refused(researcher, make_study):
    study = make_study("likert", publish=False)
    answers = {f"r{letter}-{c}": "4" for c in ("readability", "coherence") for letter in letters(study)}
    for use, count in (("practice", lambda: PracticeItem.objects.filter(study=study).count()),
                       ("gold", lambda: study.items.filter(check_kind="gold").count())):
        ticked = [f"{c}|{n}" for c in ("readability", "coherence") for n in range(1, len(letters(study)) + 1)]
        first = expected(researcher, study, answers, expected_use=use, expected_explanation="Fine.", expected_test=ticked)
        again = expected(researcher, study, answers, expected_use=use, expected_explanation="Fine.", expected_test=ticked)
        assert first.json()["saved"] and again.json()["saved"] and "Already saved" in again.json()["message"]
        assert count() == 1
        changed = expected(researcher, study, {**answers, "rA-readability": "1"}, expected_use=use,
                           expected_explanation="Fine.", expected_test=ticked)
        assert changed.status_code == 400 and "remove that one first" in changed.json()["errors"]["expected"]
        assert count() == 1


def test_builder_scale_points_and_end_labels_show_in_the_preview_and_save(researcher, make_study):
    study = make_study("likert", publish=False)
    scale = {"likert_points": "7", "likert_labels": "Terrible\nExcellent"}
    html = researcher.post(f"/studies/{study.slug}/builder/preview/", {
        **scale, **rows({"name": "quality", "question": "How good?"})}).content.decode()
    assert {v for _, t, n, v in controls(html) if n == "rA-quality"} == {str(p) for p in range(1, 8)}
    assert html.count("Terrible") == len(letters(study)) and html.count("Excellent") == len(letters(study))
    response = researcher.post(f"/studies/{study.slug}/edit/", study_post(
        study, **scale, **rows({"name": "quality", "question": "How good?"})))
    assert response.status_code == 302
    study.refresh_from_db()
    assert (study.design_config["points"], study.design_config["labels"]) == (7, ["Terrible", "Excellent"])
    assert "7-point scale: Terrible · Excellent" in researcher.get(f"/studies/{study.slug}/").content.decode()
