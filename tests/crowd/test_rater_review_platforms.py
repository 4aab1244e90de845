"""Review decisions that go to the platforms (crowd.rater_decisions): approve, reject and
bonus from the review queue or a rater's page reach MTurk (botocore Stubber: every call expected with
its parameters) and Prolific (recorded responses), and are recorded only once the platform accepted;
a rejected rater leaves every report."""
from decimal import Decimal

import pytest
from botocore.stub import ANY
from django.core.exceptions import ValidationError
from django.urls import reverse

from crowd import rater_decisions
from crowd.models import Bonus, WorkerAssignment
from studies.models import Assignment, RaterDecision, Study
from studies.reports import selectors as report_selectors
from tests.crowd.conftest import mturk_error
from tests.crowd.test_mturk import SETTINGS, synced_submitted
from tests.crowd.test_prolific import LONG_MESSAGE, STUDY_ID, records_submitted

pytestmark = pytest.mark.django_db


@pytest.fixture
def mturk_publication(make_study):
    from crowd import publishing

    study = make_study("likert", raters_per_item=4)
    return publishing.publication_configure(study=study, platform="mturk", sandbox=True, settings=SETTINGS)


@pytest.fixture
def prolific_publication(make_study):
    from crowd import publishing

    study = make_study("likert")
    return publishing.publication_configure(study=study, platform="prolific", settings={
        "reward_cents": 250, "places": 3, "estimated_minutes": 15, "completion_code": "C1RATED", "devices": "desktop"})


def test_review_mturk_approve_calls_approve_assignment_then_records_the_decision(mturk_stub, mturk_publication, user):
    publication, rows = synced_submitted(mturk_stub, mturk_publication, workers=("A1",))
    mturk_stub.add_response("approve_assignment", {}, {"AssignmentId": "3ASSIGNA1", "RequesterFeedback": "careful work"})
    decision = rater_decisions.rater_platform_decide(assignment=rows[0], kind="approve", reason="careful work",
                                                     user=user)
    assert decision.kind == "approve" and decision.decided_by == user and "1 done" in decision.platform_note
    assert Assignment.objects.get(pk=rows[0].pk).status == "approved"
    assert WorkerAssignment.objects.get().state == "approved"


def test_review_mturk_reject_sends_the_reason_and_the_rater_leaves_the_reports(mturk_stub, mturk_publication, user):
    publication, rows = synced_submitted(mturk_stub, mturk_publication, workers=("A1", "A2"))
    studies = Study.objects.filter(pk=publication.study_id)
    assert rows[0].rater_id in set(report_selectors.ratings_frame(studies)["rater"])
    mturk_stub.add_response("reject_assignment", {}, {"AssignmentId": "3ASSIGNA1",
                                                      "RequesterFeedback": "Every answer was the same."})
    rater_decisions.rater_platform_decide(assignment=rows[0], kind="reject", reason="Every answer was the same.",
                                          user=user)
    assert Assignment.objects.get(pk=rows[0].pk).status == "rejected"
    assert rows[0].rater_id not in set(report_selectors.ratings_frame(studies)["rater"])
    assert RaterDecision.objects.get().reason == "Every answer was the same."


def test_review_mturk_error_records_nothing_and_changes_nothing(mturk_stub, mturk_publication, user):
    publication, rows = synced_submitted(mturk_stub, mturk_publication, workers=("A1",))
    mturk_error(mturk_stub, "reject_assignment", "RequestError", "This operation can be called with a status of: "
                "Submitted (1574288211553)", expected_params={"AssignmentId": "3ASSIGNA1", "RequesterFeedback": "Too fast."})
    with pytest.raises(ValidationError, match="RejectAssignment failed"):
        rater_decisions.rater_platform_decide(assignment=rows[0], kind="reject", reason="Too fast.", user=user)
    assert Assignment.objects.get(pk=rows[0].pk).status == "submitted" and not RaterDecision.objects.exists()


def test_review_mturk_bonus_is_sent_once_even_on_a_double_submit(mturk_stub, mturk_publication, user):
    publication, rows = synced_submitted(mturk_stub, mturk_publication, workers=("A1",))
    mturk_stub.add_response("send_bonus", {}, {"WorkerId": "A1", "BonusAmount": "0.50", "AssignmentId": "3ASSIGNA1",
                                               "Reason": "Careful work", "UniqueRequestToken": ANY})  # the bonus row's id
    first = rater_decisions.rater_platform_decide(assignment=rows[0], kind="bonus", reason="Careful work",
                                                  amount="0.50", user=user)
    again = rater_decisions.rater_platform_decide(assignment=rows[0], kind="bonus", reason="Careful work",
                                                  amount="0.50", user=user)  # the stubber has nothing more queued
    assert first.pk == again.pk and first.amount == Decimal("0.50")
    assert Bonus.objects.get().status == Bonus.Status.SENT and RaterDecision.objects.count() == 1


def test_review_prolific_reject_goes_through_the_recorded_transition(prolific_transport, prolific_publication, user):
    publication, rows = records_submitted(prolific_publication)
    with pytest.raises(ValidationError):  # Prolific needs a category: nothing sent, nothing recorded
        rater_decisions.rater_platform_decide(assignment=rows[0].assignment, kind="reject", reason=LONG_MESSAGE,
                                              user=user)
    assert prolific_transport.requests == [] and not RaterDecision.objects.exists()
    prolific_transport.expect("POST", "submissions/6560aaaa0000000000000001/transition/",
                              "prolific_submission_rejected.json",
                              body={"action": "REJECT", "rejection_category": "LOW_EFFORT", "message": LONG_MESSAGE})
    rater_decisions.rater_platform_decide(assignment=rows[0].assignment, kind="reject", reason=LONG_MESSAGE,
                                          rejection_category="LOW_EFFORT", user=user)
    assert Assignment.objects.get().status == "rejected" and RaterDecision.objects.get().kind == "reject"


def test_review_prolific_bonus_goes_through_the_recorded_bulk_payment(prolific_transport, prolific_publication, user):
    publication, rows = records_submitted(prolific_publication)
    prolific_transport.expect("POST", "submissions/bonus-payments/", "prolific_bonus_created.json", status=201, body={
        "study_id": STUDY_ID, "csv_bonuses": "5f00000000000000000000a1,0.75"})
    prolific_transport.expect("POST", "bulk-bonus-payments/6570bbbb0000000000000009/pay/", "prolific_bonus_paid.json",
                              status=202)
    decision = rater_decisions.rater_platform_decide(assignment=rows[0].assignment, kind="bonus", reason="Thanks",
                                                     amount="0.75", user=user)
    assert decision.amount == Decimal("0.75") and Bonus.objects.get().status == Bonus.Status.SENT


def test_review_platform_decision_for_a_rater_not_from_a_platform_is_refused(make_study, user):
    from studies.rating import answers as answering
    from studies.rating import entry as rater_entry
    from tests.crowd.conftest import answer_all

    study = make_study("likert")
    assignment = rater_entry.assignment_start(
        study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id="inv1"))
    answer_all(assignment)
    assignment = answering.assignment_submit(assignment=assignment)
    with pytest.raises(ValidationError, match="did not come through MTurk or Prolific"):
        rater_decisions.rater_platform_decide(assignment=assignment, kind="approve", reason="fine", user=user)
    with pytest.raises(ValidationError, match="one of approve"):
        rater_decisions.rater_platform_decide(assignment=assignment, kind="exclude", reason="fine", user=user)


def test_review_platform_decision_through_the_page(mturk_stub, mturk_publication, user, client):
    publication, rows = synced_submitted(mturk_stub, mturk_publication, workers=("A1",))
    mturk_stub.add_response("approve_assignment", {}, {"AssignmentId": "3ASSIGNA1", "RequesterFeedback": "careful work"})
    client.force_login(user)
    url = reverse("crowd:rater_decide", args=[publication.study.slug, rows[0].rater_id])
    response = client.post(url, {"kind": "approve", "reason": "careful work", "next": "queue"})
    assert response.status_code == 302 and response["Location"].endswith(f"/studies/{publication.study.slug}/review/")
    assert RaterDecision.objects.get().kind == "approve"
    response = client.post(url, {"kind": "bonus", "reason": "thanks", "amount": "-2"}, follow=True)
    assert "amount" in response.content.decode() and RaterDecision.objects.count() == 1
