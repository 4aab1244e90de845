"""Platform ids as the crowd app reads them (crowd's side): a worker id is the same
worker whatever its Unicode form or letter case (NFKC, case-folded), when a researcher names a worker
and when a sync matches the platform's rows to Concord's raters; simulated raters carry ids in the
platforms' own formats."""
import re

import pytest

from crowd import publishing
from crowd import workers as crowd_workers
from crowd.models import Publication, WorkerAssignment
from crowd.platforms import PLATFORMS
from crowd.platforms import prolific as prolific_platform
from crowd.scope import worker_key
from studies.models import RaterBlock
from tests.crowd.conftest import mturk_worker, prolific_participant
from tests.crowd.test_mturk import SETTINGS

pytestmark = pytest.mark.django_db


def test_worker_keys_fold_unicode_forms_and_case():
    assert worker_key(" 5F0000000000000000000０A1 ") == worker_key("5f00000000000000000000a1")  # a full-width 0
    assert worker_key("a1workedhere") == worker_key("A1WORKEDHERE") != worker_key("A1WORKEDHERF")


def test_a_researcher_names_a_worker_in_any_case_or_width(user, make_study):
    study = make_study("likert", platform="mturk")
    publication = publishing.publication_configure(study=study, platform="mturk", sandbox=True, settings=SETTINGS)
    rater = mturk_worker(study, "A1WORKEDHERE", "3ASSIGNWORKED0000000000000000", "3HIT").rater
    crowd_workers.worker_block(publication=publication, worker_id="a1ｗorkedhere", reason="Bot", user=user)
    assert RaterBlock.objects.get().rater_id == rater.pk  # the stored worker, not a second identity


def test_prolific_sync_matches_a_participant_whose_id_was_typed_in_another_case(prolific_transport, make_study):
    study = make_study("likert", platform="prolific")
    publication = publishing.publication_configure(study=study, platform="prolific", settings={
        "reward_cents": 250, "completion_code": "C1RATED"})
    Publication.objects.filter(pk=publication.pk).update(external_id="6550a1b2c3d4e5f601234567", status="published")
    publication.refresh_from_db()
    entered = prolific_participant(study, "5F00000000000000000000A1", "6560AAAA0000000000000001")  # as once typed
    prolific_transport.expect("GET", "studies/6550a1b2c3d4e5f601234567/submissions/", {"results": [
        {"id": "6560aaaa0000000000000001", "participant_id": "5f00000000000000000000a1", "status": "AWAITING REVIEW",
         "started_at": "2026-11-20T09:05:00Z", "completed_at": None, "time_taken": None}],
        "_links": {"next": {"href": None}}})
    summary = prolific_platform.prolific_sync(publication=publication)
    assert (summary.linked, summary.problems) == (1, [])
    assert WorkerAssignment.objects.get().assignment_id == entered.pk


@pytest.mark.parametrize(("platform", "patterns"), [
    ("mturk", {"workerId": r"A[0-9A-Z]{13}", "assignmentId": r"[0-9A-Z]{30}", "hitId": r"[0-9A-Z]{30}"}),
    ("prolific", {"PROLIFIC_PID": r"[0-9a-f]{24}", "STUDY_ID": r"[0-9a-f]{24}", "SESSION_ID": r"[0-9a-f]{24}"}),
])
def test_simulated_raters_carry_ids_in_the_platforms_own_formats(platform, patterns):
    ids = [PLATFORMS[platform].simulated_entry("SIM0000002A", n) for n in range(50)]
    for rater, entry in ids:
        assert all(re.fullmatch(pattern, entry[name]) for name, pattern in patterns.items())
        assert rater == entry[next(iter(patterns))]
    assert len({rater for rater, _ in ids}) == 50 and ids == [PLATFORMS[platform].simulated_entry("SIM0000002A", n)
                                                            for n in range(50)]
