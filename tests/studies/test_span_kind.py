"""Span annotation as a judgement kind: options, answers checked against the stored text (range, overlap,
label, turn), the rater form, check items with a tolerance, the report section, the per-span download and
the API, and what another researcher may not see."""
import csv
import io
import json

import pytest
from django.core.exceptions import ValidationError
from openpyxl import load_workbook
from rest_framework.test import APIClient

from studies.analysis import spans as span_stats
from studies.authoring import checks
from studies.authoring import services as authoring
from studies.corpora import services as corpus_imports
from studies.designs import KINDS, design_for
from studies.designs.kinds.spans import expected_spans_clean, spans_problem
from studies.models import Rating, Response
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from studies.rating import form_tokens
from studies.rating.check_rules import rules_text
from studies.reports import span_selectors
from tests.conftest import small_corpus_lines
from tests.factories import token_for

pytestmark = pytest.mark.django_db
LABELS = ["factual error", "unsafe", "off-topic"]
SPANS = KINDS["spans"]


def span_study(user, *, check_rule=None, overlap=False, unit="response"):
    experiment = authoring.experiment_create(owner=user, title=f"Spans {user.username} {unit}")
    study = authoring.study_create(
        experiment=experiment, title="Span study", design="likert", raters_per_item=3, items_per_assignment=40,
        unit=unit, criteria=[{"name": "readability"}, {"name": "errors", "question": "Mark what is wrong",
                                                      "kind": "spans", "options": {"labels": LABELS, "overlap": overlap}}])
    if unit == "response":
        corpus = corpus_imports.dialogues_import(stream=io.BytesIO(small_corpus_lines()), source_name="s.jsonl",
                                                 owner=user).corpus
        authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred"])
    else:
        from tests.studies.test_design_contract import dialogue_corpus_bytes
        corpus = corpus_imports.dialogues_import(stream=io.BytesIO(dialogue_corpus_bytes()), source_name="fed.json",
                                                 owner=user).corpus
        authoring.study_items_build(study=study, corpus=corpus, seed=1)
    if check_rule is not None:
        checks.check_item_create(study=study, kind="gold", context="Where is Paris?",
                                 responses=["Paris is in Spain.", "Paris is in France."], rules=[check_rule])
        checks.study_checks_configure(study=study, per_assignment=1)
    authoring.study_publish(study=study)
    study.refresh_from_db()
    return study


def start(study, name):
    return rater_entry.assignment_start(study=study, rater=rater_entry.rater_get_or_create(
        platform="invite", external_id=name), seed=len(name))


def first_word(text):
    s, e = span_stats.tokens(text)[0]
    return {"start": s, "end": e, "label": LABELS[0]}


def answer_all(study, assignment, spans_for):
    """Rate every slot: readability 4, and ``spans_for(text)`` on each target's text."""
    for slot in assignment.assignment_items.select_related("item").order_by("position"):
        texts = dict(Response.objects.filter(pk__in=slot.response_order).values_list("pk", "text"))
        answers = {"readability": dict.fromkeys(slot.response_order, 4),
                   "errors": {t: spans_for(texts.get(t, "")) for t in slot.response_order}}
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers, seconds=2.0)
    return answering.assignment_submit(assignment=assignment)


# --- options and answers ---------------------------------------------------------------------------------

def test_span_options_need_labels_and_a_boolean_overlap():
    with pytest.raises(ValidationError) as refused:
        SPANS.options_clean({"labels": ["only one"], "overlap": "yes"})
    assert set(refused.value.message_dict) == {"options.labels", "options.overlap"}
    assert SPANS.options_clean({"labels": LABELS}) == {"labels": LABELS, "overlap": False}


@pytest.mark.parametrize(("given", "words"), [
    ([{"start": 0, "end": 99, "label": "unsafe"}], ["span 1", "out of range", "13 characters"]),
    ([{"start": 5, "end": 5, "label": "unsafe"}], ["span 1", "out of range"]),
    ([{"start": 0, "end": 4, "label": "rude"}], ["span 1", "“rude”", "not one of the labels"]),
    ([{"start": 0, "end": 4, "label": "unsafe"}, {"start": 2, "end": 8, "label": "off-topic"}], ["overlap"]),
    ([{"start": 0, "end": 4, "label": "unsafe"}, {"start": 0, "end": 4, "label": "unsafe"}], ["given twice"]),
    ([{"start": 5, "end": 6, "label": "unsafe"}], ["only spaces"]),
    ([{"start": "0", "end": 4, "label": "unsafe"}], ["start must be a whole number"]),
    ([{"start": 0, "end": 4, "label": "unsafe", "colour": "red"}], ["unknown key 'colour'"]),
    ({"start": 0}, ["list of spans"]),
    ("not json", ["could not be read"]),
    (None, ["mark the spans, or confirm"]),
])
def test_span_answer_problems_name_the_span_and_field(given, words):
    cleaned, problem = spans_problem(given, {None: "Paris is big."}, LABELS, overlap=False, turns=False)
    assert cleaned is None and all(w in problem for w in words), problem


def test_span_answer_accepts_sorted_overlaps_where_allowed_and_none():
    text = {None: "Paris is big."}
    given = [{"start": 6, "end": 8, "label": "unsafe"}, {"start": 0, "end": 8, "label": "off-topic"}]
    cleaned, problem = spans_problem(given, text, LABELS, overlap=True, turns=False)
    assert problem is None and [s["start"] for s in cleaned] == [0, 6]
    assert spans_problem("[]", text, LABELS, overlap=False, turns=False) == ([], None)


def test_span_in_a_dialogue_names_its_turn():
    docs = {0: "Hi there.", 1: "Paris is in Spain."}
    ok, problem = spans_problem([{"turn": 1, "start": 12, "end": 17, "label": "factual error"}], docs, LABELS,
                                overlap=False, turns=True)
    assert problem is None and ok[0]["turn"] == 1
    assert "turn 5" in spans_problem([{"turn": 5, "start": 0, "end": 2, "label": "unsafe"}], docs, LABELS,
                                     overlap=False, turns=True)[1]
    assert "turn 1" in spans_problem([{"turn": 1, "start": 0, "end": 2, "label": "unsafe"}], {None: "Hello"}, LABELS,
                                     overlap=False, turns=False)[1]
    # two turns may each have a span at the same offsets
    both = [{"turn": t, "start": 0, "end": 2, "label": "unsafe"} for t in (0, 1)]
    assert spans_problem(both, docs, LABELS, overlap=False, turns=True)[1] is None


def test_span_answer_stored_as_offsets_into_the_stored_text_and_refused_field_by_field(user):
    study = span_study(user)
    assignment = start(study, "offsets")
    slot = assignment.assignment_items.order_by("position").first()
    texts = dict(Response.objects.filter(pk__in=slot.response_order).values_list("pk", "text"))
    bad = {t: [{"start": 0, "end": len(texts[t]) + 1, "label": LABELS[0]}] for t in slot.response_order}
    with pytest.raises(ValidationError) as refused:
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers={
            "readability": dict.fromkeys(slot.response_order, 4), "errors": bad})
    assert {f"errors.{t}" for t in slot.response_order} <= set(refused.value.message_dict)
    assert "out of range" in str(refused.value) and not Rating.objects.filter(assignment=assignment).exists()
    good = {t: [first_word(texts[t])] for t in slot.response_order}
    answering.ratings_record(assignment=assignment, item_id=slot.item_id,
                             answers={"readability": dict.fromkeys(slot.response_order, 4), "errors": good})
    for rating in Rating.objects.filter(assignment=assignment, criterion__name="errors"):
        (span,) = rating.spans
        assert texts[rating.response_id][span["start"]:span["end"]] == span_stats.TOKEN.search(
            texts[rating.response_id]).group()


def test_span_rater_form_posts_json_and_shows_the_message_of_a_bad_span(client, user):
    study = span_study(user)
    assignment = start(study, "form")
    answering.assignment_consent(assignment=assignment)
    slot = assignment.assignment_items.order_by("position").first()
    url = f"/r/a/{assignment.token}/items/{slot.position}/"
    page = client.get(url).content.decode()
    assert 'class="span-token"' in page and "rater_spans.js" in page
    letters = "ABCDEFGH"[:len(slot.response_order)]
    post = {"form_token": form_tokens.form_token(assignment.token, "item"),
            **{f"r{x}-readability": "4" for x in letters},
            **{f"r{x}-errors": json.dumps([{"start": 0, "end": 4, "label": "rude"}]) for x in letters}}
    refused = client.post(url, post)
    assert refused.status_code == 400 and "is not one of the labels" in refused.content.decode()
    post.update({f"r{x}-errors": "[]" for x in letters})
    assert client.post(url, post).status_code in (200, 302)  # the next item's page itself, or the questionnaire
    assert list(Rating.objects.filter(assignment=assignment, criterion__name="errors")
                .values_list("spans", flat=True)) == [[]] * len(letters)


def test_span_rater_form_of_a_dialogue_shows_each_turn(client, user):
    study = span_study(user, unit="dialogue")
    assignment = start(study, "turns")
    answering.assignment_consent(assignment=assignment)
    slot = assignment.assignment_items.order_by("position").first()
    page = client.get(f"/r/a/{assignment.token}/items/{slot.position}/").content.decode()
    turns = slot.item.conversation.turns
    assert page.count('data-testid="span-doc"') == len(turns)
    assert f'data-turn="{len(turns) - 1}"' in page


# --- checks ----------------------------------------------------------------------------------------------

def test_span_check_rule_expected_spans_cleaned_with_tolerance():
    assert expected_spans_clean([], LABELS) == ({"spans": [], "slack": 0, "min_overlap": 1.0}, None)
    _, problem = expected_spans_clean({"spans": [{"start": 0, "end": 2, "label": "rude"}]}, LABELS)
    assert "“rude”" in problem
    assert "slack" in expected_spans_clean({"spans": [], "slack": -1}, LABELS)[1]
    assert "min_overlap" in expected_spans_clean({"spans": [], "min_overlap": 1.5}, LABELS)[1]
    assert "unknown key" in expected_spans_clean({"spans": [], "tolerance": 1}, LABELS)[1]


def test_span_check_rule_refused_by_name_at_creation(user):
    with pytest.raises(ValidationError) as refused:
        span_study(user, check_rule={"criterion": "errors", "response": 1,
                                     "spans": [{"start": 12, "end": 17, "label": "wrong"}]})
    assert "wrong" in str(refused.value)


@pytest.mark.parametrize(("given", "passes"), [
    ((12, 17), True),   # "Spain" exactly
    ((11, 18), True),   # one character either side: within the slack
    ((9, 17), True),    # "in Spain": overlap 5/8 ≥ 0.6
    ((0, 5), False),    # "Paris": no overlap
])
def test_span_check_item_passes_within_the_researchers_tolerance(user, given, passes):
    study = span_study(user, check_rule={"criterion": "errors", "response": 1, "spans": {
        "spans": [{"start": 12, "end": 17, "label": "factual error"}], "slack": 1, "min_overlap": 0.6}})
    rule = {"criterion": "errors", "response": 1, **{k: v for k, v in study.items.get(check_kind="gold").check_rules[0]
                                                      .items() if k == "spans"}}
    assert "characters 12–17 marked factual error (within 1 characters" in rules_text([rule])[0]
    assignment = start(study, f"check{given[0]}")

    def spans_for(text):
        if text == "Paris is in Spain.":
            return [{"start": given[0], "end": given[1], "label": "factual error"}]
        return []
    done = answer_all(study, assignment, spans_for)
    assert (done.checks_shown, done.checks_passed) == (1, int(passes))


# --- report, downloads, API ------------------------------------------------------------------------------

@pytest.fixture
def rated_span_study(user):
    study = span_study(user)
    answer_all(study, start(study, "r1"), lambda text: [first_word(text)])
    answer_all(study, start(study, "r2"), lambda text: [first_word(text)])
    answer_all(study, start(study, "r3"), lambda text: [])
    return study


def test_span_report_section_shows_agreement_methods_and_aggregated_spans(client, user, rated_span_study):
    client.force_login(user)
    page = client.get(f"/studies/{rated_span_study.slug}/report/").content.decode()
    assert 'data-testid="span-report"' in page and "Krippendorff" in page and "Deleger" in page
    assert "token-level majority" in page and 'data-testid="span-aggregated"' in page
    (found,) = span_selectors.span_report(type(rated_span_study).objects.filter(pk=rated_span_study.pk))
    assert found["exact"]["f1"] == pytest.approx(1 / 2)  # r1 = r2; r3 marks nothing: 2·(n)/(2n + 2n) per pair sum
    assert len(found["aggregated"]) == found["ratings"] // 3  # two of three raters marked each first word


def test_span_download_has_one_row_per_span_and_the_majority(client, user, rated_span_study):
    client.force_login(user)
    rows = list(csv.DictReader(io.StringIO(client.get(f"/studies/{rated_span_study.slug}/spans.csv")
                                           .content.decode())))
    raters = [r for r in rows if r["source"] == "rater"]
    majority = [r for r in rows if r["source"] == "majority"]
    targets = Rating.objects.filter(assignment__study=rated_span_study, criterion__name="errors",
                                    assignment__rater__external_id="r1").count()
    assert len(raters) == 2 * targets and len(majority) == targets
    assert all(r["text"] and int(r["start"]) < int(r["end"]) and r["label"] == LABELS[0] for r in rows)
    book = load_workbook(io.BytesIO(client.get(f"/studies/{rated_span_study.slug}/spans.xlsx").content))
    assert book.active.max_row == len(rows) + 1
    assert client.get(f"/studies/{rated_span_study.slug}/spans.pdf").status_code == 404


def test_span_api_lists_spans_and_agreement(user, rated_span_study):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_for(user)}")
    listed = api.get(f"/api/studies/{rated_span_study.slug}/spans/?source=majority&limit=500").json()
    assert listed["count"] == len(listed["results"]) > 0 and {r["source"] for r in listed["results"]} == {"majority"}
    assert api.get(f"/api/studies/{rated_span_study.slug}/spans/?source=other").status_code == 400
    assert api.get(f"/api/studies/{rated_span_study.slug}/spans/?criterion=nope").status_code == 400
    (agreement,) = api.get(f"/api/studies/{rated_span_study.slug}/span-agreement/").json()
    assert agreement["criterion"] == "errors" and "Hripcsak" in agreement["span_method"]
    assert agreement["exact"]["f1"] == pytest.approx(0.5)


def test_span_other_researcher_sees_no_spans(client, other_user, rated_span_study):
    client.force_login(other_user)
    assert client.get(f"/studies/{rated_span_study.slug}/spans.csv").status_code == 404
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_for(other_user)}")
    assert api.get(f"/api/studies/{rated_span_study.slug}/spans/").status_code == 404
    assert api.get(f"/api/studies/{rated_span_study.slug}/span-agreement/").status_code == 404


def test_span_simulated_rater_marks_words_of_the_text(user):
    study = span_study(user)
    criterion = study.criteria.get(name="errors")
    response = Response.objects.filter(study_items__study=study).first()
    good = SPANS.target_simulate(criterion, response.pk, 0.5, None)
    bad = SPANS.target_simulate(criterion, response.pk, -2.0, None)
    assert good == [] and spans_problem(bad, {None: response.text}, LABELS, overlap=False, turns=False)[1] is None
    assert design_for(study).key == "likert"


# --- the rater API -----------------------------------------------------------------------------------------

def test_span_rater_api_lists_the_field_and_takes_a_list_of_spans(user):
    from tests.api.rater_helpers import base, enter, rater_client
    from tests.problems import problem_fields

    study = span_study(user)
    study.criteria.filter(name="readability").delete()  # one span criterion alone
    session = enter(study).json()
    client = rater_client(session)
    item = client.get(base(session) + "items/0/").json()
    fields = [f for f in item["fields"] if f["criterion"] == "errors"]
    assert fields and all(f["kind"] == "spans" and f["choices"] == LABELS and f["many"] for f in fields)
    texts = {t["key"]: t["text"] for t in item["targets"]}
    bad = {f["name"]: [{"start": 0, "end": 3, "label": "rude"}] for f in fields}
    refused = client.put(base(session) + "items/0/answer/", {"answers": bad}, format="json")
    assert refused.status_code == 400
    assert all("“rude” is not one of the labels" in " ".join(problem_fields(refused)[f"answers.{name}"]) for name in bad)
    good = {f["name"]: [first_word(texts[f["target"]])] for f in fields}
    assert client.put(base(session) + "items/0/answer/", {"answers": good}, format="json").status_code == 200
    stored = list(Rating.objects.filter(assignment__token=session["token"]).values_list("spans", flat=True))
    assert len(stored) == len(fields) and all(len(s) == 1 and s[0]["label"] == LABELS[0] for s in stored)


def test_span_builder_rows_take_labels_for_a_span_criterion():
    from studies.authoring.criteria_rows import rows_parse

    specs, problems = rows_parse([{"name": "errors", "kind": "spans", "question": "Mark errors",
                                   "labels": "factual error\nunsafe"}])
    assert not problems and specs[0]["options"] == {"labels": ["factual error", "unsafe"]}
    _, problems = rows_parse([{"name": "errors", "kind": "spans", "question": "Mark errors", "labels": "one"}])
    assert problems and "row 1" in problems[0] and "labels" in problems[0]
