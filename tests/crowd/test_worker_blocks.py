"""Blocks and notifications reach only the workers of the caller's own publication, and a block
keeps the worker out of the blocking researcher's studies only: the worker is refused
in every study of the researcher who blocked them, other researchers' studies still take them, the
shared rater record is not touched, and nothing goes to the platform's account-wide block list."""
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from crowd import publishing
from crowd import workers as crowd_workers
from crowd.platforms import prolific as prolific_platform
from studies.authoring import services as authoring
from studies.errors import AssignmentRefused
from studies.models import Assignment, Rater
from studies.rating import entry as rater_entry
from tests.crowd.conftest import mturk_worker, prolific_participant
from tests.crowd.test_mturk import SETTINGS
from tests.problems import problem_fields

pytestmark = pytest.mark.django_db

HIT = "3HITAAAAAAAAAAAAAAAAAAAAAAAAAA"


def api_for(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def publication(make_study):
    study = make_study("likert", platform="mturk", raters_per_item=4)
    return publishing.publication_configure(study=study, platform="mturk", sandbox=True, settings=SETTINGS)


@pytest.fixture
def worker(publication):
    """A worker who took an assignment through the publication."""
    return mturk_worker(publication.study, "A1WORKEDHERE", "3ASSIGNWORKED0000000000000000", HIT).rater


def enter(study, worker_id, n):
    return rater_entry.assignment_enter(study=study, platform="mturk", external_id=worker_id,
                                        acceptance_id=f"3ASSIGNENTRY{n:018d}",
                                        platform_data={"assignmentId": f"3ASSIGNENTRY{n:018d}", "hitId": HIT})


def test_blocking_a_worker_who_never_worked_for_the_publication_is_a_400_naming_them(user, mturk_stub, publication,
                                                                                   worker):
    stranger = Rater.objects.create(platform="mturk", external_id="A9STRANGER")
    answer = api_for(user).post(f"/api/crowd/publications/{publication.pk}/workers/block/",
                                {"worker_id": "A9STRANGER", "reason": "Spam"}, format="json")
    assert answer.status_code == 400 and "A9STRANGER" in problem_fields(answer)["worker_id"][0]
    unblock = api_for(user).post(f"/api/crowd/publications/{publication.pk}/workers/block/",
                                 {"worker_id": "A9STRANGER", "reason": "x", "unblock": True}, format="json")
    assert unblock.status_code == 400 and "A9STRANGER" in problem_fields(unblock)["worker_id"][0]
    stranger.refresh_from_db()
    assert not stranger.blocked  # nothing changed (and no MTurk call: the Stubber has none queued)


def test_notifying_workers_outside_the_publication_is_a_400_naming_them(user, mturk_stub, publication, worker):
    answer = api_for(user).post(f"/api/crowd/publications/{publication.pk}/workers/notify/", {
        "worker_ids": ["A1WORKEDHERE", "A9STRANGER", "A8OTHER"], "subject": "Hi", "message": "Hello"}, format="json")
    assert answer.status_code == 400
    assert "A8OTHER, A9STRANGER" in problem_fields(answer)["worker_ids"][0]
    assert "A1WORKEDHERE" not in problem_fields(answer)["worker_ids"][0]
    mturk_stub.add_response("notify_workers", {"NotifyWorkersFailureStatuses": []},
                            {"Subject": "Hi", "MessageText": "Hello", "WorkerIds": ["A1WORKEDHERE"]})
    sent = api_for(user).post(f"/api/crowd/publications/{publication.pk}/workers/notify/", {
        "worker_ids": ["A1WORKEDHERE"], "subject": "Hi", "message": "Hello"}, format="json")
    assert sent.status_code == 200 and sent.json() == {"failures": []}


def test_a_block_keeps_the_worker_out_of_the_blocking_researchers_studies_only(user, other_user, mturk_stub,
                                                                              make_study, publication, worker):
    mine = make_study("bws", platform="mturk")  # another experiment of the same researcher
    theirs = make_study("likert", platform="mturk",
                        experiment=authoring.experiment_create(owner=other_user, title="Bob's"))
    answer = api_for(user).post(f"/api/crowd/publications/{publication.pk}/workers/block/",
                                {"worker_id": "A1WORKEDHERE", "reason": "Random answers"}, format="json")
    assert answer.status_code == 200 and answer.json() == {"worker_id": "A1WORKEDHERE", "active": True}
    worker.refresh_from_db()
    assert not worker.blocked  # the shared rater record other researchers' studies see
    with pytest.raises(AssignmentRefused) as refused:
        enter(mine, "A1WORKEDHERE", 1)
    assert refused.value.reason == AssignmentRefused.BLOCKED
    assert enter(theirs, "A1WORKEDHERE", 2).study_id == theirs.pk  # Bob's study still takes them
    # the researcher lifts their own block: their studies take the worker again
    lifted = api_for(user).post(f"/api/crowd/publications/{publication.pk}/workers/block/",
                                {"worker_id": "A1WORKEDHERE", "reason": "Appeal accepted", "unblock": True},
                                format="json")
    assert lifted.status_code == 200 and lifted.json()["active"] is False
    assert enter(mine, "A1WORKEDHERE", 3).study_id == mine.pk


def test_another_researcher_cannot_lift_or_widen_a_block(user, other_user, mturk_stub, make_study, publication, worker):
    crowd_workers.worker_block(publication=publication, worker_id="A1WORKEDHERE", reason="Random answers", user=user)
    bob_study = make_study("likert", platform="mturk", experiment=authoring.experiment_create(owner=other_user, title="B"))
    bobs = publishing.publication_configure(study=bob_study, platform="mturk", sandbox=True, settings=SETTINGS)
    refused = api_for(other_user).post(f"/api/crowd/publications/{bobs.pk}/workers/block/",
                                       {"worker_id": "A1WORKEDHERE", "reason": "x", "unblock": True}, format="json")
    assert refused.status_code == 400 and "A1WORKEDHERE" in problem_fields(refused)["worker_id"][0]
    assert api_for(other_user).post(f"/api/crowd/publications/{publication.pk}/workers/block/",
                                    {"worker_id": "A1WORKEDHERE", "reason": "x", "unblock": True},
                                    format="json").status_code == 404  # not Bob's publication
    with pytest.raises(AssignmentRefused):
        enter(make_study("rme", platform="mturk"), "A1WORKEDHERE", 4)


def test_a_worker_bob_blocked_is_still_welcome_in_alices_study(user, other_user, mturk_stub, make_study, publication,
                                                               worker):
    bob_study = make_study("likert", platform="mturk", experiment=authoring.experiment_create(owner=other_user, title="B"))
    bobs = publishing.publication_configure(study=bob_study, platform="mturk", sandbox=True, settings=SETTINGS)
    mturk_worker(bob_study, "A1WORKEDHERE", "3ASSIGNBOB00000000000000000000", HIT)
    crowd_workers.worker_block(publication=bobs, worker_id="A1WORKEDHERE", reason="Too fast", user=other_user)
    assert enter(make_study("bws", platform="mturk"), "A1WORKEDHERE", 5).status == Assignment.Status.STARTED


def test_blocks_and_their_refusals_from_the_page_and_the_command(user, client, mturk_stub, make_study, publication,
                                                                 worker):
    client.force_login(user)
    url = f"/studies/{publication.study.slug}/crowd/block/"
    page = client.post(url, {"publication": publication.pk, "worker_id": "A9STRANGER", "reason": "Spam"}, follow=True)
    assert "A9STRANGER" in page.content.decode() and "has not worked" in page.content.decode()
    page = client.post(url, {"publication": publication.pk, "worker_id": "A1WORKEDHERE", "reason": "Spam"}, follow=True)
    assert "Worker blocked." in page.content.decode()
    with pytest.raises(AssignmentRefused):
        enter(make_study("bws", platform="mturk"), "A1WORKEDHERE", 6)
    with pytest.raises(CommandError, match="A9STRANGER"):
        call_command("crowd_review", publication.study.slug, "--block", "A9STRANGER", "--reason", "x", stdout=StringIO())
    out = StringIO()
    call_command("crowd_review", publication.study.slug, "--unblock", "A1WORKEDHERE", stdout=out)
    assert "unblocked A1WORKEDHERE" in out.getvalue()
    assert enter(make_study("rme", platform="mturk"), "A1WORKEDHERE", 7).status == Assignment.Status.STARTED


def test_a_prolific_block_refuses_the_participant_and_joins_the_next_studys_blocklist(user, make_study):
    study = make_study("likert", platform="prolific")
    publication = publishing.publication_configure(study=study, platform="prolific", settings={
        "reward_cents": 250, "completion_code": "C1RATED"})
    prolific_participant(study, "5f00000000000000000000a1", "6560aaaa0000000000000001")
    crowd_workers.worker_block(publication=publication, worker_id="5f00000000000000000000a1", reason="Bot", user=user)
    later = make_study("bws", platform="prolific")
    with pytest.raises(AssignmentRefused):
        rater_entry.assignment_enter(study=later, platform="prolific", external_id="5f00000000000000000000a1",
                                     acceptance_id="6560aaaa0000000000000002")
    body = prolific_platform.prolific_study_body(publishing.publication_configure(study=later, platform="prolific"))
    assert {"filter_id": "custom_blocklist", "selected_values": ["5f00000000000000000000a1"]} in body["filters"]
