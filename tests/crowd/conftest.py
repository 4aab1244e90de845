"""Fixtures for the crowd tests: an MTurk client behind botocore's Stubber (every call must be
expected, with realistic responses), Prolific behind a transport that replays recorded JSON and fails
the test on any request it was not told about, and raters with finished or running assignments."""
from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber

from crowd.clients import mturk, prolific
from studies.rating import answers as answering
from studies.rating import entry as rater_entry

RECORDINGS = Path(__file__).parent / "recordings"
PUBLIC_URL = "https://concord.example.org"


@pytest.fixture(autouse=True)
def _public_url(settings, monkeypatch):
    settings.CONCORD_PUBLIC_URL = PUBLIC_URL
    settings.PROLIFIC_TOKEN = "test-prolific-token"
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")


@pytest.fixture
def sleeps(monkeypatch):
    """Backoff delays asked for, instead of sleeping."""
    asked: list[float] = []
    monkeypatch.setattr(mturk, "sleep", asked.append)
    monkeypatch.setattr(prolific, "sleep", asked.append)
    return asked


@pytest.fixture
def mturk_stub(monkeypatch, sleeps):
    """A sandbox MTurk client under botocore's Stubber; ``client_factory`` hands it to every service,
    view and command. After the test every queued response must have been used."""
    client = boto3.client("mturk", region_name="us-east-1", endpoint_url=mturk.SANDBOX_ENDPOINT,
                          aws_access_key_id="testing", aws_secret_access_key="testing")
    stubber = Stubber(client)
    monkeypatch.setattr(mturk, "client_factory", lambda sandbox: client)
    with stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def mturk_error(stubber, operation: str, code: str, message: str, status: int = 400, expected_params=None):
    stubber.add_client_error(operation, service_error_code=code, service_message=message,
                             http_status_code=status, expected_params=expected_params)


class RecordedTransport:
    """Replays (method, path) -> recorded JSON; any other request fails the test at once."""

    def __init__(self):
        self.expected: list[tuple[str, str, int, object, object]] = []
        self.requests: list[tuple[str, str, object]] = []

    def expect(self, method: str, path: str, recording: str | dict | list, *, status: int = 200, body=None):
        payload = json.loads((RECORDINGS / recording).read_text()) if isinstance(recording, str) else recording
        self.expected.append((method, path, status, payload, body))

    def request(self, method, url, headers, body):
        assert headers["Authorization"] == "Token test-prolific-token"
        path = url.removeprefix(prolific.BASE_URL)
        self.requests.append((method, path, body))
        if not self.expected:
            pytest.fail(f"unexpected Prolific request {method} {path}")
        want_method, want_path, status, payload, want_body = self.expected.pop(0)
        if (method, path) != (want_method, want_path):
            pytest.fail(f"unexpected Prolific request {method} {path}; expected {want_method} {want_path}")
        if want_body is not None:
            assert body == want_body
        return status, payload


@pytest.fixture
def prolific_transport(monkeypatch):
    transport = RecordedTransport()
    monkeypatch.setattr(prolific, "transport_factory", lambda: transport)
    yield transport
    assert not transport.expected, f"Prolific requests never made: {transport.expected}"


def answer_all(assignment, value=3):
    for slot in assignment.assignment_items.all():
        answers = {c: dict.fromkeys(slot.response_order, value)
                   for c in assignment.study.criteria.values_list("name", flat=True)}
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers)


def mturk_worker(study, worker: str, assignment_id: str, hit_id: str, *, finish: bool = False):
    rater = rater_entry.rater_get_or_create(platform="mturk", external_id=worker)
    assignment = rater_entry.assignment_start(study=study, rater=rater, platform_data={
        "assignmentId": assignment_id, "hitId": hit_id, "turkSubmitTo": "https://workersandbox.mturk.com"})
    if finish:
        answer_all(assignment)
        assignment = answering.assignment_submit(assignment=assignment)
    return assignment


def prolific_participant(study, pid: str, session: str, *, finish: bool = False):
    rater = rater_entry.rater_get_or_create(platform="prolific", external_id=pid)
    assignment = rater_entry.assignment_start(study=study, rater=rater,
                                           platform_data={"STUDY_ID": "6550a1b2c3d4e5f601234567", "SESSION_ID": session})
    if finish:
        answer_all(assignment)
        assignment = answering.assignment_submit(assignment=assignment)
    return assignment


def mturk_assignment(assignment_id, worker, hit_id, status="Submitted", minutes=12):
    accepted = datetime(2026, 11, 20, 10, 0, tzinfo=UTC)
    row = {"AssignmentId": assignment_id, "WorkerId": worker, "HITId": hit_id, "AssignmentStatus": status,
           "AcceptTime": accepted, "SubmitTime": accepted.replace(minute=minutes),
           "AutoApprovalTime": accepted.replace(day=23), "Deadline": accepted.replace(hour=11),
           "Answer": '<?xml version="1.0" encoding="UTF-8"?><QuestionFormAnswers xmlns="http://mechanicalturk.amazonaws.'
                     'com/AWSMechanicalTurkDataSchemas/2005-10-01/QuestionFormAnswers.xsd"><Answer><QuestionIdentifier>'
                     'completion_code</QuestionIdentifier><FreeText>CC-1A2B3C4D</FreeText></Answer></QuestionFormAnswers>'}
    if status == "Approved":
        row["ApprovalTime"] = accepted.replace(hour=12)
    return row


def hit_response(hit_id, *, status="Assignable", max_assignments=9, expiration=None):
    return {"HIT": {"HITId": hit_id, "HITTypeId": "3HYRJBZ4ZBHTYPEEXAMPLE0", "HITGroupId": "3GROUPEXAMPLE0",
                    "CreationTime": datetime(2026, 11, 20, 9, 0, tzinfo=UTC), "Title": "Rate dialogue replies",
                    "Description": "Read short conversations", "HITStatus": status, "MaxAssignments": max_assignments,
                    "Reward": "0.80", "AutoApprovalDelayInSeconds": 259200,
                    "Expiration": expiration or datetime(2026, 11, 23, 9, 0, tzinfo=UTC),
                    "AssignmentDurationInSeconds": 3600, "NumberOfAssignmentsPending": 0,
                    "NumberOfAssignmentsAvailable": 7, "NumberOfAssignmentsCompleted": 2}}
