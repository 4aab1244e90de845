"""Crowd review by the quality checks (studies.rating.checks): "approve all that passed" and "reject all
that failed" on MTurk (botocore Stubber) and Prolific (recorded transport), from the service, the
API, the page and ``crowd_review``; the dashboard marks who is suggested for rejection."""
from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from crowd import publishing, reviews
from crowd.models import Publication, WorkerAssignment
from studies.authoring import checks
from studies.authoring import services as authoring
from studies.models import Assignment
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from tests.crowd.test_mturk import SETTINGS
from tests.crowd.test_prolific import LONG_MESSAGE
from tests.problems import problem_fields

pytestmark = pytest.mark.django_db

HIT = "3HITAAAAAAAAAAAAAAAAAAAAAAAAAA"


def answer(assignment, check_value):
    """Regular items 3; the check item's first response ``check_value`` (the check wants 2)."""
    names = list(assignment.study.criteria.values_list("name", flat=True))
    for slot in assignment.assignment_items.select_related("item"):
        values = dict.fromkeys(slot.response_order, 3)
        if slot.item.check_kind:
            first = slot.item.item_responses.order_by("position").first().response_id
            values[first] = check_value
        answering.ratings_record(assignment=assignment, item_id=slot.item_id,
                                      answers={n: values for n in names})
    return answering.assignment_submit(assignment=assignment)


def checked_study(make_study):
    study = make_study("likert", publish=False, raters_per_item=4)
    checks.check_item_create(study=study, kind="instructed", context="A: Hello\nB: Hi",
                             responses=["Attention check: choose 2 for this reply.", "Hi!", "Hello.", "Hey."],
                             rules=[{"response": 1, "value": 2}])
    checks.study_checks_configure(study=study, per_assignment=1)
    authoring.study_publish(study=study)
    return study


def workers(publication, platform, plan):
    """plan: worker id -> check value; every one submitted in Concord and on the platform."""
    rows = {}
    for n, (worker, value) in enumerate(plan.items()):
        rater = rater_entry.rater_get_or_create(platform=platform, external_id=worker)
        assignment = answer(rater_entry.assignment_start(study=publication.study, rater=rater, seed=n), value)
        external = f"3ASSIGN{worker}" if platform == "mturk" else f"6560aaaa000000000000000{n}"
        rows[worker] = WorkerAssignment.objects.create(
            publication=publication, assignment=assignment, external_id=external, worker_id=worker, hit_id=HIT,
            state="submitted")
    return rows


@pytest.fixture
def mturk_checked(make_study):
    publication = publishing.publication_configure(study=checked_study(make_study), platform="mturk", sandbox=True,
                                                 settings=SETTINGS)
    workers(publication, "mturk", {"A1PASS": 2, "A2PASS": 2, "A3FAIL": 5})
    return publication


def statuses():
    return dict(Assignment.objects.values_list("rater__external_id", "status"))


def test_mturk_approve_passed_approves_only_those_who_passed(mturk_stub, mturk_checked):
    assert Assignment.objects.get(rater__external_id="A3FAIL").checks_failed
    for worker in ("A1PASS", "A2PASS"):
        mturk_stub.add_response("approve_assignment", {}, {"AssignmentId": f"3ASSIGN{worker}"})
    outcome = reviews.assignments_review_checked(publication=mturk_checked, passed=True)
    assert sorted(r.worker_id for r in outcome.done) == ["A1PASS", "A2PASS"]
    assert statuses() == {"A1PASS": "approved", "A2PASS": "approved", "A3FAIL": "submitted"}


def test_mturk_reject_failed_needs_feedback_and_rejects_only_those_who_failed(mturk_stub, mturk_checked):
    with pytest.raises(ValidationError, match="needs feedback"):
        reviews.assignments_review_checked(publication=mturk_checked, passed=False, feedback="  ")
    feedback = "You missed the attention check."
    mturk_stub.add_response("reject_assignment", {}, {"AssignmentId": "3ASSIGNA3FAIL", "RequesterFeedback": feedback})
    outcome = reviews.assignments_review_checked(publication=mturk_checked, passed=False, feedback=feedback)
    assert [r.worker_id for r in outcome.done] == ["A3FAIL"]
    assert statuses() == {"A1PASS": "submitted", "A2PASS": "submitted", "A3FAIL": "rejected"}


def test_mturk_approve_passed_is_refused_without_check_items(mturk_stub, make_study):
    publication = publishing.publication_configure(study=make_study("likert"), platform="mturk", sandbox=True,
                                                 settings=SETTINGS)
    with pytest.raises(ValidationError, match="no attention checks"):
        reviews.assignments_review_checked(publication=publication, passed=True)


def test_mturk_approve_passed_from_the_api_and_a_mismatched_decision_is_refused(mturk_stub, mturk_checked, user):
    client = APIClient()
    client.force_authenticate(user)
    url = f"/api/crowd/publications/{mturk_checked.pk}/review/"
    wrong = client.post(url, {"decision": "reject", "checks": "passed"}, format="json")
    assert wrong.status_code == 400 and "decision" in problem_fields(wrong)
    for worker in ("A1PASS", "A2PASS"):
        mturk_stub.add_response("approve_assignment", {}, {"AssignmentId": f"3ASSIGN{worker}"})
    answer_ = client.post(url, {"decision": "approve", "checks": "passed"}, format="json")
    assert answer_.status_code == 200 and len(answer_.json()["done"]) == 2
    board = client.get(f"/api/crowd/studies/{mturk_checked.study.slug}/").json()
    assert board["counts"]["failed_checks"] == 1
    assert {r["rater"]: r["suggested_rejection"] for r in board["raters"]}["A3FAIL"] is True


def test_mturk_crowd_review_command_approve_passed_and_reject_failed(mturk_stub, mturk_checked):
    for worker in ("A1PASS", "A2PASS"):
        mturk_stub.add_response("approve_assignment", {}, {"AssignmentId": f"3ASSIGN{worker}"})
    out = StringIO()
    call_command("crowd_review", mturk_checked.study.slug, "--approve-passed", stdout=out)
    assert "approve passed: 2 done" in out.getvalue()
    with pytest.raises(CommandError, match="feedback"):
        call_command("crowd_review", mturk_checked.study.slug, "--reject-failed", stdout=out)
    mturk_stub.add_response("reject_assignment", {}, {"AssignmentId": "3ASSIGNA3FAIL", "RequesterFeedback": "Missed it."})
    call_command("crowd_review", mturk_checked.study.slug, "--reject-failed", "--feedback", "Missed it.", stdout=out)
    assert statuses() == {"A1PASS": "approved", "A2PASS": "approved", "A3FAIL": "rejected"}


def test_mturk_crowd_page_suggests_rejection_and_approves_the_passed(mturk_stub, mturk_checked, client, user):
    client.force_login(user)
    study = mturk_checked.study
    Publication.objects.filter(pk=mturk_checked.pk).update(status=Publication.Status.PUBLISHED)  # review shows then
    text = client.get(f"/studies/{study.slug}/crowd/").content.decode()
    assert "1 failed the quality checks (suggested for rejection)" in text
    assert "Approve all that passed the quality checks" in text
    assert "suggested for rejection" in client.get(f"/studies/{study.slug}/").content.decode()
    for worker in ("A1PASS", "A2PASS"):
        mturk_stub.add_response("approve_assignment", {}, {"AssignmentId": f"3ASSIGN{worker}"})
    client.post(f"/studies/{study.slug}/crowd/review/",
                {"publication": mturk_checked.pk, "checks": "passed", "decision": "reject"})
    assert statuses() == {"A1PASS": "approved", "A2PASS": "approved", "A3FAIL": "submitted"}


def test_prolific_reject_failed_sends_the_category_for_the_failed_only(prolific_transport, make_study):
    publication = publishing.publication_configure(study=checked_study(make_study), platform="prolific",
                                                 settings={"reward_cents": 150, "places": 4, "estimated_minutes": 10,
                                                           "completion_code": "C1ABCDEF"})
    rows = workers(publication, "prolific", {"5f00000000000000000000a1": 2, "5f00000000000000000000b2": 6})
    failed = rows["5f00000000000000000000b2"]
    prolific_transport.expect("POST", f"submissions/{failed.external_id}/transition/",
                              "prolific_submission_approved.json",
                              body={"action": "REJECT", "message": LONG_MESSAGE, "rejection_category": "FAILED_CHECK"})
    outcome = reviews.assignments_review_checked(publication=publication, passed=False, feedback=LONG_MESSAGE,
                                                  rejection_category="FAILED_CHECK")
    assert [r.pk for r in outcome.done] == [failed.pk]
    assert dict(Assignment.objects.values_list("rater__external_id", "status")) == {
        "5f00000000000000000000a1": "submitted", "5f00000000000000000000b2": "rejected"}
