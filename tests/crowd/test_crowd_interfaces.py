"""The crowd app's interfaces: the study's Crowd page (owner only, every action answers with a
message, never a 500), the REST API (409 for refusals, 502 naming the failing call, documented in the
schema), the management commands, the review services in studies.rating.review, and the periodic task."""
from datetime import timedelta
from io import StringIO

import pytest
from botocore.stub import ANY
from django.core.management import CommandError, call_command
from django.utils import timezone
from rest_framework.test import APIClient

from crowd import publishing, tasks
from crowd.models import Hit, Publication, WorkerAssignment
from crowd.platforms import mturk as mturk_platform
from studies.models import Assignment, AssignmentItem, RaterBlock
from studies.rating import entry as rater_entry
from studies.rating import review
from tests.crowd.conftest import mturk_error, mturk_worker
from tests.crowd.test_mturk import SETTINGS, expect_publish
from tests.factories import UserFactory
from tests.problems import problem_fields

pytestmark = pytest.mark.django_db


@pytest.fixture
def researcher(client, user):
    client.force_login(user)
    return client


@pytest.fixture
def publication(make_study):
    return publishing.publication_configure(study=make_study("likert"), platform="mturk", sandbox=True, settings=SETTINGS)


def page(client, study):
    response = client.get(f"/studies/{study.slug}/crowd/")
    assert response.status_code == 200
    return response.content.decode()


def test_crowd_page_is_for_the_owner_and_linked_from_the_study(researcher, client, publication, other_user):
    study = publication.study
    assert f"/studies/{study.slug}/crowd/" in researcher.get(f"/studies/{study.slug}/").content.decode()
    text = page(researcher, study)
    assert "Estimated cost" in text and "4.00" in text
    study.experiment.collaborators.add(other_user)
    client.force_login(other_user)
    assert client.get(f"/studies/{study.slug}/crowd/").status_code == 404
    assert client.post(f"/studies/{study.slug}/crowd/sync/", {"publication": publication.pk}).status_code == 404


def test_crowd_page_actions_report_refusals_and_platform_errors_as_messages(researcher, mturk_stub, make_study):
    study = make_study("likert")
    url = f"/studies/{study.slug}/crowd/"
    researcher.post(url + "create/", {"target": "mturk"})
    publication = Publication.objects.get(study=study, sandbox=False)
    response = researcher.post(url + "configure/", {"publication": publication.pk, "reward": "lots"}, follow=True)
    assert "reward: not a valid number" in response.content.decode()
    researcher.post(url + "configure/", {"publication": publication.pk, "reward": "0.40", "hits": "1"})
    response = researcher.post(url + "publish/", {"publication": publication.pk}, follow=True)
    assert "confirm it explicitly" in response.content.decode() and Hit.objects.count() == 0
    mturk_error(mturk_stub, "get_account_balance", "RequestError", "The security token included in the request is invalid.")
    response = researcher.post(url + "balance/", {"publication": publication.pk}, follow=True)
    assert response.status_code == 200 and "GetAccountBalance failed" in response.content.decode()


def test_crowd_page_publishes_in_the_sandbox_and_shows_the_rater_dashboard(researcher, mturk_stub, publication):
    study = publication.study
    expect_publish(mturk_stub, publication)
    response = researcher.post(f"/studies/{study.slug}/crowd/publish/", {"publication": publication.pk}, follow=True)
    assert "Published as 2 HIT(s)" in response.content.decode()
    hit = Hit.objects.first().hit_id
    done = mturk_worker(study, "A1DONE", "3ASSIGN1", hit, finish=True)
    mturk_worker(study, "A2BUSY", "3ASSIGN2", hit)
    WorkerAssignment.objects.create(publication=publication, assignment=done, external_id="3ASSIGN1",
                                    worker_id="A1DONE", hit_id=hit, state="submitted", platform_status="Submitted")
    text = page(researcher, study)
    assert "1 working · 1 finished" in text and "1 waiting for review on the platform" in text
    assert text.count('data-testid="rater-row"') == 2
    assert "<td>submitted</td>\n      <td>Submitted</td>" in text and "<td>started</td>\n      <td>—</td>" in text


def api_for(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_crowd_api_is_for_owners_and_answers_refusals_and_platform_errors(user, other_user, mturk_stub, publication):
    api = api_for(user)
    study = publication.study
    assert api_for(other_user).get(f"/api/crowd/studies/{study.slug}/").status_code == 404
    body = api.get(f"/api/crowd/studies/{study.slug}/").json()
    assert body["publications"][0]["estimate"]["total"] == "4.00" and body["counts"]["working"] == 0
    bad = api.post(f"/api/crowd/studies/{study.slug}/publications/",
                   {"platform": "mturk", "sandbox": True, "settings": {"hits": -2}}, format="json")
    assert bad.status_code == 400 and "hits" in problem_fields(bad)
    mturk_error(mturk_stub, "get_account_balance", "RequestError",
                "This Requester has insufficient funds in their account to complete this transaction.")
    failed = api.post(f"/api/crowd/publications/{publication.pk}/publish/", {}, format="json")
    assert failed.status_code == 502 and failed.json()["call"] == "GetAccountBalance"
    staff = UserFactory(username="staff", is_staff=True)
    production = publishing.publication_configure(study=study, platform="mturk", sandbox=False, settings=SETTINGS)
    refused = api_for(staff).post(f"/api/crowd/publications/{production.pk}/publish/", {}, format="json")
    assert refused.status_code == 409 and "confirm it explicitly" in refused.json()["detail"]


def test_crowd_api_review_all_submitted(user, mturk_stub, publication):
    expect_publish(mturk_stub, publication)
    mturk_platform.mturk_publish(publication=publication)
    hit = Hit.objects.first().hit_id
    done = mturk_worker(publication.study, "A1DONE", "3ASSIGN1", hit, finish=True)
    WorkerAssignment.objects.create(publication=publication, assignment=done, external_id="3ASSIGN1",
                                    worker_id="A1DONE", hit_id=hit, state="submitted")
    mturk_stub.add_response("approve_assignment", {}, {"AssignmentId": "3ASSIGN1"})
    answer = api_for(user).post(f"/api/crowd/publications/{publication.pk}/review/",
                                {"decision": "approve", "all_submitted": True}, format="json")
    assert answer.status_code == 200 and len(answer.json()["done"]) == 1
    assert Assignment.objects.get().status == "approved"


def test_crowd_api_is_in_the_schema(user):
    schema = api_for(user).get("/api/schema/?format=json").content.decode()
    for path in ("/api/crowd/publications/{id}/publish/", "/api/crowd/publications/{id}/review/",
                 "/api/crowd/publications/{id}/bonuses/", "/api/crowd/studies/{slug}/"):
        assert path in schema


def test_crowd_publish_command_dry_run_shows_cost_and_refusals_and_sends_nothing(mturk_stub, make_study):
    study = make_study("likert", publish=False)
    out = StringIO()
    call_command("crowd_publish", study.slug, "--set", "reward=0.50", "--set", "hits=2", "--dry-run", stdout=out)
    text = out.getvalue()
    assert "estimated cost" in text and "would refuse: the study is draft" in text
    with pytest.raises(CommandError, match="reward: not a valid number"):
        call_command("crowd_publish", study.slug, "--set", "reward=free", stdout=StringIO())
    with pytest.raises(CommandError, match="no study"):
        call_command("crowd_publish", "nope", stdout=StringIO())


def test_crowd_publish_and_review_commands(mturk_stub, publication):
    mturk_stub.add_response("get_account_balance", {"AvailableBalance": "10000.00"}, {})  # shown before publishing
    expect_publish(mturk_stub, publication)
    out = StringIO()
    call_command("crowd_publish", publication.study.slug, stdout=out)
    assert "balance: $10000.00" in out.getvalue() and "published as 2 HIT(s)" in out.getvalue()
    hit = Hit.objects.first().hit_id
    done = mturk_worker(publication.study, "A1DONE", "3ASSIGN1", hit, finish=True)
    WorkerAssignment.objects.create(publication=publication, assignment=done, external_id="3ASSIGN1",
                                    worker_id="A1DONE", hit_id=hit, state="submitted")
    mturk_stub.add_response("approve_assignment", {}, {"AssignmentId": "3ASSIGN1"})
    call_command("crowd_review", publication.study.slug, "--approve-all-submitted", stdout=out)
    assert "approve: 1 done" in out.getvalue() and Assignment.objects.get().status == "approved"
    with pytest.raises(CommandError, match="sync first"):
        call_command("crowd_review", publication.study.slug, "--reject", "3UNKNOWN", "--feedback", "x")
    with pytest.raises(CommandError, match="no mturk publication"):
        call_command("crowd_review", publication.study.slug, "--production", "--list")


def test_review_services_move_statuses_and_free_items(make_study):
    study = make_study("likert")
    rater = rater_entry.rater_get_or_create(platform="invite", external_id="r1")
    assignment = rater_entry.assignment_start(study=study, rater=rater)
    with pytest.raises(review.ReviewError, match="only a submitted one"):
        review.assignment_approve(assignment=assignment)
    with pytest.raises(review.ReviewError, match="needs a reason"):
        review.assignment_reject(assignment=assignment, reason="")
    assert review.assignment_abandon(assignment=assignment, reason="returned").status == "abandoned"
    assert review.assignment_abandon(assignment=assignment, reason="again").platform_data["abandon_reason"] == "returned"
    taken = set(AssignmentItem.objects.filter(assignment=assignment).values_list("item", flat=True))
    other = rater_entry.assignment_start(study=study, rater=rater_entry.rater_get_or_create(
        platform="invite", external_id="r2"))
    assert set(other.assignment_items.values_list("item", flat=True)) == taken


def test_stale_assignments_expire_only_past_their_study_time_limit(make_study):
    limited, open_ended = make_study("likert"), make_study("bws")
    limited.platform_config = {"time_limit_minutes": 30}
    limited.save()
    starts = {}
    for study in (limited, open_ended):
        # the old one last: a later start would already abandon it on access (services._assignment_create)
        for name, age in (("new", 5), ("old", 45)):
            rater = rater_entry.rater_get_or_create(platform="invite", external_id=f"{study.pk}-{name}")
            assignment = rater_entry.assignment_start(study=study, rater=rater)
            Assignment.objects.filter(pk=assignment.pk).update(started_at=timezone.now() - timedelta(minutes=age))
            starts[(study.design, name)] = assignment.pk
    assert review.assignments_expire_stale() == 1
    statuses = dict(Assignment.objects.values_list("pk", "status"))
    assert statuses[starts[("likert", "old")]] == "abandoned"
    assert {statuses[starts[k]] for k in (("likert", "new"), ("bws", "old"), ("bws", "new"))} == {"started"}


def test_periodic_crowd_sync_expires_then_syncs_live_publications(settings, mturk_stub, publication):
    assert settings.CELERY_BEAT_SCHEDULE["crowd-sync"]["task"] == tasks.crowd_sync_all.name
    expect_publish(mturk_stub, publication)
    mturk_platform.mturk_publish(publication=publication)
    for hit in Hit.objects.all():
        mturk_error(mturk_stub, "get_hit", "RequestError", f"Hit {hit.hit_id} does not exist. (1574288211553)")
    result = tasks.crowd_sync_all()
    assert result == {"expired": 0, "synced": 1, "failed": 0}
    assert set(Hit.objects.values_list("hit_status", flat=True)) == {"Gone"}


def test_crowd_page_rejects_the_ticked_assignments_with_feedback(researcher, mturk_stub, publication):
    expect_publish(mturk_stub, publication)
    mturk_platform.mturk_publish(publication=publication)
    hit = Hit.objects.first().hit_id
    records = []
    for worker in ("A1", "A2", "A3"):
        done = mturk_worker(publication.study, worker, f"3ASSIGN{worker}", hit, finish=True)
        records.append(WorkerAssignment.objects.create(publication=publication, assignment=done, hit_id=hit,
                                                       external_id=f"3ASSIGN{worker}", worker_id=worker, state="submitted"))
    url = f"/studies/{publication.study.slug}/crowd/review/"
    ticked = {"publication": publication.pk, "decision": "reject", "record": [records[0].pk, records[2].pk]}
    response = researcher.post(url, {**ticked, "feedback": ""}, follow=True)
    assert "needs feedback" in response.content.decode()
    for worker in ("A1", "A3"):
        mturk_stub.add_response("reject_assignment", {}, {"AssignmentId": f"3ASSIGN{worker}",
                                                          "RequesterFeedback": "Identical answers throughout."})
    response = researcher.post(url, {**ticked, "feedback": "Identical answers throughout."}, follow=True)
    assert "Review: 2 done" in response.content.decode()
    assert dict(Assignment.objects.values_list("rater__external_id", "status")) == {
        "A1": "rejected", "A2": "submitted", "A3": "rejected"}


def test_crowd_api_bonus_and_block(user, mturk_stub, publication):
    expect_publish(mturk_stub, publication)
    mturk_platform.mturk_publish(publication=publication)
    done = mturk_worker(publication.study, "A1DONE", "3ASSIGN1", Hit.objects.first().hit_id, finish=True)
    api = api_for(user)
    bad = api.post(f"/api/crowd/publications/{publication.pk}/bonuses/",
                   {"assignment": done.pk, "amount": "0.00", "reason": "x"}, format="json")
    assert bad.status_code == 400 and "amount" in problem_fields(bad)
    mturk_stub.add_response("send_bonus", {}, {"WorkerId": "A1DONE", "BonusAmount": "1.50", "AssignmentId": "3ASSIGN1",
                                               "Reason": "Thorough", "UniqueRequestToken": ANY})
    sent = api.post(f"/api/crowd/publications/{publication.pk}/bonuses/",
                    {"assignment": done.pk, "amount": "1.50", "reason": "Thorough"}, format="json")
    assert sent.status_code == 201 and sent.json()["status"] == "sent"
    assert sent.json()["token"] == f"concord-bonus-{sent.json()['id']}"
    blocked = api.post(f"/api/crowd/publications/{publication.pk}/workers/block/",
                       {"worker_id": "A1DONE", "reason": "Bot-like"}, format="json")
    # the researcher's block, not the shared rater record and not MTurk's account-wide block
    assert blocked.status_code == 200 and RaterBlock.objects.get(rater_id=done.rater_id, owner=user).active
    assert not done.rater.__class__.objects.get(pk=done.rater_id).blocked
