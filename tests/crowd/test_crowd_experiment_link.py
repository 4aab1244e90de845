"""Publishing the experiment link: one MTurk HIT type / one Prolific study for every condition of an
experiment (Concord assigns each worker a condition), the study's own completion codes on Prolific,
and the refusals that keep one platform study from promising what Concord cannot give."""
from datetime import UTC, datetime

import pytest
from botocore.stub import ANY
from django.core.management import call_command

from crowd import publishing, scope
from crowd.clients import mturk
from crowd.errors import PublishRefused
from crowd.models import Publication, WorkerAssignment
from crowd.platforms import mturk as mturk_platform
from crowd.platforms import prolific as prolific_platform
from studies.authoring import services as authoring
from studies.models import Study
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from tests.crowd.conftest import PUBLIC_URL, answer_all, hit_response, mturk_assignment

pytestmark = pytest.mark.django_db

PROLIFIC_PARAMS = "PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"


@pytest.fixture
def experiment(user):
    return authoring.experiment_create(owner=user, title="Between subjects")


def codes(study, **config):
    Study.objects.filter(pk=study.pk).update(platform_config=config)
    study.refresh_from_db()
    return study


def test_mturk_experiment_link_publishes_one_hit_type_for_every_condition(mturk_stub, make_study, experiment):
    likert = make_study("likert", platform="mturk", experiment=experiment)  # 3 places each (6 items x 3 / 6)
    make_study("rme", platform="mturk", experiment=experiment)
    publication = publishing.publication_configure(study=likert, platform="mturk", sandbox=True, settings={
        "reward": "0.80", "assignments_per_hit": 2, "experiment_link": "on"})
    assert publishing.effective_settings(publication)["hits"] == 3  # ceil((3 + 3) / 2)
    mturk_stub.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    mturk_stub.add_response("create_qualification_type", {"QualificationType": {
        "QualificationTypeId": "3QUALEXPERIMENT000000000000000"}}, None)
    mturk_stub.add_response("create_hit_type", {"HITTypeId": "3HITTYPEEXPERIMENT0000000"}, None)
    question = mturk.external_question(f"{PUBLIC_URL}/r/x/{experiment.slug}/")
    for index in range(3):
        mturk_stub.add_response("create_hit_with_hit_type", {"HIT": {
            "HITId": f"3HIT{index}EXPERIMENTLINK00000000000", "MaxAssignments": 2, "HITStatus": "Assignable"}},
            {"HITTypeId": "3HITTYPEEXPERIMENT0000000", "MaxAssignments": 2, "LifetimeInSeconds": ANY,
             "Question": question, "RequesterAnnotation": ANY, "UniqueRequestToken": f"concord-{publication.pk}-hit-{index}"})
    published = mturk_platform.mturk_publish(publication=publication)
    assert published.status == Publication.Status.PUBLISHED and published.hits.count() == 3


def test_mturk_experiment_link_sync_matches_workers_in_every_condition(mturk_stub, make_study, experiment):
    likert = make_study("likert", platform="mturk", experiment=experiment)
    rme = make_study("rme", platform="mturk", experiment=experiment)
    publication = publishing.publication_configure(study=likert, platform="mturk", sandbox=True, settings={
        "reward": "0.80", "hits": 1, "experiment_link": True})
    Publication.objects.filter(pk=publication.pk).update(status=Publication.Status.PUBLISHED, external_id="3TYPE")
    publication.hits.create(hit_id="3HITONE", max_assignments=9)
    placed = {}
    for n in range(2):
        assignment = rater_entry.experiment_enter(
            experiment=experiment, platform="mturk", external_id=f"A{n}WORKER", acceptance_id=f"3ASSIGN{n}",
            platform_data={"assignmentId": f"3ASSIGN{n}", "hitId": "3HITONE", "turkSubmitTo": "https://www.mturk.com"},
            seed=n)
        answer_all(assignment)
        placed[f"3ASSIGN{n}"] = answering.assignment_submit(assignment=assignment)
    assert {a.study_id for a in placed.values()} == {likert.pk, rme.pk}  # one in each condition
    mturk_stub.add_response("get_hit", hit_response("3HITONE"), {"HITId": "3HITONE"})
    mturk_stub.add_response("list_assignments_for_hit", {"NumResults": 2, "Assignments": [
        mturk_assignment("3ASSIGN0", "A0WORKER", "3HITONE"), mturk_assignment("3ASSIGN1", "A1WORKER", "3HITONE")]})
    summary = mturk_platform.mturk_sync(publication=publication, now=datetime(2026, 11, 20, 12, 0, tzinfo=UTC))
    assert (summary.seen, summary.linked) == (2, 2)
    linked = dict(WorkerAssignment.objects.values_list("external_id", "assignment_id"))
    assert linked == {key: a.pk for key, a in placed.items()}


def test_prolific_experiment_link_draft_uses_the_link_the_studys_codes_and_no_blocklist(make_study, experiment):
    first = codes(make_study("likert", platform="prolific", experiment=experiment),
                  completion_code="C0MPLETE", screened_out_code="SCR33NED")
    codes(make_study("bws", platform="prolific", experiment=experiment), completion_code="C0MPLETE")
    rater_entry.assignment_enter(study=first, platform="prolific", external_id="5f00000000000000000000aa",
                                    acceptance_id="s1")
    publication = publishing.publication_configure(study=first, platform="prolific", settings={
        "reward_cents": 200, "experiment_link": True})
    body = prolific_platform.prolific_study_body(publication)
    assert body["external_study_url"] == f"{PUBLIC_URL}/r/x/{experiment.slug}/?{PROLIFIC_PARAMS}"
    assert body["completion_codes"] == [
        {"code": "C0MPLETE", "code_type": "COMPLETED", "actions": [{"action": "MANUALLY_REVIEW"}]},
        {"code": "SCR33NED", "code_type": "FAILED_ATTENTION_CHECK", "actions": [{"action": "MANUALLY_REVIEW"}]}]
    assert body["total_available_places"] == 6 and body["filters"] == []  # both conditions; nobody to block
    assert publishing.publish_problems(publication, confirm_production=True) == []


def test_prolific_per_condition_draft_sends_the_studys_own_codes(make_study):
    study = codes(make_study("likert", platform="prolific"),
                  completion_url="https://app.prolific.com/submissions/complete?cc=PASTED1", screened_out_code="OUT1")
    body = prolific_platform.prolific_study_body(publishing.publication_configure(study=study, platform="prolific"))
    assert [(c["code"], c["code_type"]) for c in body["completion_codes"]] == [
        ("PASTED1", "COMPLETED"), ("OUT1", "FAILED_ATTENTION_CHECK")]


def test_prolific_experiment_link_refuses_conditions_with_other_codes_and_sends_nothing(
        prolific_transport, make_study, experiment):
    first = codes(make_study("likert", platform="prolific", experiment=experiment), completion_code="AAA")
    other = codes(make_study("rme", platform="prolific", experiment=experiment), completion_code="BBB")
    publication = publishing.publication_configure(study=first, platform="prolific", settings={
        "reward_cents": 200, "experiment_link": True})
    with pytest.raises(PublishRefused) as refused:
        prolific_platform.prolific_publish(publication=publication, confirm_production=True)
    assert other.slug in str(refused.value) and "completion code AAA" in str(refused.value)
    assert prolific_transport.requests == [] and Publication.objects.get().status == Publication.Status.DRAFT


def test_mturk_experiment_link_refuses_mixed_platforms_and_a_second_experiment_publication(make_study, experiment):
    first = make_study("likert", platform="mturk", experiment=experiment)
    second = make_study("bws", platform="mturk", experiment=experiment)
    publication = publishing.publication_configure(study=first, platform="mturk", sandbox=True, settings={
        "reward": "0.50", "experiment_link": True})
    twin = publishing.publication_configure(study=second, platform="mturk", sandbox=True, settings={
        "reward": "0.50", "experiment_link": True})
    Publication.objects.filter(pk=twin.pk).update(status=Publication.Status.PUBLISHED)
    problems = publishing.publish_problems(publication, confirm_production=False)
    assert any(f"already published through {second.slug}" in p for p in problems)
    make_study("rme", platform="prolific", experiment=experiment)
    problems = publishing.publish_problems(publication, confirm_production=False)
    assert any("one platform" in p and "Prolific" in p for p in problems)


def test_mturk_crowd_publish_command_takes_experiment_link(make_study, experiment, capsys):
    study = make_study("likert", platform="mturk", experiment=experiment)
    make_study("rme", platform="mturk", experiment=experiment)
    call_command("crowd_publish", study.slug, "--experiment-link", "--set", "reward=0.80", "--set",
                 "assignments_per_hit=2", "--dry-run")
    publication = Publication.objects.get()
    assert publication.settings["experiment_link"] is True and scope.uses_experiment_link(publication)
    assert "6 place(s)" in capsys.readouterr().out  # 3 HITs of 2 for both conditions (one alone: 2 HITs)
