"""assignment_enter / invite_enter / assignment_start under races, without a second database
connection: the retry paths are driven by making the first attempt read a stale "no rater yet"
(what a concurrent request that commits between our read and our insert looks like). The real
thread races run on PostgreSQL in tests/integration/test_postgres.py."""
import pytest

from studies.authoring import services as authoring
from studies.errors import AssignmentRefused
from studies.models import Assignment, Rater
from studies.rating import closing, invites
from studies.rating import entry as rater_entry

pytestmark = pytest.mark.django_db


def stale_first_reads(monkeypatch, times: int = 1):
    """_rater_for_entry answers None for the first ``times`` calls, then reads the database again."""
    real = rater_entry._rater_for_entry
    calls = []

    def lookup(platform, external_id):
        calls.append(external_id)
        return None if len(calls) <= times else real(platform, external_id)
    monkeypatch.setattr(rater_entry, "_rater_for_entry", lookup)
    return calls


def test_a_new_worker_entering_two_conditions_at_once_is_refused_not_a_500(make_study, user, monkeypatch):
    experiment = authoring.experiment_create(owner=user, title="Two conditions")
    likert = make_study("likert", platform="mturk", experiment=experiment)
    rme = make_study("rme", platform="mturk", experiment=experiment)
    first = rater_entry.assignment_enter(study=likert, platform="mturk", external_id="W1", acceptance_id="A1")
    calls = stale_first_reads(monkeypatch)  # the other condition's request did not see W1 yet
    with pytest.raises(AssignmentRefused) as refused:
        rater_entry.assignment_enter(study=rme, platform="mturk", external_id="W1", acceptance_id="A2")
    assert refused.value.reason == AssignmentRefused.OTHER_CONDITION
    assert len(calls) == 2  # the insert hit the unique constraint, the retry read again
    assert list(Assignment.objects.values_list("pk", flat=True)) == [first.pk] and Rater.objects.count() == 1


def test_a_double_click_resumes_the_first_requests_assignment(make_study, monkeypatch):
    study = make_study("likert", raters_per_item=1, items_per_assignment=6, platform="prolific")  # one slot
    first = rater_entry.assignment_enter(study=study, platform="prolific", external_id="p1", acceptance_id="s1")
    stale_first_reads(monkeypatch)
    again = rater_entry.assignment_enter(study=study, platform="prolific", external_id="p1", acceptance_id="s1")
    assert again.pk == first.pk  # not "the study has all the ratings it needs"


def test_an_invite_double_click_retries_into_the_same_assignment(make_study, monkeypatch):
    study = make_study("likert", raters_per_item=2, items_per_assignment=6)
    invite = invites.invite_create(study=study)
    first = invites.invite_enter(study=study, token=invite.token, browser_secret="b" * 43)
    calls = stale_first_reads(monkeypatch)
    assert invites.invite_enter(study=study, token=invite.token, browser_secret="b" * 43).pk == first.pk
    assert len(calls) == 2


def test_retries_end_in_a_clear_refusal(make_study, monkeypatch):
    study = make_study("likert", raters_per_item=5, items_per_assignment=1)
    invite = invites.invite_create(study=study)
    invites.invite_enter(study=study, token=invite.token, browser_secret="b" * 43)
    calls = stale_first_reads(monkeypatch, times=99)
    with pytest.raises(AssignmentRefused) as refused:
        invites.invite_enter(study=study, token=invite.token, browser_secret="b" * 43)
    assert refused.value.reason == AssignmentRefused.BUSY and "reload" in str(refused.value)
    assert len(calls) == rater_entry.ENTER_ATTEMPTS and Assignment.objects.count() == 1


def test_assignment_start_finds_the_raters_assignment_before_calling_the_study_full(make_study):
    study = make_study("likert", raters_per_item=1, items_per_assignment=6)
    worker = rater_entry.rater_get_or_create(platform="invite", external_id="w1")
    first = rater_entry.assignment_start(study=study, rater=worker)
    assert rater_entry.assignment_start(study=study, rater=worker).pk == first.pk
    with pytest.raises(AssignmentRefused, match="all the ratings"):
        rater_entry.assignment_start(study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id="w2"))


def test_a_refused_entry_writes_no_rater(make_study):
    study = make_study("likert", platform="mturk", raters_per_item=1, items_per_assignment=6)
    rater_entry.assignment_enter(study=study, platform="mturk", external_id="W1", acceptance_id="A1")
    with pytest.raises(AssignmentRefused, match="all the ratings"):
        rater_entry.assignment_enter(study=study, platform="mturk", external_id="W2", acceptance_id="A2")
    closing.study_close(study=study)
    with pytest.raises(AssignmentRefused, match="closed"):
        rater_entry.assignment_enter(study=study, platform="mturk", external_id="W3", acceptance_id="A3")
    assert list(Rater.objects.values_list("external_id", flat=True)) == ["W1"]
