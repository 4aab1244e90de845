"""Mechanical Turk through botocore's Stubber: publishing (ExternalQuestion, qualifications, cost and
balance, refusals), throttling retried with backoff, errors that name the call and change nothing,
sync and reconciliation, review, idempotent bonuses, blocks, notifications, HIT changes."""
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from botocore.stub import ANY
from django.core.exceptions import ValidationError
from django.utils import timezone

from crowd import bonuses as crowd_bonuses
from crowd import costs, publishing, reviews
from crowd import workers as crowd_workers
from crowd.clients import mturk
from crowd.errors import PlatformError, PublishRefused
from crowd.models import Bonus, Hit, Publication, QualificationGrant, QualificationType, WorkerAssignment
from crowd.platforms import mturk as mturk_platform
from crowd.platforms.base import DEFAULT_TITLE
from studies.authoring import services as authoring
from studies.errors import AssignmentRefused
from studies.models import Assignment, AssignmentItem, Rater, Study
from studies.rating import entry as rater_entry
from tests.crowd.conftest import (
    PUBLIC_URL,
    hit_response,
    mturk_assignment,
    mturk_error,
    mturk_worker,
)

pytestmark = pytest.mark.django_db

SETTINGS = {"reward": "0.80", "hits": 2, "assignments_per_hit": 2, "lifetime_hours": 48, "duration_minutes": 45,
            "auto_approve_days": 2, "masters": True, "min_approval_rate": 97, "min_approved": 500,
            "locales": "US, GB"}


@pytest.fixture
def publication(make_study):
    study = make_study("likert", raters_per_item=4)  # room for four raters, then full
    return publishing.publication_configure(study=study, platform="mturk", sandbox=True, settings=SETTINGS)


def expect_publish(stub, publication, *, hits=("3HITAAAAAAAAAAAAAAAAAAAAAAAAAA", "3HITBBBBBBBBBBBBBBBBBBBBBBBBBB")):
    stub.add_response("get_account_balance", {"AvailableBalance": "10000.00", "OnHoldBalance": "0.00"}, {})
    stub.add_response("create_qualification_type", {"QualificationType": {
        "QualificationTypeId": "3QUALEXPERIMENT000000000000000", "Name": "x", "QualificationTypeStatus": "Active"}},
        {"Name": ANY, "Description": ANY, "QualificationTypeStatus": "Active", "Keywords": "concord"})
    stub.add_response("create_hit_type", {"HITTypeId": "3HYRJBZ4ZBHTYPEEXAMPLE0"}, {
        "Title": DEFAULT_TITLE, "Description": ANY, "Reward": "0.80", "AssignmentDurationInSeconds": 2700,
        "AutoApprovalDelayInSeconds": 172800, "Keywords": ANY, "QualificationRequirements": [
            {"QualificationTypeId": mturk.MASTERS[True], "Comparator": "Exists", "ActionsGuarded": "DiscoverPreviewAndAccept"},
            {"QualificationTypeId": mturk.PERCENT_APPROVED, "Comparator": "GreaterThanOrEqualTo", "IntegerValues": [97],
             "ActionsGuarded": "DiscoverPreviewAndAccept"},
            {"QualificationTypeId": mturk.NUMBER_APPROVED, "Comparator": "GreaterThanOrEqualTo", "IntegerValues": [500],
             "ActionsGuarded": "DiscoverPreviewAndAccept"},
            {"QualificationTypeId": mturk.LOCALE, "Comparator": "In", "LocaleValues": [{"Country": "US"}, {"Country": "GB"}],
             "ActionsGuarded": "DiscoverPreviewAndAccept"},
            {"QualificationTypeId": "3QUALEXPERIMENT000000000000000", "Comparator": "DoesNotExist",
             "ActionsGuarded": "DiscoverPreviewAndAccept"}]})
    for index, hit_id in enumerate(hits):
        stub.add_response("create_hit_with_hit_type", {"HIT": {
            "HITId": hit_id, "HITTypeId": "3HYRJBZ4ZBHTYPEEXAMPLE0", "MaxAssignments": 2, "HITStatus": "Assignable",
            "Expiration": datetime(2026, 11, 25, 12, 0, tzinfo=UTC)}}, {
            "HITTypeId": "3HYRJBZ4ZBHTYPEEXAMPLE0", "MaxAssignments": 2, "LifetimeInSeconds": 172800,
            "Question": mturk.external_question(f"{PUBLIC_URL}/r/c/{publication.study.rater_key}/"),
            "RequesterAnnotation": f"concord:{publication.study.slug}",
            "UniqueRequestToken": f"concord-{publication.pk}-hit-{index}"})


def test_mturk_publish_creates_hits_with_an_external_question_and_qualifications(mturk_stub, publication):
    expect_publish(mturk_stub, publication)
    published = mturk_platform.mturk_publish(publication=publication)
    assert published.status == Publication.Status.PUBLISHED and published.external_id == "3HYRJBZ4ZBHTYPEEXAMPLE0"
    assert list(published.hits.values_list("hit_id", "max_assignments")) == [
        ("3HITAAAAAAAAAAAAAAAAAAAAAAAAAA", 2), ("3HITBBBBBBBBBBBBBBBBBBBBBBBBBB", 2)]
    assert QualificationType.objects.get().qualification_type_id == "3QUALEXPERIMENT000000000000000"


def test_mturk_external_question_escapes_the_url_and_sets_the_frame_height():
    xml = mturk.external_question("https://x.org/r/s/?a=1&b=2", 800)
    assert "<ExternalURL>https://x.org/r/s/?a=1&amp;b=2</ExternalURL><FrameHeight>800</FrameHeight>" in xml
    assert xml.startswith('<ExternalQuestion xmlns="http://mechanicalturk.amazonaws.com/')


def test_mturk_production_uses_the_production_masters_id_and_needs_confirmation(mturk_stub, make_study):
    study = make_study("likert")
    publication = publishing.publication_configure(study=study, platform="mturk", sandbox=False, settings=SETTINGS)
    requirements = mturk.qualification_requirements(publishing.effective_settings(publication), sandbox=False)
    assert requirements[0]["QualificationTypeId"] == "2F1QJWKUDD8XADTFD2Q0G6UTO95ALH" != mturk.MASTERS[True]
    with pytest.raises(PublishRefused, match="production MTurk.*confirm it explicitly.*nothing was sent"):
        mturk_platform.mturk_publish(publication=publication)  # the stubber has no response queued: any call would fail
    assert Hit.objects.count() == 0


def test_mturk_refuses_a_draft_study_without_items_or_reward_and_sends_nothing(mturk_stub, user):
    experiment = authoring.experiment_create(owner=user, title="Empty")
    study = authoring.study_create(experiment=experiment, title="Empty", design="likert")
    publication = publishing.publication_configure(study=study, platform="mturk", sandbox=True)
    with pytest.raises(PublishRefused) as refused:
        mturk_platform.mturk_publish(publication=publication)
    message = str(refused.value)
    assert "draft: publish it in Concord first" in message and "no items" in message and "no reward" in message
    assert (Hit.objects.count(), QualificationType.objects.count()) == (0, 0)


def test_mturk_refuses_when_the_balance_is_below_the_estimate(mturk_stub, publication):
    mturk_stub.add_response("get_account_balance", {"AvailableBalance": "1.00"}, {})
    with pytest.raises(PublishRefused, match=r"balance \$1.00 is below the estimated cost \$4.00"):
        mturk_platform.mturk_publish(publication=publication)
    assert Hit.objects.count() == 0 and Publication.objects.get().status == Publication.Status.DRAFT


def test_mturk_insufficient_funds_names_the_call_and_leaves_concord_unchanged(mturk_stub, publication):
    mturk_stub.add_response("get_account_balance", {"AvailableBalance": "10000.00"}, {})
    mturk_stub.add_response("create_qualification_type", {"QualificationType": {"QualificationTypeId": "3Q"}})
    mturk_stub.add_response("create_hit_type", {"HITTypeId": "3HT"})
    mturk_error(mturk_stub, "create_hit_with_hit_type", "RequestError",
                "This Requester has insufficient funds in their account to complete this transaction. Please visit "
                "https://requester.mturk.com/account to purchase Prepaid HITs. (1574288211553)")
    with pytest.raises(PlatformError) as failure:
        mturk_platform.mturk_publish(publication=publication)
    assert failure.value.call == "CreateHITWithHITType" and failure.value.code == "RequestError"
    assert "insufficient funds" in str(failure.value) and "prepaid funds" in failure.value.hint
    publication.refresh_from_db()
    assert publication.status == Publication.Status.DRAFT and Hit.objects.count() == 0
    assert "CreateHITWithHITType failed" in publication.last_error
    assert Study.objects.get().status == Study.Status.PUBLISHED


def test_mturk_bad_credentials_name_the_call_and_say_what_to_check(mturk_stub, publication):
    mturk_error(mturk_stub, "get_account_balance", "RequestError",
                "The security token included in the request is invalid. (1574288211553)", status=400)
    with pytest.raises(PlatformError) as failure:
        mturk_platform.mturk_balance(publication=publication)
    assert failure.value.call == "GetAccountBalance" and "AWS credentials" in str(failure.value)


def test_mturk_throttling_is_retried_with_exponential_backoff(mturk_stub, publication, sleeps):
    mturk_error(mturk_stub, "get_account_balance", "ThrottlingException", "Rate exceeded")
    mturk_error(mturk_stub, "get_account_balance", "ServiceUnavailable", "Service busy", status=503)
    mturk_error(mturk_stub, "get_account_balance", "ThrottlingException", "Rate exceeded")
    mturk_stub.add_response("get_account_balance", {"AvailableBalance": "42.50"}, {})
    assert mturk_platform.mturk_balance(publication=publication) == Decimal("42.50")
    assert len(sleeps) == 3 and sleeps[0] < sleeps[1] < sleeps[2]
    assert sleeps[0] >= mturk.BASE_DELAY and sleeps[2] >= 4 * mturk.BASE_DELAY


def test_mturk_throttling_gives_up_after_the_last_attempt(mturk_stub, publication, sleeps):
    for _ in range(mturk.MAX_ATTEMPTS):
        mturk_error(mturk_stub, "get_account_balance", "ThrottlingException", "Rate exceeded")
    with pytest.raises(PlatformError, match="GetAccountBalance failed \\(ThrottlingException\\)"):
        mturk_platform.mturk_balance(publication=publication)
    assert len(sleeps) == mturk.MAX_ATTEMPTS - 1


@pytest.mark.parametrize(("reward", "per_hit", "masters", "fee"), [
    ("0.50", 9, False, "0.10"), ("0.50", 10, False, "0.20"), ("0.03", 9, False, "0.01"), ("1.00", 5, True, "0.25")])
def test_mturk_cost_estimate_applies_the_fee_schedule(reward, per_hit, masters, fee):
    estimate = costs.mturk_estimate(reward=reward, hits=3, assignments_per_hit=per_hit, bonuses="10", masters=masters)
    places = 3 * per_hit
    assert estimate.fee_per_place == Decimal(fee)
    assert estimate.total == Decimal(reward) * places + Decimal(fee) * places + Decimal("10") + Decimal("2.00")
    assert any("9 or fewer" in note for note in estimate.notes) == (per_hit >= 10)


def published(mturk_stub, publication):
    expect_publish(mturk_stub, publication)
    return mturk_platform.mturk_publish(publication=publication)


def test_mturk_sync_reads_every_page_reconciles_and_abandons_gone_assignments(mturk_stub, publication):
    publication = published(mturk_stub, publication)
    hit_a, hit_b = "3HITAAAAAAAAAAAAAAAAAAAAAAAAAA", "3HITBBBBBBBBBBBBBBBBBBBBBBBBBB"
    done = mturk_worker(publication.study, "A1WORKERDONE", "3ASSIGNDONE000000000000000000", hit_a, finish=True)
    stale = mturk_worker(publication.study, "A2WORKERGONE", "3ASSIGNGONE000000000000000000", hit_a)
    Assignment.objects.filter(pk=stale.pk).update(started_at=timezone.now() - timedelta(minutes=55))
    working = mturk_worker(publication.study, "A3WORKERBUSY", "3ASSIGNBUSY000000000000000000", hit_b)
    auto = mturk_worker(publication.study, "A5AUTOAPPROVED", "3ASSIGNAUTO000000000000000000", hit_b, finish=True)
    mturk_stub.add_response("get_hit", hit_response(hit_a), {"HITId": hit_a})
    mturk_stub.add_response("list_assignments_for_hit", {
        "NextToken": "page-2", "NumResults": 1,
        "Assignments": [mturk_assignment("3ASSIGNDONE000000000000000000", "A1WORKERDONE", hit_a)]},
        {"HITId": hit_a, "MaxResults": 100, "AssignmentStatuses": ["Submitted", "Approved", "Rejected"]})
    mturk_stub.add_response("list_assignments_for_hit", {
        "NumResults": 1, "Assignments": [mturk_assignment("3ASSIGNOTHER00000000000000000", "A9STRANGER", hit_a)]},
        {"HITId": hit_a, "MaxResults": 100, "AssignmentStatuses": ["Submitted", "Approved", "Rejected"],
         "NextToken": "page-2"})
    mturk_stub.add_response("get_hit", hit_response(hit_b), {"HITId": hit_b})
    mturk_stub.add_response("list_assignments_for_hit", {"NumResults": 1, "Assignments": [
        mturk_assignment("3ASSIGNAUTO000000000000000000", "A5AUTOAPPROVED", hit_b, status="Approved")]})
    for worker in ("A1WORKERDONE", "A2WORKERGONE", "A3WORKERBUSY", "A5AUTOAPPROVED", "A9STRANGER"):
        mturk_stub.add_response("associate_qualification_with_worker", {}, {
            "QualificationTypeId": "3QUALEXPERIMENT000000000000000", "WorkerId": worker, "IntegerValue": 1,
            "SendNotification": False})

    summary = mturk_platform.mturk_sync(publication=publication)

    assert (summary.seen, summary.linked, summary.abandoned, summary.granted) == (3, 2, 1, 5)
    states = dict(WorkerAssignment.objects.values_list("external_id", "state"))
    assert states == {"3ASSIGNDONE000000000000000000": "submitted", "3ASSIGNOTHER00000000000000000": "submitted",
                      "3ASSIGNGONE000000000000000000": "abandoned", "3ASSIGNBUSY000000000000000000": "active",
                      "3ASSIGNAUTO000000000000000000": "approved"}
    auto.refresh_from_db()
    assert auto.status == Assignment.Status.APPROVED  # MTurk's auto-approval is mirrored
    assert WorkerAssignment.objects.get(external_id="3ASSIGNDONE000000000000000000").assignment_id == done.pk
    assert WorkerAssignment.objects.get(external_id="3ASSIGNDONE000000000000000000").time_taken == 720
    stale.refresh_from_db()
    working.refresh_from_db()
    assert stale.status == Assignment.Status.ABANDONED and working.status == Assignment.Status.STARTED
    assert QualificationGrant.objects.count() == 5
    # the abandoned assignment's items are back in the pool: a new rater gets them
    newcomer = mturk_worker(publication.study, "A4NEW", "3ASSIGNNEW0000000000000000000", hit_b)
    assert set(newcomer.assignment_items.values_list("item", flat=True)) == set(
        AssignmentItem.objects.filter(assignment=stale).values_list("item", flat=True))


def test_mturk_sync_abandons_the_assignments_of_a_hit_that_no_longer_exists(mturk_stub, publication):
    publication = published(mturk_stub, publication)
    hit_a, hit_b = publication.hits.values_list("hit_id", flat=True)
    orphan = mturk_worker(publication.study, "A2WORKER", "3ASSIGNORPHAN0000000000000000", hit_a)
    mturk_error(mturk_stub, "get_hit", "RequestError", f"Hit {hit_a} does not exist. (1574288211553)")
    mturk_stub.add_response("get_hit", hit_response(hit_b), {"HITId": hit_b})
    mturk_stub.add_response("list_assignments_for_hit", {"NumResults": 0, "Assignments": []})
    mturk_stub.add_response("associate_qualification_with_worker", {})
    summary = mturk_platform.mturk_sync(publication=publication)
    orphan.refresh_from_db()
    assert orphan.status == Assignment.Status.ABANDONED and "no longer exists" in summary.problems[0]
    assert Hit.objects.get(hit_id=hit_a).hit_status == "Gone"


def synced_submitted(mturk_stub, publication, workers=("A1", "A2")):
    """Published, with finished Concord assignments whose MTurk assignments are Submitted."""
    publication = published(mturk_stub, publication)
    hit = publication.hits.first().hit_id
    rows = [mturk_worker(publication.study, w, f"3ASSIGN{w}", hit, finish=True) for w in workers]
    for record in rows:
        WorkerAssignment.objects.create(publication=publication, assignment=record, external_id=f"3ASSIGN{record.rater.external_id}",
                                        worker_id=record.rater.external_id, hit_id=hit, state="submitted")
    return publication, rows


def test_mturk_approve_all_submitted_approves_on_mturk_then_in_concord(mturk_stub, publication):
    publication, rows = synced_submitted(mturk_stub, publication)
    for worker in ("A1", "A2"):
        mturk_stub.add_response("approve_assignment", {}, {"AssignmentId": f"3ASSIGN{worker}"})
    outcome = reviews.assignments_review(publication=publication, records=reviews.submitted_records(publication),
                                          decision="approve")
    assert len(outcome.done) == 2 and not outcome.failed
    assert set(Assignment.objects.values_list("status", flat=True)) == {"approved"}
    assert set(WorkerAssignment.objects.values_list("state", flat=True)) == {"approved"}


def test_mturk_reject_needs_feedback_and_a_failing_call_changes_nothing(mturk_stub, publication):
    publication, rows = synced_submitted(mturk_stub, publication)
    records = reviews.submitted_records(publication)
    with pytest.raises(ValidationError, match="needs feedback"):
        reviews.assignments_review(publication=publication, records=records, decision="reject", feedback=" ")
    mturk_error(mturk_stub, "reject_assignment", "RequestError",
                "This operation can be called with a status of: Submitted (1574288211553)",
                expected_params={"AssignmentId": "3ASSIGNA1", "RequesterFeedback": "Every answer was the same."})
    mturk_stub.add_response("reject_assignment", {}, {"AssignmentId": "3ASSIGNA2",
                                                      "RequesterFeedback": "Every answer was the same."})
    outcome = reviews.assignments_review(publication=publication, records=records, decision="reject",
                                          feedback="Every answer was the same.")
    assert [r.external_id for r in outcome.done] == ["3ASSIGNA2"]
    assert "RejectAssignment failed" in outcome.failed[0][1]
    assert dict(Assignment.objects.values_list("rater__external_id", "status")) == {"A1": "submitted", "A2": "rejected"}
    assert WorkerAssignment.objects.get(external_id="3ASSIGNA1").state == "submitted"


def test_mturk_bonus_is_stored_first_and_a_retry_pays_once(mturk_stub, publication):
    publication, rows = synced_submitted(mturk_stub, publication, workers=("A1",))
    bonus = crowd_bonuses.bonus_create(publication=publication, assignment=rows[0], amount="0.50", reason="Careful work")
    expected = {"WorkerId": "A1", "BonusAmount": "0.50", "AssignmentId": "3ASSIGNA1", "Reason": "Careful work",
                "UniqueRequestToken": f"concord-bonus-{bonus.pk}"}
    mturk_error(mturk_stub, "send_bonus", "ServiceFault", "We encountered an unexpected error.", status=500,
                expected_params=expected)
    with pytest.raises(PlatformError, match="SendBonus failed"):
        crowd_bonuses.bonuses_send(bonuses=[bonus])
    bonus.refresh_from_db()
    assert bonus.status == Bonus.Status.FAILED
    # the first attempt had in fact paid: MTurk refuses the repeated token, which counts as sent
    mturk_error(mturk_stub, "send_bonus", "RequestError",
                "The value of UniqueRequestToken has already been used for a request. (1574288211553)",
                expected_params=expected)
    crowd_bonuses.bonuses_send(bonuses=[bonus])
    bonus.refresh_from_db()
    assert bonus.status == Bonus.Status.SENT
    crowd_bonuses.bonuses_send(bonuses=[bonus])  # sent: no call (the stubber has nothing queued)


def test_mturk_bonus_input_is_checked(publication, make_study):
    study = publication.study
    rater = rater_entry.rater_get_or_create(platform="mturk", external_id="A1")
    assignment = rater_entry.assignment_start(study=study, rater=rater, platform_data={})
    with pytest.raises(ValidationError) as error:
        crowd_bonuses.bonus_create(publication=publication, assignment=assignment, amount="-1", reason="")
    assert set(error.value.message_dict) == {"amount", "reason", "assignment"}
    assert Bonus.objects.count() == 0


def test_mturk_block_and_unblock_a_worker_with_a_reason(mturk_stub, publication, make_study):
    """A block is the researcher's: no account-wide MTurk block (the Stubber has no
    call queued), the worker is refused in the owner's studies, the shared rater record is untouched."""
    rater = mturk_worker(publication.study, "A7SPAM", "3ASSIGNSPAM000000000000000000", "3HITAAAAAAAAAAAAAAAAAAAAAAAAAA").rater
    block = crowd_workers.worker_block(publication=publication, worker_id="A7SPAM", reason="Random answers")
    rater.refresh_from_db()
    assert block.active and block.reason == "Random answers" and not rater.blocked
    later = make_study("bws")
    with pytest.raises(AssignmentRefused):
        rater_entry.assignment_start(study=later, rater=rater)
    block = crowd_workers.worker_unblock(publication=publication, worker_id="A7SPAM", reason="Appeal accepted")
    assert not block.active and not Rater.objects.get(pk=rater.pk).blocked
    assert rater_entry.assignment_start(study=later, rater=rater).status == Assignment.Status.STARTED


def test_mturk_notify_sends_at_most_100_workers_per_call(mturk_stub, publication):
    workers = [f"A{i:03d}" for i in range(150)]
    mturk_stub.add_response("notify_workers", {"NotifyWorkersFailureStatuses": []},
                            {"Subject": "New HITs", "MessageText": "Hello", "WorkerIds": workers[:100]})
    mturk_stub.add_response("notify_workers", {"NotifyWorkersFailureStatuses": [
        {"NotifyWorkersFailureCode": "HardFailure", "NotifyWorkersFailureMessage": "blocked", "WorkerId": "A120"}]},
        {"Subject": "New HITs", "MessageText": "Hello", "WorkerIds": workers[100:]})
    for n, worker in enumerate(workers):  # notifications reach the publication's own workers only (M2)
        WorkerAssignment.objects.create(publication=publication, external_id=f"3ASSIGN{n:03d}", worker_id=worker)
    failures = crowd_workers.workers_notify(publication=publication, worker_ids=workers, subject="New HITs",
                                            message="Hello")
    assert [f["WorkerId"] for f in failures] == ["A120"]


def test_mturk_extend_and_expire_hits_and_a_missing_hit_is_named(mturk_stub, publication):
    publication = published(mturk_stub, publication)
    hit = publication.hits.first()
    mturk_stub.add_response("update_expiration_for_hit", {}, {"HITId": hit.hit_id, "ExpireAt": ANY})
    mturk_stub.add_response("create_additional_assignments_for_hit", {}, {
        "HITId": hit.hit_id, "NumberOfAdditionalAssignments": 3, "UniqueRequestToken": f"concord-hit-{hit.pk}-add-2"})
    assert mturk_platform.hit_extend(hit=hit, hours=24, additional_assignments=3).max_assignments == 5
    mturk_error(mturk_stub, "update_expiration_for_hit", "RequestError",
                f"Hit {hit.hit_id} does not exist. (1574288211553)")
    with pytest.raises(PlatformError) as failure:
        mturk_platform.hit_extend(hit=hit, hours=1)
    assert failure.value.call == "UpdateExpirationForHIT" and "HIT is gone" in failure.value.hint
    assert Hit.objects.get(pk=hit.pk).max_assignments == 5
    for other in publication.hits.all():
        mturk_stub.add_response("update_expiration_for_hit", {}, {
            "HITId": other.hit_id, "ExpireAt": datetime(2015, 1, 1, tzinfo=UTC)})
    assert mturk_platform.hits_expire(publication=publication) == 2
    assert Publication.objects.get().status == Publication.Status.STOPPED


def test_mturk_settings_are_checked_and_named(publication):
    with pytest.raises(ValidationError) as error:
        publishing.publication_configure(study=publication.study, platform="mturk", sandbox=True,
                                       settings={"reward": "abc", "hits": 0, "min_approval_rate": 120, "colour": "red"})
    assert set(error.value.message_dict) == {"reward", "hits", "min_approval_rate", "colour"}
    assert Publication.objects.get().study.reward == Decimal("0.80")  # the study holds the reward (studies.authoring.planning)


def test_mturk_workers_who_start_a_condition_get_the_experiment_qualification_within_a_minute(mturk_stub, publication):
    """The beat's one-minute task grants the qualification to new starters only (not on the next full sync)."""
    from crowd import tasks

    publication = published(mturk_stub, publication)
    mturk_worker(publication.study, "A1NEWSTARTER", "3ASSIGNNEW0000000000000000000", "3HITAAAAAAAAAAAAAAAAAAAAAAAAAA")
    mturk_stub.add_response("associate_qualification_with_worker", {}, {
        "QualificationTypeId": "3QUALEXPERIMENT000000000000000", "WorkerId": "A1NEWSTARTER", "IntegerValue": 1,
        "SendNotification": False})
    assert tasks.crowd_qualifications_grant() == 1
    assert QualificationGrant.objects.filter(worker_id="A1NEWSTARTER").count() == 1
    assert tasks.crowd_qualifications_grant() == 0  # granted once: no second call (the Stubber has none queued)
    mturk_stub.assert_no_pending_responses()
