"""Prolific through recorded JSON responses behind a transport that fails the test on any request it
was not told to expect: draft study body, publish/pause/stop, refusals, sync and reconciliation
(returned and timed-out slots free their items), approve/reject with Prolific's rules, bulk bonuses,
and errors that name the call and change nothing."""
import pytest
from django.core.exceptions import ValidationError

from crowd import bonuses as crowd_bonuses
from crowd import publishing, reviews
from crowd.clients import prolific
from crowd.errors import PlatformError, PublishRefused
from crowd.models import Bonus, Publication, WorkerAssignment
from crowd.platforms import prolific as prolific_platform
from studies.models import Assignment
from tests.crowd.conftest import PUBLIC_URL, prolific_participant

pytestmark = pytest.mark.django_db

STUDY_ID = "6550a1b2c3d4e5f601234567"
LONG_MESSAGE = ("Thank you for taking part. We could not accept this submission because every reply received the "
                "same rating within a few seconds, which the instructions asked you not to do.")


@pytest.fixture
def publication(make_study):
    study = make_study("likert")
    return publishing.publication_configure(study=study, platform="prolific", settings={
        "reward_cents": 250, "places": 3, "estimated_minutes": 15, "completion_code": "C1RATED",
        "devices": "desktop"})


def test_prolific_draft_study_carries_the_url_parameters_codes_and_blocklist(prolific_transport, publication, make_study):
    other = make_study("bws", experiment=publication.study.experiment)
    prolific_participant(other, "5f0000000000000000000bad", "6560ffff0000000000000001")
    publishing.publication_configure(study=publication.study, platform="prolific",
                                   settings={"screened_out_code": "C0ATTN", "max_minutes": 45})
    publication.refresh_from_db()
    body = prolific_platform.prolific_study_body(publication)
    assert body["external_study_url"] == (
        f"{PUBLIC_URL}/r/c/{publication.study.rater_key}/?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}"
        "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}")
    assert body["completion_codes"] == [
        {"code": "C1RATED", "code_type": "COMPLETED", "actions": [{"action": "MANUALLY_REVIEW"}]},
        {"code": "C0ATTN", "code_type": "FAILED_ATTENTION_CHECK", "actions": [{"action": "MANUALLY_REVIEW"}]}]
    assert (body["reward"], body["total_available_places"], body["estimated_completion_time"],
            body["maximum_allowed_time"], body["device_compatibility"]) == (250, 3, 15, 45, ["desktop"])
    assert body["filters"] == [{"filter_id": "custom_blocklist", "selected_values": ["5f0000000000000000000bad"]}]
    prolific_transport.expect("POST", "studies/", "prolific_study_created.json", status=201, body=body)
    prolific_transport.expect("POST", f"studies/{STUDY_ID}/transition/", "prolific_study_published.json",
                              body={"action": "PUBLISH"})
    published = prolific_platform.prolific_publish(publication=publication, confirm_production=True)
    assert (published.external_id, published.status) == (STUDY_ID, Publication.Status.PUBLISHED)


def test_prolific_publish_refuses_without_confirmation_code_or_reward_and_sends_nothing(prolific_transport, make_study):
    study = make_study("likert")
    publication = publishing.publication_configure(study=study, platform="prolific", settings={"places": 3})
    with pytest.raises(PublishRefused) as refused:
        prolific_platform.prolific_publish(publication=publication)
    text = str(refused.value)
    assert "no reward" in text and "no completion code" in text and "confirm it explicitly" in text
    assert prolific_transport.requests == [] and Publication.objects.get().status == Publication.Status.DRAFT


def test_prolific_draft_only_then_pause_and_stop(prolific_transport, publication):
    prolific_transport.expect("POST", "studies/", "prolific_study_created.json", status=201)
    publication = prolific_platform.prolific_publish(publication=publication, confirm_production=True, publish=False)
    assert publication.status == Publication.Status.UNPUBLISHED
    prolific_transport.expect("POST", f"studies/{STUDY_ID}/transition/", {"status": "PAUSED"}, body={"action": "PAUSE"})
    assert prolific_platform.prolific_transition(publication=publication, action="pause").status == Publication.Status.PAUSED
    prolific_transport.expect("POST", f"studies/{STUDY_ID}/transition/", {"status": "COMPLETED"}, body={"action": "STOP"})
    assert prolific_platform.prolific_transition(publication=publication, action="STOP").status == Publication.Status.STOPPED
    with pytest.raises(ValidationError):
        prolific_platform.prolific_transition(publication=publication, action="DELETE")


def test_prolific_bad_token_names_the_call_and_changes_nothing(prolific_transport, publication):
    prolific_transport.expect("POST", "studies/", "prolific_error_unauthorized.json", status=401)
    with pytest.raises(PlatformError) as failure:
        prolific_platform.prolific_publish(publication=publication, confirm_production=True)
    assert failure.value.call == "POST /studies/" and failure.value.code == "401"
    assert "Invalid token" in str(failure.value) and "PROLIFIC_TOKEN" in failure.value.hint
    publication.refresh_from_db()
    assert (publication.status, publication.external_id) == (Publication.Status.DRAFT, "")
    assert "POST /studies/ failed" in publication.last_error


def live(publication):
    Publication.objects.filter(pk=publication.pk).update(external_id=STUDY_ID, status=Publication.Status.PUBLISHED)
    publication.refresh_from_db()
    return publication


def test_prolific_sync_follows_pages_and_frees_returned_and_timed_out_places(prolific_transport, publication):
    publication = live(publication)
    study = publication.study
    done = prolific_participant(study, "5f00000000000000000000a1", "6560aaaa0000000000000001", finish=True)
    returned = prolific_participant(study, "5f00000000000000000000a2", "6560aaaa0000000000000002")
    timed_out = prolific_participant(study, "5f00000000000000000000a3", "6560aaaa0000000000000003")
    prolific_transport.expect("GET", f"studies/{STUDY_ID}/submissions/", "prolific_submissions_page1.json")
    prolific_transport.expect("GET", f"studies/{STUDY_ID}/submissions/?page=2", "prolific_submissions_page2.json")
    summary = prolific_platform.prolific_sync(publication=publication)
    assert (summary.seen, summary.linked, summary.abandoned) == (3, 3, 2)
    assert dict(WorkerAssignment.objects.values_list("worker_id", "state")) == {
        "5f00000000000000000000a1": "submitted", "5f00000000000000000000a2": "returned",
        "5f00000000000000000000a3": "timed_out"}
    assert WorkerAssignment.objects.get(external_id="6560aaaa0000000000000001").time_taken == 870
    statuses = dict(Assignment.objects.values_list("pk", "status"))
    assert (statuses[done.pk], statuses[returned.pk], statuses[timed_out.pk]) == ("submitted", "abandoned", "abandoned")


def records_submitted(publication, n=1):
    publication = live(publication)
    rows = []
    for i in range(1, n + 1):
        assignment = prolific_participant(publication.study, f"5f00000000000000000000a{i}",
                                          f"6560aaaa000000000000000{i}", finish=True)
        rows.append(WorkerAssignment.objects.create(
            publication=publication, assignment=assignment, external_id=f"6560aaaa000000000000000{i}",
            worker_id=assignment.rater.external_id, state="submitted", platform_status="AWAITING REVIEW"))
    return publication, rows


def test_prolific_approve_transitions_the_submission_then_concord(prolific_transport, publication):
    publication, rows = records_submitted(publication)
    prolific_transport.expect("POST", "submissions/6560aaaa0000000000000001/transition/",
                              "prolific_submission_approved.json", body={"action": "APPROVE"})
    outcome = reviews.assignments_review(publication=publication, records=rows, decision="approve")
    assert len(outcome.done) == 1 and Assignment.objects.get().status == "approved"


def test_prolific_reject_needs_a_category_and_a_long_message(prolific_transport, publication):
    publication, rows = records_submitted(publication)
    for category, message in (("", LONG_MESSAGE), ("LOW_EFFORT", "Too fast.")):
        with pytest.raises(ValidationError):
            reviews.assignments_review(publication=publication, records=rows, decision="reject",
                                        feedback=message, rejection_category=category)
    assert prolific_transport.requests == []
    prolific_transport.expect("POST", "submissions/6560aaaa0000000000000001/transition/",
                              "prolific_submission_rejected.json",
                              body={"action": "REJECT", "rejection_category": "LOW_EFFORT", "message": LONG_MESSAGE})
    reviews.assignments_review(publication=publication, records=rows, decision="reject", feedback=LONG_MESSAGE,
                                rejection_category="LOW_EFFORT")
    assert Assignment.objects.get().status == "rejected"
    assert prolific.rejection_problem("NOT_A_CATEGORY", LONG_MESSAGE).startswith("rejection_category must be")


def test_prolific_reject_refused_by_prolific_leaves_concord_unchanged(prolific_transport, publication):
    publication, rows = records_submitted(publication)
    prolific_transport.expect("POST", "submissions/6560aaaa0000000000000001/transition/",
                              "prolific_error_validation.json", status=400)
    outcome = reviews.assignments_review(publication=publication, records=rows, decision="reject",
                                          feedback=LONG_MESSAGE, rejection_category="FAILED_CHECK")
    assert "POST /submissions/6560aaaa0000000000000001/transition/ failed (400)" in outcome.failed[0][1]
    assert Assignment.objects.get().status == "submitted" and WorkerAssignment.objects.get().state == "submitted"


def test_prolific_bulk_bonus_is_set_up_then_paid_once(prolific_transport, publication):
    publication, rows = records_submitted(publication, n=2)
    bonuses = [crowd_bonuses.bonus_create(publication=publication, assignment=r.assignment, amount=amount, reason="Thanks")
               for r, amount in zip(rows, ("0.75", "1.25"), strict=True)]
    prolific_transport.expect("POST", "submissions/bonus-payments/", "prolific_bonus_created.json", status=201, body={
        "study_id": STUDY_ID, "csv_bonuses": "5f00000000000000000000a1,0.75\n5f00000000000000000000a2,1.25"})
    prolific_transport.expect("POST", "bulk-bonus-payments/6570bbbb0000000000000009/pay/", "prolific_bonus_paid.json",
                              status=202)
    crowd_bonuses.bonuses_send(bonuses=bonuses)
    assert set(Bonus.objects.values_list("status", "platform_ref")) == {("sent", "6570bbbb0000000000000009")}
    crowd_bonuses.bonuses_send(bonuses=Bonus.objects.all())  # already sent: no request


def test_prolific_bonus_whose_payment_failed_is_not_paid_again_blindly(prolific_transport, publication):
    publication, rows = records_submitted(publication)
    bonus = crowd_bonuses.bonus_create(publication=publication, assignment=rows[0].assignment, amount="1", reason="Thanks")
    prolific_transport.expect("POST", "submissions/bonus-payments/", "prolific_bonus_created.json", status=201)
    prolific_transport.expect("POST", "bulk-bonus-payments/6570bbbb0000000000000009/pay/", {"error": "timeout"},
                              status=504)
    prolific_transport.expect("POST", "bulk-bonus-payments/6570bbbb0000000000000009/pay/", {"error": "timeout"},
                              status=504)
    prolific_transport.expect("POST", "bulk-bonus-payments/6570bbbb0000000000000009/pay/", {"error": "timeout"},
                              status=504)
    with pytest.raises(PlatformError, match="bulk-bonus-payments"):
        crowd_bonuses.bonuses_send(bonuses=[bonus])
    bonus.refresh_from_db()
    assert (bonus.status, bonus.platform_ref) == (Bonus.Status.FAILED, "6570bbbb0000000000000009")
    with pytest.raises(PublishRefused, match="not idempotent"):
        crowd_bonuses.bonuses_send(bonuses=[bonus])


def test_prolific_without_a_token_says_where_to_set_it(settings, publication):
    settings.PROLIFIC_TOKEN = ""
    with pytest.raises(PlatformError, match="PROLIFIC_TOKEN"):
        prolific_platform.prolific_transition(publication=live(publication), action="PAUSE")


def test_prolific_decisions_taken_in_prolifics_app_are_mirrored(prolific_transport, publication):
    publication = live(publication)
    approved = prolific_participant(publication.study, "5f00000000000000000000a1", "6560aaaa0000000000000001", finish=True)
    rejected = prolific_participant(publication.study, "5f00000000000000000000a2", "6560aaaa0000000000000002", finish=True)
    prolific_transport.expect("GET", f"studies/{STUDY_ID}/submissions/", {"results": [
        {"id": "6560aaaa0000000000000001", "participant_id": "5f00000000000000000000a1", "status": "APPROVED",
         "started_at": "2026-11-20T09:05:00Z", "completed_at": "2026-11-20T09:19:30Z", "time_taken": 870},
        {"id": "6560aaaa0000000000000002", "participant_id": "5f00000000000000000000a2", "status": "REJECTED",
         "started_at": "2026-11-20T09:05:00Z", "completed_at": "2026-11-20T09:09:30Z", "time_taken": 270}],
        "_links": {"next": {"href": None}}})
    prolific_platform.prolific_sync(publication=publication)
    approved.refresh_from_db()
    rejected.refresh_from_db()
    assert (approved.status, rejected.status) == ("approved", "rejected")
    assert rejected.platform_data["review_reason"] == "rejected on Prolific"
