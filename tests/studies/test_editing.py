"""The researcher's workflow services (studies.authoring.editing) and pay planning (studies.authoring.planning): what may
change when, duplicate, delete, re-open, pause/resume, collaborators, hourly rate and cost."""
from datetime import timedelta
from decimal import Decimal
from statistics import median

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from studies.authoring import editing, planning
from studies.authoring import services as authoring
from studies.errors import AssignmentRefused, StudyStateError
from studies.models import Assignment, Rating, Study, StudyItemResponse
from studies.rating import answers as answering
from studies.rating import closing
from studies.rating import entry as rater_entry
from tests.factories import UserFactory
from tests.studies.test_services import answer_all, rater

pytestmark = pytest.mark.django_db


def submitted(study, name, seconds):
    assignment = rater_entry.assignment_start(study=study, rater=rater(name))
    answer_all(assignment)
    return answering.assignment_submit(assignment=assignment, total_seconds=seconds)


def test_a_draft_changes_everything_and_a_design_change_drops_its_items(make_study):
    study = make_study("likert", publish=False)
    assert study.items.count() == 6
    study, notes = editing.study_update(study=study, values={
        "title": "Renamed", "design": "rme", "design_config": {"reference_value": 50, "max": 500},
        "criteria": [{"name": "fluency", "question": "How fluent?"}, "coherence"],
        "consent_text": "I agree", "reward": "1.50", "estimated_minutes": 12, "raters_per_item": 5,
        "time_limit_minutes": "45", "closes_at": (timezone.now() + timedelta(days=3)).isoformat()})
    study.refresh_from_db()
    assert (study.title, study.design, study.design_config) == ("Renamed", "rme", {"reference_value": 50, "min": 0, "max": 500})
    assert list(study.criteria.values_list("name", "question")) == [
        ("fluency", "How fluent?"), ("coherence", authoring.DEFAULT_CRITERIA[1]["question"])]
    assert (study.reward, study.estimated_minutes, study.raters_per_item) == (Decimal("1.50"), 12, 5)
    assert study.platform_config["time_limit_minutes"] == 45 and "closes_at" in study.platform_config
    assert study.items.count() == 0 and notes and "build them again" in notes[0]


def test_after_publishing_only_text_and_limits_change_and_the_reason_is_given(make_study):
    study = make_study("likert")
    before = (study.design, dict(study.design_config), list(study.criteria.values_list("name", "question")))
    with pytest.raises(ValidationError) as error:
        editing.study_update(study=study, values={"design_config": {"points": 7}, "instructions": "New"})
    assert "published" in error.value.message_dict["design"][0] and "duplicate" in error.value.message_dict["design"][0]
    study.refresh_from_db()
    assert study.instructions == "" and (study.design, study.design_config) == before[:2]
    # Sending the unchanged structure (as the edit form does) is fine; text, pay and limits change.
    study, _ = editing.study_update(study=study, values={
        "design": "likert", "design_config": before[1], "criteria": [n for n, _ in before[2]],
        "instructions": "Read carefully", "reward": "0.80", "raters_per_item": 9})
    study.refresh_from_db()
    assert (study.instructions, study.reward, study.raters_per_item) == ("Read carefully", Decimal("0.80"), 9)
    assert list(study.criteria.values_list("name", "question")) == before[2]


def test_a_draft_that_a_rater_started_keeps_its_structure(make_study):
    study = make_study("likert")
    rater_entry.assignment_start(study=study, rater=rater("w1"))
    assert "1 rater(s) have started" not in (editing.structure_lock_reason(study) or "")  # published says that first
    Study.objects.filter(pk=study.pk).update(status="draft", published_at=None)
    study.refresh_from_db()
    assert "1 rater(s) have started" in editing.structure_lock_reason(study)
    with pytest.raises(ValidationError, match="criteria"):
        editing.study_update(study=study, values={"criteria": ["only-one"]})


@pytest.mark.parametrize(("values", "field"), [
    ({"title": " "}, "title"), ({"reward": "-1"}, "reward"), ({"reward": "0.001"}, "reward"),
    ({"raters_per_item": 0}, "raters_per_item"), ({"estimated_minutes": "soon"}, "estimated_minutes"),
    ({"questionnaire": [{"name": "Age", "kind": "text", "question": "?"}]}, "questionnaire"),
    ({"questionnaire": [{"name": "age", "kind": "choice", "question": "Age?", "choices": ["x"]}]}, "questionnaire"),
    ({"colour": "red"}, "fields"), ({"time_limit_minutes": "0"}, "time_limit_minutes"),
    ({"closes_at": "2001-01-01T00:00:00+00:00"}, "closes_at"),
])
def test_bad_settings_are_named_and_nothing_changes(make_study, values, field):
    study = make_study("likert", publish=False)
    with pytest.raises(ValidationError) as error:
        editing.study_update(study=study, values={"instructions": "changed", **values})
    assert field in error.value.message_dict
    study.refresh_from_db()
    assert study.instructions == "" and study.reward is None and study.raters_per_item == 3


def test_bws_tuple_size_cannot_disagree_with_the_built_items(make_study):
    study = make_study("bws", publish=False)
    with pytest.raises(ValidationError, match="show 4 responses"):
        editing.study_update(study=study, values={"design_config": {"tuple_size": 5}})


def test_duplicate_copies_settings_and_items_but_no_raters(make_study):
    study = make_study("rme")
    editing.study_update(study=study, values={"consent_text": "Consent", "reward": "2.00", "estimated_minutes": 10,
                                              "closes_at": (timezone.now() + timedelta(days=1)).isoformat()})
    submitted(study, "w1", 300)
    study.refresh_from_db()
    copy = editing.study_duplicate(study=study)
    assert (copy.status, copy.title, copy.experiment_id) == ("draft", "rme study (copy)", study.experiment_id)
    assert (copy.design_config, copy.consent_text, copy.reward, copy.questionnaire) == (
        study.design_config, "Consent", Decimal("2.00"), study.questionnaire)
    assert "closes_at" not in copy.platform_config
    assert list(copy.criteria.values_list("name", "question")) == list(study.criteria.values_list("name", "question"))
    original = [(i.conversation_id, i.reference_response_id, i.reference_value) for i in study.items.order_by("position")]
    assert [(i.conversation_id, i.reference_response_id, i.reference_value) for i in copy.items.order_by("position")] == original
    assert StudyItemResponse.objects.filter(item__study=copy).count() == StudyItemResponse.objects.filter(item__study=study).count()
    assert not copy.assignments.exists() and Rating.objects.filter(item__study=copy).count() == 0
    assert authoring.study_publish(study=copy).status == "published"


def test_only_drafts_without_raters_are_deleted(make_study):
    draft, published = make_study("likert", publish=False), make_study("bws")
    assert editing.study_delete(study=draft) == "likert study"
    assert not Study.objects.filter(pk=draft.pk).exists()
    with pytest.raises(StudyStateError, match="only drafts"):
        editing.study_delete(study=published)
    assert Study.objects.filter(pk=published.pk).exists()


def test_pause_refuses_new_raters_lets_started_ones_go_on_and_resume_restores(make_study):
    study = make_study("likert", raters_per_item=5, items_per_assignment=3)
    started = rater_entry.assignment_start(study=study, rater=rater("w1"))
    study = editing.study_pause(study=study)
    assert study.paused_at is not None
    with pytest.raises(AssignmentRefused, match="paused") as refusal:
        rater_entry.assignment_start(study=study, rater=rater("w2"))
    assert refusal.value.reason == AssignmentRefused.CLOSED
    assert rater_entry.assignment_start(study=study, rater=rater("w1")).pk == started.pk  # resumes
    answer_all(started)
    assert answering.assignment_submit(assignment=started).status == "submitted"
    editing.study_resume(study=study)
    assert rater_entry.assignment_start(study=study, rater=rater("w2")).status == "started"
    draft = make_study("bws", publish=False)
    with pytest.raises(StudyStateError, match="not published"):
        editing.study_pause(study=draft)


def test_reopen_a_closed_study_unless_it_would_close_again(make_study):
    study = make_study("likert")
    closing.study_close(study=study)
    study = editing.study_reopen(study=study)
    assert (study.status, study.closed_at) == ("published", None)
    closing.study_close(study=study)
    config = {**study.platform_config, "closes_at": (timezone.now() - timedelta(hours=1)).isoformat()}
    Study.objects.filter(pk=study.pk).update(platform_config=config)
    with pytest.raises(StudyStateError, match="deadline has passed"):
        editing.study_reopen(study=study)
    with pytest.raises(StudyStateError, match="not closed"):
        editing.study_reopen(study=make_study("bws"))


def test_reopen_refuses_a_study_whose_items_are_complete(make_study):
    study = make_study("likert", raters_per_item=1, items_per_assignment=6)
    submitted(study, "w1", 120)
    study.refresh_from_db()
    assert study.status == "closed"  # complete: closed by itself
    with pytest.raises(StudyStateError, match="raise the raters per item"):
        editing.study_reopen(study=study)
    editing.study_update(study=study, values={"raters_per_item": 2})
    assert editing.study_reopen(study=study).status == "published"


def test_collaborators_are_added_by_username_or_email_by_the_owner_only(user, make_study):
    study = make_study("likert")
    carol = UserFactory(username="carol", email="Carol@example.org")
    experiment = study.experiment
    assert editing.experiment_collaborator_add(experiment=experiment, by=user, identifier="carol@EXAMPLE.org") == carol
    assert list(experiment.collaborators.all()) == [carol]
    with pytest.raises(StudyStateError, match="only the experiment's owner"):
        editing.experiment_collaborator_add(experiment=experiment, by=carol, identifier="alice")
    with pytest.raises(ValidationError, match="no single active account"):
        editing.experiment_collaborator_add(experiment=experiment, by=user, identifier="nobody")
    with pytest.raises(ValidationError, match="owns this experiment"):
        editing.experiment_collaborator_add(experiment=experiment, by=user, identifier="alice")
    editing.experiment_collaborator_remove(experiment=experiment, by=user, identifier="carol")
    assert not experiment.collaborators.exists()


def test_pay_plan_uses_the_estimate_then_the_pilot_median(make_study):
    study = make_study("likert", raters_per_item=3, items_per_assignment=4)
    editing.study_update(study=study, values={"reward": "2.50", "estimated_minutes": 15})
    study.refresh_from_db()
    plan = planning.pay_plan(study)
    # 6 items x 3 raters / 4 items per rater = 4.5 -> 5 places
    assert (plan["source"], plan["minutes"], plan["places"]) == ("estimate", 15.0, 5)
    assert plan["hourly_rate"] == Decimal("10.00") and plan["total_rewards"] == Decimal("12.50")
    times = [300.0, 720.0, 480.0]
    for i, seconds in enumerate(times):
        submitted(study, f"w{i}", seconds)
    plan = planning.pay_plan(study)
    assert plan["source"] == "pilot" and plan["pilot_assignments"] == 3
    assert plan["minutes"] == pytest.approx(median(times) / 60, abs=1e-12)
    assert plan["hourly_rate"] == (Decimal("2.50") * 60 / Decimal(str(median(times) / 60))).quantize(Decimal("0.01"))
    assert planning.rater_pay(study)["minutes"] == 8


def test_pay_plan_without_reward_or_time_says_nothing_it_cannot_know(make_study):
    study = make_study("likert")
    plan = planning.pay_plan(study)
    assert (plan["hourly_rate"], plan["total_rewards"], plan["minutes"]) == (None, None, None)
    assert planning.rater_pay(study) is None
    assert planning.hourly_rate(Decimal("1"), 0) is None
    assert Assignment.objects.count() == 0


def test_a_published_studys_criterion_wording_is_fixed_too(make_study):
    study = make_study("likert")
    with pytest.raises(ValidationError, match="published"):
        editing.study_update(study=study, values={"criteria": [{"name": "readability", "question": "Reworded?"},
                                                               "coherence"]})
    assert study.criteria.get(name="readability").question == authoring.DEFAULT_CRITERIA[0]["question"]


def test_text_of_a_study_past_its_deadline_can_still_be_edited(make_study):
    study = make_study("likert")
    passed = (timezone.now() - timedelta(hours=2)).replace(second=30, microsecond=0)
    Study.objects.filter(pk=study.pk).update(platform_config={"closes_at": passed.isoformat()})
    study.refresh_from_db()
    # The edit form sends the deadline back to the minute.
    study, _ = editing.study_update(study=study, values={"instructions": "Thanks!",
                                                         "closes_at": passed.strftime("%Y-%m-%dT%H:%M")})
    study.refresh_from_db()
    assert study.instructions == "Thanks!" and study.platform_config["closes_at"] == passed.isoformat()
    with pytest.raises(ValidationError, match="in the past"):
        editing.study_update(study=study, values={"closes_at": (passed - timedelta(hours=1)).isoformat()})
