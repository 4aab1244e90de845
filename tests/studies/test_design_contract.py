"""The design contract: every registered design on every unit it runs on goes through one harness
(as torchmetrics' MetricTester runs every metric): build its items, record an answer twice (stored
once), reject a bad answer with a field-level error, score a check item, export, render the report
section and the live panel, duplicate the study. A new design registered in studies.designs passes
or fails here without anyone adding it to a list; a design that refuses a unit says why."""

import csv
import io
import json

import numpy as np
import pytest
from django.core.exceptions import ValidationError
from django.template.loader import render_to_string

from studies.authoring import editing
from studies.authoring import services as authoring
from studies.corpora import services as corpus_imports
from studies.designs import DESIGNS, UNITS, design_for, unit_for
from studies.errors import StudyStateError
from studies.models import BestWorstChoice, Comparison, Rating, Study
from studies.rating import answers as answering
from studies.rating import checks, form_tokens
from studies.rating import entry as rater_entry
from studies.reports import exporting
from tests.conftest import small_corpus_lines
from tests.studies.test_import_dialogue import dump, fed_dialogue

pytestmark = pytest.mark.django_db
CRITERIA = ("readability", "coherence")
COMBINATIONS = [(d, u) for d in DESIGNS for u in UNITS]  # every registered design on every registered unit
RUNS = [(d, u) for d, u in COMBINATIONS if design_for(d).unit_problem(unit_for(u)) is None]  # those it runs on


def dialogue_corpus_bytes(n: int = 10) -> bytes:
    """Whole dialogues of two systems in FED's dialogue-level format (the system in the metadata)."""
    return dump([fed_dialogue(i, model=["Meena", "Mitsuku"][i % 2]) for i in range(n)])


def build(user, design_key: str, unit_key: str, *, publish: bool = True, check: bool = False) -> Study:
    """A study of the design on the unit, items built (and, with ``check``, a check item that passes
    when response 1 is judged the better), published."""
    design, unit = design_for(design_key), unit_for(unit_key)
    experiment = authoring.experiment_create(owner=user, title=f"Contract {design_key} {unit_key}")
    study = authoring.study_create(experiment=experiment, title=f"{design_key} on {unit_key}", design=design_key,
                                   unit=unit_key, raters_per_item=3, items_per_assignment=40)
    if unit.level == "dialogue":
        corpus = corpus_imports.dialogues_import(stream=io.BytesIO(dialogue_corpus_bytes()), source_name="fed.json",
                                                 owner=user).corpus
        authoring.study_items_build(study=study, corpus=corpus, seed=1,
                                    reference_conversation="fed-d0" if design.anchored else None)
    else:
        corpus = corpus_imports.dialogues_import(stream=io.BytesIO(small_corpus_lines()), source_name="s.jsonl",
                                                 owner=user).corpus
        authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred", "thred"],
                                    reference_system="human")
    study.refresh_from_db()
    if design.anchor_from_metric:  # the metrics app fills these from a metric's scores
        authoring.study_item_reference_values_set(
            study=study, values={pk: 60.0 + pk % 9 for pk in study.items.values_list("pk", flat=True)})
    if check:
        n = next(n for n in range(2, 11) if design.check_item_problem(study.design_config, n) is None)
        rule = {"best": 1} if "best" in design.check_rule_kinds else {"greater": 1, "than": 2}
        value, _ = design.check_reference_value(study.design_config, 100.0)
        checks.check_item_create(study=study, kind="gold", context="Are you there?",
                                 responses=["Yes, I am here."] + [f"Banana {i}." for i in range(n - 1)],
                                 rules=[rule], reference="I am here." if design.anchored else None,
                                 reference_value=value)
        checks.study_checks_configure(study=study, per_assignment=1)
    if publish:
        authoring.study_publish(study=study)
    study.refresh_from_db()
    return study


def simulated_answers(study: Study, slot, *, seed: int = 0, ranking: list[int] | None = None) -> dict:
    """What a simulated rater answers on a slot (the design's own simulator): random qualities, or
    with ``ranking`` (targets from best to worst) clearly that order."""
    rng = np.random.default_rng(seed)
    if ranking is None:
        quality = {(t, c): float(rng.normal()) for t in slot.response_order for c in CRITERIA}
    else:
        quality = {(t, c): -3.0 * ranking.index(t) for t in slot.response_order for c in CRITERIA}
    return design_for(study).answers_simulate(study=study, slot=slot, quality=quality,
                                              reference_quality=dict.fromkeys(CRITERIA, 0.0), rng=rng,
                                              criteria=list(study.criteria.all()))


def stored(assignment) -> int:
    """Judgments stored for an assignment, whatever their table."""
    return sum(m.objects.filter(assignment=assignment).count() for m in (Rating, BestWorstChoice, Comparison))


def rate(study: Study, name: str, *, seed: int, check_right: bool = True):
    """A rater who answers every item (random qualities) and each check item right (response 1 the
    best) or wrong (response 1 the worst), then submits."""
    assignment = rater_entry.assignment_start(
        study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id=name), seed=seed)
    for slot in assignment.assignment_items.select_related("item").order_by("position"):
        ranking = None
        if slot.item.check_kind:
            ranking = list(slot.item.item_responses.order_by("position").values_list("response_id", flat=True))
            ranking = ranking if check_right else ranking[::-1]
        answers = simulated_answers(study, slot, seed=seed * 100 + slot.position, ranking=ranking)
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers, seconds=4.0)
    return answering.assignment_submit(assignment=assignment)


@pytest.mark.parametrize(("design_key", "unit_key"), COMBINATIONS)
def test_a_design_refuses_a_unit_only_with_a_reason_and_at_creation(user, design_key, unit_key):
    problem = design_for(design_key).unit_problem(unit_for(unit_key))
    if problem is None:
        study = build(user, design_key, unit_key, publish=False)
        assert study.items.filter(check_kind="").exists()
        return
    assert len(problem) > 20
    experiment = authoring.experiment_create(owner=user, title="refused")
    with pytest.raises(ValidationError) as refused:
        authoring.study_create(experiment=experiment, title="no", design=design_key, unit=unit_key)
    assert refused.value.message_dict["unit"] == [problem]
    assert not Study.objects.filter(experiment=experiment).exists()


@pytest.mark.parametrize(("design_key", "unit_key"), RUNS)
def test_items_build_publish_and_each_rater_sees_every_target_of_an_item(user, design_key, unit_key):
    study = build(user, design_key, unit_key)
    assert study.status == Study.Status.PUBLISHED and study.design_config == design_for(study).config(study)
    assignment = rater_entry.assignment_start(
        study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id="r1"), seed=1)
    targets = unit_for(study).item_targets(assignment.assignment_items.values_list("item_id", flat=True))
    for slot in assignment.assignment_items.all():
        assert sorted(slot.response_order) == sorted(targets[slot.item_id]) and len(slot.response_order) >= 1


@pytest.mark.parametrize(("design_key", "unit_key"), RUNS)
def test_an_answer_recorded_twice_is_stored_once_and_a_change_replaces_it(user, design_key, unit_key):
    study = build(user, design_key, unit_key)
    assignment = rater_entry.assignment_start(
        study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id="twice"), seed=2)
    slot = assignment.assignment_items.select_related("item").order_by("position").first()
    answers = simulated_answers(study, slot, ranking=list(slot.response_order))
    first = answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers, seconds=3.0)
    count = stored(assignment)
    assert first >= len(CRITERIA) and count >= len(CRITERIA)
    again = answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers, seconds=3.0)
    assert again == first and stored(assignment) == count
    slot.refresh_from_db()
    shown = design_for(study).stored_values(slot, study, list(study.criteria.all()))
    assert shown, "the stored answer is shown again on the item page"
    other = simulated_answers(study, slot, ranking=list(slot.response_order)[::-1])
    answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=other, seconds=3.0)
    slot.refresh_from_db()
    assert stored(assignment) == count
    if other != answers:
        assert design_for(study).stored_values(slot, study, list(study.criteria.all())) != shown


@pytest.mark.parametrize(("design_key", "unit_key"), RUNS)
def test_a_bad_answer_is_refused_field_by_field_and_stores_nothing(client, user, design_key, unit_key):
    study = build(user, design_key, unit_key)
    assignment = rater_entry.assignment_start(
        study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id="bad"), seed=3)
    answering.assignment_consent(assignment=assignment)
    slot = assignment.assignment_items.order_by("position").first()
    page = client.post(f"/r/a/{assignment.token}/items/{slot.position}/",
                       {"form_token": form_tokens.form_token(assignment.token, "item")})
    assert page.status_code == 400
    _, errors = design_for(study).answers_parse({}, study=study, order=slot.response_order,
                                                criteria=list(study.criteria.all()))
    html = page.content.decode()
    assert errors and all(message.split("“")[0] in html for message in errors.values())
    assert all(f'name="{field}"' in html or field in CRITERIA for field in errors), errors
    with pytest.raises(ValidationError) as refused:
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers={c: "nonsense" for c in CRITERIA})
    assert refused.value.message_dict and all(
        any(c in key for c in CRITERIA) for key in refused.value.message_dict), refused.value.message_dict
    assert stored(assignment) == 0


@pytest.mark.parametrize(("design_key", "unit_key"), RUNS)
def test_a_check_item_is_scored_pass_and_fail_or_refused_with_a_reason(user, design_key, unit_key):
    design, unit = design_for(design_key), unit_for(unit_key)
    refusal = unit.checks_problem or design.checks_problem()
    if refusal:
        with pytest.raises((ValidationError, StudyStateError)) as refused:  # at creation, or at publish
            build(user, design_key, unit_key, check=True)
        assert refusal.split(" (")[0] in str(refused.value)
        return
    study = build(user, design_key, unit_key, check=True)
    good, bad = rate(study, "good", seed=5), rate(study, "bad", seed=6, check_right=False)
    assert (good.checks_shown, good.checks_passed, good.checks_failed) == (1, 1, False)
    assert (bad.checks_shown, bad.checks_passed, bad.checks_failed) == (1, 0, True)


@pytest.mark.parametrize(("design_key", "unit_key"), RUNS)
def test_exports_report_section_live_panel_and_pages_render(client, user, design_key, unit_key):
    client.force_login(user)
    study = build(user, design_key, unit_key)
    for i in range(3):
        rate(study, f"rater{i}", seed=10 + i)
    studies = Study.objects.filter(pk=study.pk)
    lines = "".join(exporting.export_lines(studies, "csv"))
    rows = list(csv.DictReader(io.StringIO(lines)))
    assert rows and {r["study"] for r in rows} == {study.slug}
    jsonl = [json.loads(line) for line in exporting.export_lines(studies, "jsonl")]
    assert len(jsonl) == len(rows)
    assert exporting.export_xlsx(studies, io.BytesIO()) == len(rows)
    design = design_for(study)
    for section in design.report_sections(studies, exclude_flagged=False):
        assert render_to_string(section.template, {"section": section.data}).strip()
    for panel in design.live_panels(study):
        assert render_to_string(panel.template, {"rows": panel.data}).strip()
    for url in (f"/studies/{study.slug}/", f"/studies/{study.slug}/report/", f"/studies/{study.slug}/browse/",
                f"/studies/{study.slug}/report.xlsx", f"/studies/{study.slug}/preview/"):
        assert client.get(url).status_code == 200, url


@pytest.mark.parametrize(("design_key", "unit_key"), RUNS)
def test_a_duplicate_is_a_draft_with_the_same_settings_and_items(user, design_key, unit_key):
    study = build(user, design_key, unit_key)
    copy = editing.study_duplicate(study=study)

    def items(s):
        return [(i.position, i.conversation_id, i.reference_response_id, i.reference_conversation_id,
                 i.reference_value, list(i.item_responses.values_list("response_id", "position")),
                 list(i.item_conversations.values_list("conversation_id", "position")))
                for i in s.items.order_by("position")]

    assert copy.status == Study.Status.DRAFT and (copy.design, copy.unit) == (study.design, study.unit)
    assert copy.design_config == study.design_config and items(copy) == items(study)
    authoring.study_publish(study=copy)  # the copy is complete: it publishes as it is
