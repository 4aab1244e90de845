"""Study services: design validation, item building per design, status transitions, assignments
(between-subjects refusal, resume, targets) and ratings (range checks, double submit, BWS ties)."""
import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from studies import slugs
from studies.authoring import services as authoring
from studies.errors import AssignmentRefused, StudyStateError
from studies.models import Assignment, AssignmentItem, Rater, Rating, StudyItemResponse
from studies.rating import answers as answering
from studies.rating import closing
from studies.rating import entry as rater_entry
from tests.problems import problem_fields

pytestmark = pytest.mark.django_db


def rater(name):
    return rater_entry.rater_get_or_create(platform="invite", external_id=name)


def answer_all(assignment, value=3):
    study = assignment.study
    for slot in assignment.assignment_items.all():
        answers = {c: ({r: i + 1 for i, r in enumerate(slot.response_order)} if study.design == "bws"
                       else dict.fromkeys(slot.response_order, value))
                   for c in study.criteria.values_list("name", flat=True)}
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers)


@pytest.mark.parametrize(("design", "config", "field"), [
    ("likert", {"points": 1}, "design_config.points"),
    ("likert", {"points": 5, "labels": ["a", "b", "c"]}, "design_config.labels"),  # two: the end labels
    ("rme", {"reference_value": 0}, "design_config.reference_value"),
    ("bme", {"min": 10, "max": 5}, "design_config.max"),
    ("bws", {"tuple_size": "four"}, "design_config.tuple_size"),
    ("likert", {"colour": "blue"}, "design_config"),
])
def test_study_create_names_the_bad_design_setting(user, design, config, field):
    experiment = authoring.experiment_create(owner=user, title="E")
    with pytest.raises(ValidationError) as error:
        authoring.study_create(experiment=experiment, title="S", design=design, design_config=config)
    assert field in error.value.message_dict
    assert experiment.studies.count() == 0


def test_study_create_fills_defaults_and_seed_criteria(user):
    experiment = authoring.experiment_create(owner=user, title="E")
    study = authoring.study_create(experiment=experiment, title="S", design="likert")
    assert study.design_config == {"points": 6, "labels": []}
    assert list(study.criteria.values_list("name", flat=True)) == ["readability", "coherence"]
    rme = authoring.study_create(experiment=experiment, title="R", design="rme")
    assert rme.design_config == {"reference_value": 100, "min": 0, "max": 999}


def test_experiment_conditions_are_created_together(user):
    experiment = authoring.experiment_create(owner=user, title="Seed", conditions=[
        {"title": d, "design": d} for d in ("likert", "rme", "bme", "bws")])
    assert sorted(experiment.studies.values_list("design", flat=True)) == ["bme", "bws", "likert", "rme"]


def test_likert_and_bws_items_judge_the_reference_unlabelled_me_items_anchor_it(make_study):
    likert, rme, bws = make_study("likert", publish=False), make_study("rme", publish=False), make_study("bws", publish=False)
    item = likert.items.get(position=0)
    shown = list(item.item_responses.values_list("response__system__name", flat=True))
    assert shown == ["seq2seq", "hred", "thred", "human"]
    assert bws.items.first().item_responses.count() == 4
    rme_item = rme.items.get(position=0)
    assert list(rme_item.item_responses.values_list("response__system__name", flat=True)) == ["seq2seq", "hred", "thred"]
    assert (rme_item.reference_response.system.name, rme_item.reference_value) == ("human", 100)


def test_bws_tuple_size_follows_the_responses_shown(make_study, user, corpus):
    # 4 systems + the reference could not be built with the default tuple size of 4.
    experiment = authoring.experiment_create(owner=user, title="E")
    study = authoring.study_create(experiment=experiment, title="S", design="bws", design_config={"tuple_size": 3})
    authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred", "thred"], reference_system="human")
    study.refresh_from_db()
    assert study.design_config["tuple_size"] == 4
    assert {i.item_responses.count() for i in study.items.all()} == {4}
    authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred"], reference_system="human")
    study.refresh_from_db()
    assert study.design_config["tuple_size"] == 3
    assert authoring.study_publish(study=study).status == "published"


def test_items_build_limit_samples_reproducibly(make_study, corpus):
    study = make_study("likert", publish=False)
    authoring.study_items_build(study=study, corpus=corpus, systems=["hred"], reference_system="human", limit=3, seed=5)
    first = list(study.items.values_list("conversation__external_id", flat=True))
    authoring.study_items_build(study=study, corpus=corpus, systems=["hred"], reference_system="human", limit=3, seed=5)
    assert list(study.items.values_list("conversation__external_id", flat=True)) == first and len(first) == 3


def test_status_moves_draft_published_closed_only(make_study):
    study = make_study("likert", publish=False)
    with pytest.raises(StudyStateError, match="cannot close: the study is draft"):
        closing.study_close(study=study)
    authoring.study_publish(study=study)
    with pytest.raises(StudyStateError, match="cannot publish"):
        authoring.study_publish(study=study)
    with pytest.raises(StudyStateError, match="change items"):
        authoring.study_items_build(study=study, corpus=study.items.first().conversation.corpus)
    assert closing.study_close(study=study).status == "closed"


def test_publish_needs_items_and_bme_reference_values(user, corpus):
    experiment = authoring.experiment_create(owner=user, title="E")
    empty = authoring.study_create(experiment=experiment, title="S", design="likert")
    with pytest.raises(StudyStateError, match="no items"):
        authoring.study_publish(study=empty)
    bme = authoring.study_create(experiment=experiment, title="B", design="bme")
    authoring.study_items_build(study=bme, corpus=corpus, systems=["seq2seq", "hred", "thred"], reference_system="human")
    with pytest.raises(StudyStateError, match="6 item\\(s\\) have no reference response or reference value"):
        authoring.study_publish(study=bme)
    authoring.study_item_reference_values_set(study=bme, values={pk: 80.0 for pk in bme.items.values_list("pk", flat=True)})
    assert authoring.study_publish(study=bme).status == "published"


def test_assignment_resumes_and_orders_are_stored_per_rater(make_study):
    study = make_study("likert", raters_per_item=5, items_per_assignment=4)
    first = rater_entry.assignment_start(study=study, rater=rater("w1"), seed=1)
    again = rater_entry.assignment_start(study=study, rater=rater("w1"), seed=99)
    assert again.pk == first.pk
    slots = list(first.assignment_items.all())
    assert len(slots) == 4
    for slot in slots:
        canonical = list(StudyItemResponse.objects.filter(item=slot.item).values_list("response_id", flat=True))
        assert sorted(slot.response_order) == sorted(canonical)
    orders = {tuple(s.response_order) for s in slots}
    other = rater_entry.assignment_start(study=study, rater=rater("w2"), seed=2)
    assert orders != {tuple(s.response_order) for s in other.assignment_items.filter(item__in=[s.item for s in slots])}


def test_a_worker_takes_part_in_one_condition_only(make_study, user):
    experiment = authoring.experiment_create(owner=user, title="Between")
    likert = make_study("likert", experiment=experiment)
    rme = make_study("rme", experiment=experiment)
    worker = rater("w1")
    rater_entry.assignment_start(study=likert, rater=worker)
    with pytest.raises(AssignmentRefused, match="through another link"):
        rater_entry.assignment_start(study=rme, rater=worker)
    elsewhere = make_study("rme")
    assert rater_entry.assignment_start(study=elsewhere, rater=worker).study == elsewhere


def test_database_refuses_a_second_condition_even_without_the_service(make_study, user):
    experiment = authoring.experiment_create(owner=user, title="Between")
    likert, rme = make_study("likert", experiment=experiment), make_study("rme", experiment=experiment)
    worker = rater("w1")
    first = rater_entry.assignment_start(study=likert, rater=worker)
    with pytest.raises(IntegrityError), transaction.atomic():
        Assignment.objects.create(study=rme, rater=worker, experiment=experiment, seed=1, started_at=first.started_at)


def test_items_fill_to_their_target_and_never_beyond(make_study):
    study = make_study("likert", raters_per_item=2, items_per_assignment=4)
    assignments = [rater_entry.assignment_start(study=study, rater=rater(f"w{i}"), seed=i) for i in range(3)]
    per_item = {}
    for item_id in AssignmentItem.objects.filter(assignment__study=study).values_list("item_id", flat=True):
        per_item[item_id] = per_item.get(item_id, 0) + 1
    assert max(per_item.values()) <= 2
    assert len(per_item) == 6  # the third rater got the items the first two left
    assert [a.assignment_items.count() for a in assignments] == [4, 4, 4]
    with pytest.raises(AssignmentRefused, match="all the ratings it needs"):
        rater_entry.assignment_start(study=study, rater=rater("w9"))


def test_closed_or_draft_studies_refuse_new_raters(make_study):
    draft = make_study("likert", publish=False)
    with pytest.raises(AssignmentRefused, match="not open"):
        rater_entry.assignment_start(study=draft, rater=rater("w1"))
    closed = closing.study_close(study=make_study("likert"))
    with pytest.raises(AssignmentRefused, match="closed"):
        rater_entry.assignment_start(study=closed, rater=rater("w2"))


def test_out_of_range_values_are_named_and_nothing_is_stored(make_study):
    study = make_study("likert")
    assignment = rater_entry.assignment_start(study=study, rater=rater("w1"))
    slot = assignment.assignment_items.first()
    a, b, c, d = slot.response_order
    answers = {"readability": {a: 3, b: 7, c: 2.5, d: 1}, "coherence": {a: 1, b: 1, c: 1, d: 1}}
    with pytest.raises(ValidationError) as error:
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers)
    assert error.value.message_dict == {
        f"readability.{b}": ["must be from 1 to 6, got 7"],
        f"readability.{c}": ["must be a whole number from 1 to 6, got 2.5"],
    }
    assert Rating.objects.count() == 0


def test_magnitude_values_use_the_configured_range(make_study):
    study = make_study("rme")
    assignment = rater_entry.assignment_start(study=study, rater=rater("w1"))
    slot = assignment.assignment_items.first()
    good = {c: dict.fromkeys(slot.response_order, 999) for c in ("readability", "coherence")}
    assert answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=good) == 6
    bad = {c: dict.fromkeys(slot.response_order, 1000) for c in ("readability", "coherence")}
    with pytest.raises(ValidationError, match="must be from 0 to 999, got 1000"):
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=bad)


def test_double_submit_stores_once_and_a_change_replaces(make_study):
    study = make_study("likert")
    assignment = rater_entry.assignment_start(study=study, rater=rater("w1"))
    slot = assignment.assignment_items.first()
    answers = {c: dict.fromkeys(slot.response_order, 4) for c in ("readability", "coherence")}
    answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers)
    answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers)
    assert Rating.objects.filter(assignment=assignment).count() == 8
    answers["coherence"][slot.response_order[0]] = 6
    answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers)
    assert Rating.objects.filter(assignment=assignment).count() == 8
    assert Rating.objects.get(assignment=assignment, criterion__name="coherence", response_id=slot.response_order[0]).value == 6


def test_bws_needs_a_full_ranking_without_ties(make_study):
    study = make_study("bws")
    assignment = rater_entry.assignment_start(study=study, rater=rater("w1"))
    slot = assignment.assignment_items.first()
    a, b, c, d = slot.response_order
    tied = {"readability": {a: 1, b: 1, c: 3, d: 4}, "coherence": {a: 1, b: 2, c: 3, d: 4}}
    with pytest.raises(ValidationError, match="no ties"):
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=tied)
    tied["readability"] = {a: 4, b: 3, c: 2, d: 1}
    answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=tied)
    assert Rating.objects.get(assignment=assignment, criterion__name="readability", response_id=d).rank == 1


def test_rating_uniqueness_is_a_database_constraint(make_study):
    study = make_study("likert")
    assignment = rater_entry.assignment_start(study=study, rater=rater("w1"))
    answer_all(assignment)
    existing = Rating.objects.filter(assignment=assignment).first()
    with pytest.raises(IntegrityError), transaction.atomic():
        Rating.objects.create(assignment=assignment, item=existing.item, response=existing.response,
                              criterion=existing.criterion, value=1)


def test_submit_needs_every_item_then_is_idempotent(make_study):
    study = make_study("bws")
    assignment = rater_entry.assignment_start(study=study, rater=rater("w1"))
    with pytest.raises(ValidationError, match="6 item\\(s\\) are not answered"):
        answering.assignment_submit(assignment=assignment)
    answer_all(assignment)
    done = answering.assignment_submit(assignment=assignment, total_seconds=600,
                                      questionnaire={"prior_rating_experience": False, "prior_agent_experience": True,
                                                     "age_band": "25-34"})
    assert done.status == "submitted" and done.completion_code.startswith("CC-")
    assert answering.assignment_submit(assignment=assignment).completion_code == done.completion_code
    worker = Rater.objects.get(pk=done.rater_id)
    assert (worker.prior_rating_experience, worker.prior_agent_experience, worker.questionnaire) == (False, True, {"age_band": "25-34"})
    with pytest.raises(StudyStateError, match="already submitted"):
        answering.ratings_record(assignment=assignment, item_id=assignment.assignment_items.first().item_id, answers={})


# --- slugs under concurrent creates --------------------------------------------------------------------

def _stale_unique_slug(monkeypatch, taken: str):
    """unique_slug whose first answer is ``taken``: its check ran before another request inserted it."""
    real, calls = slugs.unique_slug, []

    def stale(model, text, **kwargs):
        calls.append(text)
        return taken if len(calls) == 1 else real(model, text, **kwargs)

    monkeypatch.setattr(slugs, "unique_slug", stale)
    return calls


def test_an_automatic_slug_taken_between_check_and_insert_moves_to_the_next(user, monkeypatch):
    from studies.models import Experiment

    authoring.experiment_create(owner=user, title="Pilot")
    calls = _stale_unique_slug(monkeypatch, "pilot")
    experiment = authoring.experiment_create(owner=user, title="Pilot")  # was IntegrityError (a 500)
    assert experiment.slug == "pilot-2" and len(calls) == 2 and Experiment.objects.count() == 2
    study = authoring.study_create(experiment=experiment, title="A", design="likert")
    _stale_unique_slug(monkeypatch, study.slug)
    other = authoring.study_create(experiment=experiment, title="B", design="likert")
    assert other.slug == f"{study.slug}-2"


def test_an_explicit_slug_taken_by_a_concurrent_insert_is_a_validation_error(user, other_user):
    from studies.models import Experiment

    authoring.experiment_create(owner=other_user, title="Theirs", slug="secret")
    with pytest.raises(ValidationError) as error:  # past the pre-check, as a racing request would be
        slugs._create_with_slug(Experiment, slug="secret", text="", owner=user, title="Mine")
    assert error.value.message_dict == {"slug": ["the slug 'secret' is not available; choose another"]}
    assert Experiment.objects.filter(owner=user).count() == 0


def test_create_endpoints_do_not_say_another_researchers_object_exists(api, other_user, user):
    theirs = authoring.experiment_create(owner=other_user, title="Theirs", slug="secret")
    authoring.study_create(experiment=theirs, title="T", design="likert", slug="secret-study")
    mine = authoring.experiment_create(owner=user, title="Mine", slug="mine")
    response = api.post("/api/experiments/create/", {"title": "X", "slug": "secret"}, format="json")
    assert response.status_code == 400
    assert problem_fields(response) == {"slug": ["the slug 'secret' is not available; choose another"]}
    response = api.post("/api/studies/create/", {"experiment": mine.slug, "title": "S", "design": "likert",
                                          "slug": "secret-study"}, format="json")
    assert response.status_code == 400 and "already exists" not in response.content.decode()
    assert problem_fields(response)["slug"] == ["the slug 'secret-study' is not available; choose another"]
