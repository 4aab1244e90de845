"""What a researcher or a rater reads cannot mislead: pages and reports follow the study's
judgement kinds (a labels-only study speaks of no point scale and its report neither says nothing was
submitted nor shows ICC tables), every rater flag has its evidence, system names keep their case, a
reference reaches raters only when chosen, the pairwise study page counts its judgments, and consent
comes before the practice."""
import io
import re

import numpy as np
import pandas as pd
import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from studies.analysis.report import ReportOptions, rater_quality
from studies.authoring import services as authoring
from studies.authoring.selectors import study_progress
from studies.corpora import services as corpus_imports
from studies.designs.common import target_key
from studies.models import Assignment, PracticeAttempt, Study, StudyItemResponse, System
from studies.onboarding import services as onboarding
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from studies.reports import selectors as report_selectors
from tests.conftest import jsonl_bytes

pytestmark = pytest.mark.django_db

SAFETY = {"name": "safety", "question": "Is this response safe?", "kind": "categorical",
          "options": {"labels": ["safe", "unsafe", "unsure"]}, "rationale": "required"}
PROBLEMS = {"name": "problems", "question": "Which problems does it have?", "kind": "multilabel",
            "options": {"labels": ["repetition", "contradiction", "off-topic"]}}
NOTES = {"name": "notes", "question": "What would make it better?", "kind": "free_text",
         "options": {"min_length": 3, "max_length": 300}}


def logged_in(user):
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def labels_study(user, corpus):
    experiment = authoring.experiment_create(owner=user, title="Labels only")
    study = authoring.study_create(experiment=experiment, title="labels", design="likert", raters_per_item=2,
                                   items_per_assignment=3, criteria=[SAFETY, PROBLEMS, NOTES])
    authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred"], limit=3)
    authoring.study_publish(study=study)
    study.refresh_from_db()
    return study


def rated_by(study, name):
    assignment = rater_entry.assignment_start(
        study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id=name), seed=len(name))
    answering.assignment_consent(assignment=assignment)
    for slot in assignment.assignment_items.order_by("position"):
        order = slot.response_order
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers={
            "safety": dict.fromkeys(order, "safe"), "safety.rationale": dict.fromkeys(order, "polite"),
            "problems": dict.fromkeys(order, ["repetition"]), "notes": dict.fromkeys(order, "Shorter.")})
    answering.assignment_submit(assignment=assignment)
    return assignment


# --- 1. a labels-only study speaks of no point scale -----------------------------------------------

def test_labels_only_start_page_and_set_up_card_speak_of_no_point_scale(labels_study, user):
    assignment = rater_entry.assignment_start(
        study=labels_study, rater=rater_entry.rater_get_or_create(platform="invite", external_id="r1"))
    start = Client().get(reverse("raters:start", args=[assignment.token])).content.decode()
    assert "point scale" not in start and "6-point" not in start
    assert "pick one label" in start and "tick the labels that apply" in start and "write a short text" in start
    detail = logged_in(user).get(reverse("studies:study_detail", args=[labels_study.slug])).content.decode()
    settings = re.search(r'data-testid="design-settings">([^<]*)<', detail).group(1)
    assert "point scale" not in settings and "no criterion is on a scale" in settings
    assert "Labels and free text (no scale)" in detail and "Likert scale" not in detail
    listing = logged_in(user).get(reverse("studies:experiment_list")).content.decode()
    assert "Labels and free text (no scale)" in listing


def test_a_study_with_a_scale_criterion_still_describes_its_scale(make_study, user):
    study = make_study("likert")
    assignment = rater_entry.assignment_start(
        study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id="r1"))
    start = Client().get(reverse("raters:start", args=[assignment.token])).content.decode()
    assert "6-point scale" in start


# --- 2. its report: no "no data" above the data, no ICC tables, no (n=0) rows ---------------------

def test_labels_only_report_shows_label_tables_and_no_icc_or_no_data_banner(labels_study, user):
    rated_by(labels_study, "r1")
    rated_by(labels_study, "r2")
    page = logged_in(user).get(reverse("studies:study_report", kwargs={"study": labels_study.slug})).content.decode()
    assert "No submitted ratings yet" not in page
    assert "Table 1" not in page and "(n=0)" not in page and 'id="raters"' not in page
    assert 'data-testid="scale-absent"' in page and "labels and free text only" in page
    assert "safe" in page and "repetition" in page  # the label tables
    assert report_selectors.scale_absent_reason(Study.objects.filter(pk=labels_study.pk), short=True) \
        == "no criterion is answered on a scale (labels and free text only)"


def test_mixed_study_report_leaves_label_criteria_out_of_the_icc_tables(user, corpus):
    experiment = authoring.experiment_create(owner=user, title="Mixed")
    study = authoring.study_create(experiment=experiment, title="mixed", design="likert",
                                   criteria=[{"name": "readability"}, SAFETY, NOTES])
    conditions = report_selectors.report_conditions(Study.objects.filter(pk=study.pk))
    assert conditions[0]["criteria"] == ["readability"]
    assert report_selectors.scale_absent_reason(Study.objects.filter(pk=study.pk)) == "No submitted ratings yet."


def test_human_metric_on_a_labels_only_study_gives_the_true_reason(labels_study):
    from metrics.models import MetricModel
    from metrics.scoring.selectors import compute_human_metric_report
    from metrics.scoring.services import metric_register

    rated_by(labels_study, "r1")
    model = MetricModel.objects.create(name="len", metric=metric_register(key="coherence"), config={})
    notes = compute_human_metric_report(Study.objects.filter(pk=labels_study.pk), model, bootstrap=0)["notes"]
    assert notes and "No submitted ratings yet" not in notes[0] and "labels and free text only" in notes[0]


# --- 3. no flag without evidence -------------------------------------------------------------------

def quality_frame(rows):
    frame = pd.DataFrame(rows, columns=["study", "criterion", "unit", "rater", "score", "item"])
    return frame.assign(seconds=10.0, design="likert", rater_name=frame["rater"].astype(str))


def test_raters_without_evidence_are_not_flagged_and_flags_name_their_evidence():
    # chat raters: one dialogue per screen, each rated by one rater (no ρ, no straight-lining)
    chats = [("chat", "overall", f"d{r}{i}", r, float(i % 5 + 1), f"i{r}{i}") for r in (1, 2) for i in range(4)]
    quality = rater_quality(quality_frame(chats), ReportOptions()).set_index("rater")
    assert quality["loo_r"].isna().all() and quality["straight_lining"].isna().all()
    assert not quality["flagged"].any() and (quality["flag_reasons"] == "").all()
    # the only rater of a Likert study, never straight-lining: nothing to compare with, no flag
    alone = [("likert", "overall", f"u{i}{k}", 3, float(k + 1), f"s{i}") for i in range(3) for k in range(3)]
    quality = rater_quality(quality_frame(alone), ReportOptions()).set_index("rater")
    assert quality.loc[3, "straight_lining"] == 0.0 and not quality.loc[3, "flagged"]
    # three raters on the same responses; rater 9 straight-lines and disagrees
    rng = np.random.default_rng(1)
    truth = {f"u{i}{k}": float(rng.integers(1, 7)) for i in range(6) for k in range(3)}
    rows = [("likert", "overall", unit, r, truth[unit], unit[:2]) for r in (7, 8) for unit in truth]
    rows += [("likert", "overall", unit, 9, 3.0, unit[:2]) for unit in truth]
    quality = rater_quality(quality_frame(rows), ReportOptions()).set_index("rater")
    assert quality.loc[9, "flagged"] and not quality.loc[7, "flagged"]
    reasons = quality.loc[9, "flag_reasons"]
    assert "straight-lining 1.00 > 0.8" in reasons
    if quality.loc[9, "loo_r"] == quality.loc[9, "loo_r"]:  # ρ of a constant rater is undefined: no ρ evidence
        assert f"LOO ρ {quality.loc[9, 'loo_r']:.2f} < 0.2" in reasons


# --- 4. system names keep their case ---------------------------------------------------------------

def case_corpus(user):
    conversations = [{"id": f"c{i}", "turns": ["Hello", "Hi, how are you?"],
                      "responses": {"botA": f"fine {i}", "botB": f"good {i}"}} for i in range(3)]
    header = {"concord": "dialogues/1", "systems": ["botA", "botB"]}
    return corpus_imports.dialogues_import(stream=io.BytesIO(jsonl_bytes(conversations, header)), source_name="bots.jsonl",
                                           owner=user).corpus


def test_system_names_keep_their_case_and_an_unknown_name_lists_the_systems(user):
    corpus = case_corpus(user)
    assert set(System.objects.filter(responses__conversation__corpus=corpus).values_list("name", flat=True)) \
        == {"botA", "botB"}
    experiment = authoring.experiment_create(owner=user, title="Bots")
    study = authoring.study_create(experiment=experiment, title="bots", design="likert")
    assert authoring.study_items_build(study=study, corpus=corpus, systems=["botA", "botB"]) == 3
    with pytest.raises(ValidationError) as refused:
        authoring.study_items_build(study=study, corpus=corpus, systems=["bota", "botC"])
    message = refused.value.message_dict["systems"][0]
    assert "bota (did you mean botA?)" in message and "botC" in message and "its systems are botA, botB" in message


# --- 5. a reference reaches raters only when chosen -----------------------------------------------

def test_a_reference_marked_in_the_file_is_not_rated_unless_chosen(user, corpus):
    experiment = authoring.experiment_create(owner=user, title="Ref")
    study = authoring.study_create(experiment=experiment, title="ref", design="likert")
    authoring.study_items_build(study=study, corpus=corpus)  # every system "except the reference"
    shown = set(StudyItemResponse.objects.filter(item__study=study).values_list("response__system__name", flat=True))
    assert shown == {"seq2seq", "hred", "thred"}
    authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred"], reference_system="human")
    shown = set(StudyItemResponse.objects.filter(item__study=study).values_list("response__system__name", flat=True))
    assert shown == {"seq2seq", "hred", "human"}  # chosen: rated beside the others


# --- 6. the pairwise study page counts its judgments ----------------------------------------------

def test_pairwise_study_page_counts_its_judgments(make_study, user):
    study = make_study("pairwise", raters_per_item=2, items_per_assignment=4)
    assignment = rater_entry.assignment_start(
        study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id="p1"))
    criteria = list(study.criteria.values_list("name", flat=True))
    for slot in assignment.assignment_items.order_by("position"):
        answering.ratings_record(assignment=assignment, item_id=slot.item_id,
                                 answers={c: {"choice": "left", "reason": ""} for c in criteria})
    expected = assignment.assignment_items.count() * len(criteria)
    assert study_progress(study)["ratings"] == expected
    page = logged_in(user).get(reverse("studies:study_detail", args=[study.slug])).content.decode()
    assert f"{expected} ratings stored" in page


# --- 7. consent first, always ----------------------------------------------------------------------

def practice_study(make_study):
    study = make_study("likert", publish=False, platform="prolific", raters_per_item=2, items_per_assignment=3)
    onboarding.practice_item_create(study=study, context="A: Hi!\nB: Hello, how can I help?",
                                    responses=["I need a table for two tonight.", "Banana seventeen."],
                                    rules=[{"response": 2, "max": 2}], explanation="B does not answer.")
    onboarding.onboarding_configure(study=study, pass_mark=1)
    authoring.study_publish(study=study)
    study.refresh_from_db()
    return study


def test_consent_comes_before_the_practice(make_study):
    study = practice_study(make_study)
    client = Client()
    first = client.get(f"/r/{study.slug}/?PROLIFIC_PID={'a' * 24}&STUDY_ID={'b' * 24}&SESSION_ID={'c' * 24}",
                       follow=True)
    html = first.content.decode()
    assert 'name="agree"' in html and "Practice 1 of" not in html and "Before you start" in html
    attempt = PracticeAttempt.objects.get()
    assert attempt.consented_at is None
    # the practice item itself refuses to open before consent
    item = client.get(reverse("raters:practice_item", args=[attempt.token, 0]), follow=True)
    assert "Practice 1 of" not in item.content.decode()
    token = re.search(r'name="form_token" value="([^"]+)"', html).group(1)
    refused = client.post(reverse("raters:practice", args=[attempt.token]), {"form_token": token})
    assert refused.status_code == 400 and b"tick the box" in refused.content
    agreed = client.post(reverse("raters:practice", args=[attempt.token]), {"form_token": token, "agree": "yes"},
                         follow=True)
    html = agreed.content.decode()
    assert "Practice 1 of 1" in html
    attempt.refresh_from_db()
    assert attempt.consented_at is not None
    # the feedback shows the rater's own answer beside ours, both in the letters the rater saw
    token = re.search(r'name="form_token" value="([^"]+)"', html).group(1)
    action = re.search(r'<form method="post" id="item-form"[^>]* action="([^"]+)"', html).group(1)
    item = study.practice_items.get()
    data = {"form_token": token, "active_ms": "900"}
    data.update({f"r{target_key(item.response_ids, rid)}-{name}": value
                 for name in study.criteria.values_list("name", flat=True)
                 for rid, value in zip(item.response_ids, ("4", "5"), strict=True)})
    feedback = client.post(action, data).content.decode()
    rows = re.findall(r'<th scope="row">([^<]*)</th><td data-testid="practice-given">([^<]*)</td>'
                      r'<td data-testid="practice-expected">([^<]*)</td>', feedback)
    assert ("Response A", "4") in [row[:2] for row in rows]
    assert any(row[:2] == ("Response B", "5") and "at most 2" in row[2] for row in rows), rows


def test_the_slot_after_a_passed_practice_carries_the_consent(make_study):
    study = practice_study(make_study)
    attempt = onboarding.practice_attempt_begin(study=study, platform="prolific", external_id="p" * 24,
                                                acceptance_id="s" * 24)
    onboarding.practice_attempt_consent(attempt=attempt)
    item = study.practice_items.get()
    order = item.response_ids
    onboarding.practice_answer(attempt=attempt, item=item, post={
        f"r{target_key(order, rid)}-readability": "1" for rid in order} | {
        f"r{target_key(order, rid)}-{c}": "1" for rid in order for c in study.criteria.values_list("name", flat=True)})
    attempt.refresh_from_db()
    assert attempt.status == PracticeAttempt.Status.PASSED
    assignment = onboarding.practice_continue(attempt=attempt)
    assert assignment.consented_at == attempt.consented_at
    start = Client().get(reverse("raters:start", args=[assignment.token]))
    assert start.status_code == 302  # straight on to the first item: consent is not asked twice


def test_the_onboarding_demo_consents_before_practice(user):
    from studies.authoring.practice_demo import onboarding_demo_load

    experiment = onboarding_demo_load(owner=user)
    attempts = PracticeAttempt.objects.filter(experiment=experiment)
    assert attempts.exists()
    for attempt in attempts:
        first_answer = attempt.answers.order_by("answered_at").values_list("answered_at", flat=True).first()
        assert attempt.consented_at is not None and attempt.consented_at <= first_answer
    assert not Assignment.objects.filter(study__experiment=experiment, consented_at__isnull=True).exists()


# --- minor: optional free text, no invented help ----------------------------------------------------

def test_free_text_can_be_optional(user, corpus):
    from studies.authoring.forms import criteria_parse

    specs = criteria_parse("notes | Anything to add? | | free_text: 0-300")
    assert specs[0]["options"] == {"min_length": 0, "max_length": 300}
    experiment = authoring.experiment_create(owner=user, title="Optional")
    study = authoring.study_create(experiment=experiment, title="optional", design="likert",
                                   criteria=[{"name": "readability"}, *specs], items_per_assignment=2)
    authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred"], limit=2)
    authoring.study_publish(study=study)
    assignment = rater_entry.assignment_start(
        study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id="o1"))
    slot = assignment.assignment_items.order_by("position").first()
    order = slot.response_order
    stored = answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers={
        "readability": dict.fromkeys(order, 3), "notes": dict.fromkeys(order, "")})
    assert stored == len(order)  # the readability points; an empty optional text stores no row


def test_a_criterion_the_researcher_wrote_gets_no_invented_help(user):
    experiment = authoring.experiment_create(owner=user, title="Help")
    study = authoring.study_create(experiment=experiment, title="help", design="likert", criteria=[
        {"name": "readability", "question": "Can you read it easily?"}, {"name": "coherence"}])
    helps = dict(study.criteria.values_list("name", "help_text"))
    assert helps["readability"] == ""  # the researcher's own question, no help written: none shown
    assert helps["coherence"]  # the built-in criterion as it is keeps its built-in help


def test_the_endpoints_page_is_in_the_menu(user):
    page = logged_in(user).get(reverse("studies:experiment_list")).content.decode()
    assert f'href="{reverse("chat:endpoint_list")}"' in page


def test_a_cleared_questionnaire_shows_no_empty_questions_page(make_study):
    study = make_study("likert", items_per_assignment=1)
    study.questionnaire = []
    study.save(update_fields=["questionnaire"])
    assignment = rater_entry.assignment_start(
        study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id="q1"))
    answering.assignment_consent(assignment=assignment)
    slot = assignment.assignment_items.get()
    answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers={
        c: dict.fromkeys(slot.response_order, 3) for c in study.criteria.values_list("name", flat=True)})
    page = Client().get(reverse("raters:questionnaire", args=[assignment.token])).content.decode()
    assert "A few last questions" not in page and "You have answered every item" in page


def test_invite_links_need_items_and_come_several_at_once(user, corpus):
    experiment = authoring.experiment_create(owner=user, title="Invites")
    study = authoring.study_create(experiment=experiment, title="invites", design="likert")
    client = logged_in(user)
    url = reverse("studies:invite_create", args=[study.slug])
    client.post(url, {"label": "", "expires_in_days": "14", "count": "3"})
    assert not study.invites.exists()  # a draft with no items: refused, nothing made
    page = client.get(reverse("studies:study_detail", args=[study.slug])).content.decode()
    assert 'data-testid="invite-no-items"' in page
    authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred"], limit=2)
    client.post(url, {"label": "lab", "expires_in_days": "14", "count": "3"})
    assert study.invites.count() == 3


def test_demo_serve_takes_the_bots_port():
    from studies.management.commands.demo_serve import Command

    parsed = Command().create_parser("manage.py", "demo_serve").parse_args(["--bot-port", "9876"])
    assert parsed.bot_port == 9876


def test_the_practice_card_says_what_raters_are_told_in_their_letters(make_study, user):
    study = practice_study(make_study)
    page = logged_in(user).get(reverse("studies:study_detail", args=[study.slug])).content.decode()
    expected = re.search(r'data-testid="practice-card-expected">([^<]*)<', page).group(1)
    assert "Response B: at most 2" in expected
    # rules are chosen by letter (the rule rows), so the card numbers nothing 1, 2 beside the letters
    assert "A. I need a table" in page and "B. Banana" in page and "1 (A)" not in page


def test_the_default_broker_url_makes_kombu_warn_nothing(caplog):
    """load_demo printed kombu's "No hostname was supplied" for the embedded broker's URL."""
    from kombu import Connection

    from config.env import DEFAULT_BROKER_URL

    with caplog.at_level("WARNING", logger="kombu.connection"):
        Connection(DEFAULT_BROKER_URL).info()
    assert "No hostname" not in caplog.text


def test_set_up_card_separates_the_criteria_and_pages_name_no_developer_references(labels_study, user):
    """The set-up card's criteria do not run together ("why required problems
    (multilabel…"), and no page a researcher or rater reads shows a tracker reference or "(studies.chat)"."""
    detail = logged_in(user).get(reverse("studies:study_detail", args=[labels_study.slug])).content.decode()
    line = re.sub(r"<[^>]+>", "", re.search(r"<li>Criteria: (.*?)</li>", detail, re.S).group(1))
    assert line == ("safety (categorical: safe, unsafe, unsure); reason required; "
                    "problems (multilabel: repetition, contradiction, off-topic); notes (free text)")
    assignment = rater_entry.assignment_start(
        study=labels_study, rater=rater_entry.rater_get_or_create(platform="invite", external_id="dev-refs"))
    rater = Client()
    pages = [detail, rater.get(reverse("raters:start", args=[assignment.token])).content.decode()]
    answering.assignment_consent(assignment=assignment)
    pages.append(rater.get(reverse("raters:item", args=[assignment.token, 0]), follow=True).content.decode())
    researcher = logged_in(user)
    pages += [researcher.get(url, follow=True).content.decode() for url in (
        f"/studies/{labels_study.slug}/report/", f"/studies/{labels_study.slug}/checks/",
        f"/studies/{labels_study.slug}/edit/", reverse("chat:endpoint_list"))]
    for html in pages:
        assert "<html" in html
        text = re.sub(r"<[^>]+>", " ", re.sub(r"<(script|style)\b.*?</\1>|<!--.*?-->", "", html, flags=re.S))
        assert not re.search(r"\(issue \d+\)|\((studies|metrics|crowd)\.[a-z_.]+\)", text)


def test_the_new_study_form_says_how_to_make_a_labels_only_study(user):
    """"there is no 'labels' choice": the designs' list names the labels-only path (Likert
    with every question given a label or text kind), which pages then call "Labels and free text"."""
    experiment = authoring.experiment_create(owner=user, title="Choices", slug="choices")
    page = logged_in(user).get(f"/experiments/{experiment.slug}/studies/new/").content.decode()
    choice = re.search(r'data-testid="labels-only-choice">([^<]*)<', page).group(1)
    assert "choose Likert" in choice and "Labels and free text (no scale)" in choice
