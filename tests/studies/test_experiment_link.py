"""The experiment-level link /r/x/<experiment>/: new raters spread evenly over the published
conditions, returning raters back to theirs, per-condition links unchanged, one platform for all."""
from collections import Counter

import pytest
from django.test import Client

from studies.authoring import services as authoring
from studies.errors import AssignmentRefused, StudyStateError
from studies.models import Assignment, Rater, Study
from studies.rating import allocation, closing, review
from studies.rating import entry as rater_entry

pytestmark = pytest.mark.django_db


@pytest.fixture
def experiment(user):
    return authoring.experiment_create(owner=user, title="Four designs")


@pytest.fixture
def conditions(make_study, experiment):
    """Four Prolific conditions, each needing 12 raters (6 items x 12 raters / 6 items per rater)."""
    return [make_study(design, platform="prolific", experiment=experiment, raters_per_item=12)
            for design in ("likert", "rme", "bme", "bws")]


def enter(experiment, pid: str, session: str | None = None, **kwargs) -> Assignment:
    return rater_entry.experiment_enter(experiment=experiment, platform="prolific", external_id=pid,
                                     acceptance_id=session or f"s-{pid}", platform_data={"SESSION_ID": session}, **kwargs)


def test_forty_new_raters_fill_four_conditions_evenly(experiment, conditions):
    for n in range(40):
        enter(experiment, f"p{n}", seed=n)
    per_condition = Counter(Assignment.objects.values_list("study__slug", flat=True))
    assert sorted(per_condition) == sorted(s.slug for s in conditions)
    assert all(9 <= count <= 11 for count in per_condition.values()), per_condition
    assert sum(per_condition.values()) == 40 and Rater.objects.count() == 40


def test_conditions_fill_relative_to_the_places_they_need(make_study, experiment):
    small = make_study("likert", platform="prolific", experiment=experiment, raters_per_item=2)   # 2 places
    large = make_study("rme", platform="prolific", experiment=experiment, raters_per_item=6)      # 6 places
    for n in range(8):
        enter(experiment, f"p{n}", seed=n)
    counts = Counter(Assignment.objects.values_list("study_id", flat=True))
    assert counts == {small.pk: 2, large.pk: 6}
    with pytest.raises(AssignmentRefused) as refused:  # both full now
        enter(experiment, "late")
    assert refused.value.reason == AssignmentRefused.FULL
    assert Assignment.objects.count() == 8 and not Rater.objects.filter(external_id="late").exists()


def test_ties_are_broken_at_random(make_study, experiment):
    first = make_study("likert", platform="prolific", experiment=experiment)
    make_study("rme", platform="prolific", experiment=experiment)
    chosen = set()
    for seed in range(12):
        assignment = enter(experiment, f"p{seed}", seed=seed)
        chosen.add(assignment.study_id)
        Assignment.objects.filter(pk=assignment.pk).delete()  # back to a tie
    assert len(chosen) == 2 and first.pk in chosen


def test_abandoned_and_rejected_assignments_free_their_place_in_the_balance(experiment, conditions):
    placed = [enter(experiment, f"p{n}", seed=n) for n in range(4)]  # one per condition
    gone = placed[0]
    review.assignment_abandon(assignment=gone, reason="returned on Prolific")
    assert enter(experiment, "next", seed=99).study_id == gone.study_id


def test_a_returning_rater_goes_back_to_their_condition_bound_to_their_session(experiment, conditions):
    first = enter(experiment, "back", "sess1", seed=1)
    for seed in range(2, 6):  # whatever the balance says now
        assert enter(experiment, "back", "sess1", seed=seed).pk == first.pk
    with pytest.raises(AssignmentRefused) as other_session:
        enter(experiment, "back", "sess2")
    assert other_session.value.reason == AssignmentRefused.ALREADY_DONE
    with pytest.raises(AssignmentRefused) as thief:  # someone else with that session id
        enter(experiment, "thief", "sess1")
    assert thief.value.reason == AssignmentRefused.ALREADY_DONE
    # the per-condition links keep working: the same rater resumes there, and another condition refuses
    study = first.study
    assert rater_entry.assignment_enter(study=study, platform="prolific", external_id="back",
                                     acceptance_id="sess1").pk == first.pk
    other = next(s for s in conditions if s.pk != study.pk)
    with pytest.raises(AssignmentRefused) as elsewhere:
        rater_entry.assignment_enter(study=other, platform="prolific", external_id="back", acceptance_id="sess1")
    assert elsewhere.value.reason == AssignmentRefused.OTHER_CONDITION
    assert Assignment.objects.count() == 1


def test_a_rater_who_came_by_a_condition_link_is_sent_back_there_by_the_experiment_link(experiment, conditions):
    direct = rater_entry.assignment_enter(study=conditions[2], platform="prolific", external_id="d", acceptance_id="sd")
    assert enter(experiment, "d", "sd").pk == direct.pk


def test_closed_draft_and_full_conditions_are_skipped(make_study, experiment):
    closed = make_study("likert", platform="prolific", experiment=experiment)
    draft = make_study("rme", platform="prolific", experiment=experiment, publish=False)
    full = make_study("bws", platform="prolific", experiment=experiment, raters_per_item=1)
    open_one = make_study("bme", platform="prolific", experiment=experiment, raters_per_item=20)
    closing.study_close(study=closed)
    rater_entry.assignment_enter(study=full, platform="prolific", external_id="filler", acceptance_id="f")
    for n in range(5):
        assert enter(experiment, f"p{n}", seed=n).study_id == open_one.pk
    assert not Assignment.objects.filter(study__in=[closed, draft]).exists()


def test_conditions_on_different_platforms_cannot_share_the_link_and_nothing_is_written(make_study, experiment):
    make_study("likert", platform="prolific", experiment=experiment)
    make_study("rme", platform="mturk", experiment=experiment)
    problem = allocation.experiment_link(experiment)["problem"]
    assert "one platform" in problem and "Prolific" in problem and "Mechanical Turk" in problem
    with pytest.raises(StudyStateError, match="one platform"):
        enter(experiment, "p1")
    assert (Rater.objects.count(), Assignment.objects.count()) == (0, 0)
    response = Client().get(f"/r/x/{experiment.slug}/?PROLIFIC_PID=f64551fcd6f07823cb87971c&STUDY_ID=043a718774c572bd8a25adbe&SESSION_ID=2d711642b726b04401627ca9")
    page = response.content.decode()
    assert response.status_code == 409 and "one platform" in page and "tell the researcher" in page
    assert (Rater.objects.count(), Assignment.objects.count()) == (0, 0)


def test_the_link_over_http_starts_resumes_and_refuses_bad_parameters(experiment, conditions):
    url = f"/r/x/{experiment.slug}/"
    started = Client().get(f"{url}?PROLIFIC_PID=33112ee14ee469c3eb52fe90&STUDY_ID=8de0b3c47f112c59745f717a&SESSION_ID=ec31682fde561917952ff78a")
    assert started.status_code == 302
    assignment = Assignment.objects.get(rater__external_id="33112ee14ee469c3eb52fe90")
    assert started["Location"] == f"/r/a/{assignment.token}/"
    session = "ec31682fde561917952ff78a"
    assert assignment.platform_data == {"STUDY_ID": "8de0b3c47f112c59745f717a", "SESSION_ID": session}
    assert assignment.acceptance_id == session
    assert Client().get(f"{url}?PROLIFIC_PID=33112ee14ee469c3eb52fe90&STUDY_ID=8de0b3c47f112c59745f717a&SESSION_ID=ec31682fde561917952ff78a")["Location"] == started["Location"]
    mturk_style = Client().get(f"{url}?workerId=W1&assignmentId=A1&hitId=H1&turkSubmitTo=https://www.mturk.com")
    assert mturk_style.status_code == 400 and "workerId is not accepted" in mturk_style.content.decode()
    missing = Client().get(f"{url}?STUDY_ID=8de0b3c47f112c59745f717a&SESSION_ID=844ecc08164e2eab27634a9a")
    assert missing.status_code == 400 and "PROLIFIC_PID" in missing.content.decode()
    assert Client().get("/r/x/no-such-experiment/?PROLIFIC_PID=ca978112ca1bbdcafac231b3&SESSION_ID=3e23e8160039594a33894f65").status_code == 404
    assert Assignment.objects.count() == 1


def test_an_experiment_without_published_conditions_has_no_link(experiment):
    assert Client().get(f"/r/x/{experiment.slug}/?PROLIFIC_PID=ca978112ca1bbdcafac231b3&SESSION_ID=3e23e8160039594a33894f65").status_code == 404


def test_mturk_preview_by_the_experiment_link_stores_nothing_and_stops_when_all_are_full(make_study, experiment):
    likert = make_study("likert", platform="mturk", experiment=experiment, raters_per_item=1)
    Study.objects.filter(pk=likert.pk).update(instructions="Read **slowly**.")
    url = f"/r/x/{experiment.slug}/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=H1"
    preview = Client().get(url)
    assert preview.status_code == 200 and "<strong>slowly</strong>" in preview.content.decode()
    assert (Rater.objects.count(), Assignment.objects.count()) == (0, 0)
    entered = Client().get(f"/r/x/{experiment.slug}/?workerId=W1&assignmentId=A1&hitId=H1"
                           "&turkSubmitTo=https://www.mturk.com")
    assert entered.status_code == 302 and Assignment.objects.get().study_id == likert.pk
    full = Client().get(url)
    assert full.status_code == 410 and "Accept the HIT" not in full.content.decode()


def test_the_experiment_and_study_pages_show_the_link(client, user, experiment, conditions):
    client.force_login(user)
    listing = client.get("/").content.decode()
    assert f"/r/x/{experiment.slug}/" in listing and "4 open conditions" in listing
    page = client.get(f"/studies/{conditions[0].slug}/").content.decode()
    assert f"/r/x/{experiment.slug}/?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}" in page
    assert 'data-testid="experiment-link-problem"' not in page


def test_the_study_page_warns_when_conditions_are_on_different_platforms(client, user, make_study, experiment):
    study = make_study("likert", platform="prolific", experiment=experiment)
    make_study("rme", platform="mturk", experiment=experiment)
    client.force_login(user)
    page = client.get(f"/studies/{study.slug}/").content.decode()
    assert 'data-testid="experiment-link-problem"' in page and "one platform" in page
