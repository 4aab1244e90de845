"""Onboarding on Mechanical Turk: a worker who passes an experiment's practice is granted its
"passed practice" qualification (created once per sandbox/production, each grant recorded once), a
worker who failed is not, and the pass reaches crowd through studies' signal (crowd's receiver
queues the grant; studies imports no crowd)."""
import pytest

from crowd import tasks
from crowd.models import Publication, QualificationGrant, QualificationType
from crowd.platforms import mturk_practice
from studies.authoring import services as authoring
from studies.designs.ratings import field_name
from studies.models import PracticeAttempt
from studies.onboarding import selectors as onboarding_selectors
from studies.onboarding import services as onboarding
from tests.factories import consented_attempt

pytestmark = pytest.mark.django_db


class RecordingMTurk:
    """Stands in for crowd.clients.mturk.MTurk: records each call, answers like MTurk."""

    def __init__(self):
        self.calls = []

    def call(self, operation, **params):
        self.calls.append((operation, params))
        if operation == "create_qualification_type":
            return {"QualificationType": {"QualificationTypeId": "3PRACTICEQUALID"}}
        return {}


def practise(study, worker, good):
    attempt = consented_attempt(study=study, platform="mturk", external_id=worker,
                                                acceptance_id=f"A{worker}")
    item = onboarding_selectors.practice_items(study)[0]
    values = (5, 1) if good else (1, 5)
    post = {field_name(rid, c.name, item.response_ids): str(v) for c in study.criteria.all()
            for rid, v in zip(item.response_ids, values, strict=True)}
    onboarding.practice_answer(attempt=attempt, item=item, post=post)
    attempt.refresh_from_db()
    return attempt


@pytest.fixture
def mturk_study(make_study):
    study = make_study("likert", publish=False, platform="mturk")
    onboarding.practice_item_create(study=study, context="A: Hi", responses=["Hello!", "Zzz"],
                                    rules=[{"greater": 1, "than": 2}], explanation="A greets back.")
    authoring.study_publish(study=study)
    Publication.objects.create(study=study, platform="mturk", sandbox=True, status="published", external_id="HT1")
    return study


def test_practice_pass_grants_the_mturk_qualification_once(mturk_study):
    assert practise(mturk_study, "W1PASS", True).status == PracticeAttempt.Status.PASSED
    assert practise(mturk_study, "W2FAIL", False).status == PracticeAttempt.Status.FAILED
    client = RecordingMTurk()
    granted = mturk_practice.practice_qualifications_grant(experiment_id=mturk_study.experiment_id,
                                                           client_for=lambda sandbox: client)
    assert granted == 1
    assert [op for op, _ in client.calls] == ["create_qualification_type", "associate_qualification_with_worker"]
    assert client.calls[1][1] == {"QualificationTypeId": "3PRACTICEQUALID", "WorkerId": "W1PASS", "IntegerValue": 1,
                                  "SendNotification": False}
    qualification = QualificationType.objects.get(experiment=mturk_study.experiment, sandbox=True)
    assert qualification.purpose == QualificationType.Purpose.PASSED_PRACTICE
    assert list(QualificationGrant.objects.values_list("qualification", "worker_id")) == [(qualification.pk, "W1PASS")]
    again = RecordingMTurk()
    assert mturk_practice.practice_qualifications_grant(client_for=lambda sandbox: again) == 0 and again.calls == []


def test_practice_without_a_sent_mturk_publication_grants_nothing(mturk_study):
    Publication.objects.update(status="draft", external_id="")
    practise(mturk_study, "W1PASS", True)
    client = RecordingMTurk()
    assert mturk_practice.practice_qualifications_grant(client_for=lambda sandbox: client) == 0
    assert client.calls == [] and not QualificationType.objects.exists()


def test_practice_pass_signal_queues_the_grant(mturk_study, monkeypatch, django_capture_on_commit_callbacks):
    queued = []
    monkeypatch.setattr(tasks.crowd_practice_grant, "delay", lambda *args: queued.append(args))
    with django_capture_on_commit_callbacks(execute=True):
        practise(mturk_study, "W1PASS", True)
    assert queued == [(mturk_study.experiment_id,)]
    with django_capture_on_commit_callbacks(execute=True):
        practise(mturk_study, "W3FAIL", False)
    assert queued == [(mturk_study.experiment_id,)]  # a fail queues nothing


def test_later_hits_can_require_the_practice_qualification(mturk_stub, mturk_study, make_study):
    from botocore.stub import ANY

    from crowd import publishing
    from crowd.clients import mturk as mturk_client
    from crowd.errors import PublishRefused
    from crowd.platforms import mturk as mturk_platform

    later = make_study("likert", raters_per_item=2)  # another experiment of the same researcher
    settings = {"reward": "0.50", "hits": 1, "assignments_per_hit": 2,
                "require_practice_of": mturk_study.experiment.slug}
    publication = publishing.publication_configure(study=later, platform="mturk", sandbox=True, settings=settings)
    with pytest.raises(PublishRefused, match="require_practice_of"):  # nobody has passed it yet: refused, nothing sent
        mturk_platform.mturk_publish(publication=publication)
    practise(mturk_study, "W1PASS", True)
    mturk_practice.practice_qualifications_grant(client_for=lambda sandbox: RecordingMTurk())
    mturk_stub.add_response("get_account_balance", {"AvailableBalance": "10000.00", "OnHoldBalance": "0.00"}, {})
    mturk_stub.add_response("create_qualification_type", {"QualificationType": {
        "QualificationTypeId": "3QUALLATER0000000000000000000", "Name": "x", "QualificationTypeStatus": "Active"}},
        {"Name": ANY, "Description": ANY, "QualificationTypeStatus": "Active", "Keywords": "concord"})
    requirements = mturk_client.qualification_requirements(
        {"min_approval_rate": 95, "min_approved": 100, "locales": ["US"]}, sandbox=True,
        experiment_qualification="3QUALLATER0000000000000000000", practice_qualification="3PRACTICEQUALID")
    assert requirements[-1] == {"QualificationTypeId": "3PRACTICEQUALID", "Comparator": "Exists",
                                "ActionsGuarded": "DiscoverPreviewAndAccept"}
    mturk_stub.add_response("create_hit_type", {"HITTypeId": "3HITTYPELATER"}, {
        "Title": ANY, "Description": ANY, "Reward": "0.50", "AssignmentDurationInSeconds": ANY,
        "AutoApprovalDelayInSeconds": ANY, "Keywords": ANY, "QualificationRequirements": requirements})
    mturk_stub.add_response("create_hit_with_hit_type", {"HIT": {"HITId": "3HITLATER", "HITTypeId": "3HITTYPELATER",
                                                                 "MaxAssignments": 2}},
                            {"HITTypeId": "3HITTYPELATER", "MaxAssignments": 2, "LifetimeInSeconds": ANY,
                             "Question": ANY, "RequesterAnnotation": ANY, "UniqueRequestToken": ANY})
    published = mturk_platform.mturk_publish(publication=publication)
    assert published.status == Publication.Status.PUBLISHED
