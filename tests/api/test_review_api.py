"""The rater review through the API, as on the review pages: the queue (the flagged rater, undecided first,
the most disputed items), each rater's evidence (flags with figure and threshold), keep/exclude decisions
and their reversal (an excluded rater leaves the reports and comes back), platform decisions through the
crowd API (approve sent to MTurk first); another researcher gets 404s and changes nothing."""
import pytest

from studies.models import Assignment, RaterDecision, Study
from studies.reports import selectors as report_selectors
from tests.api.test_convention import client_of
from tests.crowd.conftest import _public_url, mturk_stub, sleeps  # noqa: F401 - fixtures
from tests.problems import problem_fields
from tests.studies.review_fixtures import SPAMMER, rate_all, review_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def rated(user, corpus):
    study = review_study(user, corpus)
    return study, rate_all(study)


def test_review_queue_api_lists_the_flagged_rater_and_disputed_items(api, rated):
    study, done = rated
    body = api.get(f"/api/studies/{study.slug}/review/").json()
    assert [row["rater"] for row in body["raters"]] == [done[SPAMMER].rater_id]
    spam = body["raters"][0]
    assert {f["key"] for f in spam["raised"]} >= {"checks", "straight_lining", "ac1-safety"}
    assert spam["verdict"] is None and spam["name"] != SPAMMER  # a pseudonym
    figures = [item["figure"] for item in body["items"]]
    assert figures == sorted(figures, reverse=True) and figures and figures[-1] > 0
    unknown = api.get(f"/api/studies/{study.slug}/review/", {"colour": "red"})
    assert unknown.status_code == 400 and "colour" in problem_fields(unknown)


def test_review_rater_evidence_api_gives_each_flag_with_figure_and_threshold(api, rated, settings):
    study, done = rated
    body = api.get(f"/api/studies/{study.slug}/raters/{done[SPAMMER].rater_id}/").json()
    flags = {f["key"]: f for f in body["flags"]}
    assert flags["straight_lining"]["threshold"] == settings.RATER_FLAGS["max_straight_lining"]
    assert flags["straight_lining"]["raised"] is True and flags["straight_lining"]["figure"] == pytest.approx(1.0)
    assert [c["passed"] for c in body["checks"]] == [False]
    assert len(body["seconds"]) == Assignment.objects.get(pk=done[SPAMMER].pk).assignment_items.count()
    assert api.get(f"/api/studies/{study.slug}/raters/999999/").status_code == 404


def test_review_exclude_then_revert_through_the_api(api, rated):
    study, done = rated
    rater = done[SPAMMER].rater_id
    frame = lambda: set(report_selectors.ratings_frame(Study.objects.filter(pk=study.pk))["rater"])  # noqa: E731
    excluded = api.post(f"/api/studies/{study.slug}/raters/{rater}/decisions/",
                        {"kind": "exclude", "reason": "the same answer throughout"}, format="json")
    assert excluded.status_code == 201 and excluded.json()["kind"] == "exclude" and excluded.json()["standing"]
    assert Assignment.objects.get(pk=done[SPAMMER].pk).excluded and rater not in frame()
    queue = api.get(f"/api/studies/{study.slug}/review/").json()
    assert queue["raters"][0]["verdict"]["kind"] == "exclude" and queue["exclusions"][0]["reason"]
    reverted = api.post(f"/api/studies/{study.slug}/decisions/{excluded.json()['id']}/revert/")
    assert reverted.status_code == 200 and reverted.json()["standing"] is False
    assert not Assignment.objects.get(pk=done[SPAMMER].pk).excluded and rater in frame()


def test_review_decision_refusals_name_the_field_and_change_nothing(api, rated):
    study, done = rated
    url = f"/api/studies/{study.slug}/raters/{done[SPAMMER].rater_id}/decisions/"
    for body, field in (({"kind": "exclude", "reason": "  "}, "reason"), ({"kind": "delete", "reason": "x"}, "kind"),
                        ({"kind": "approve", "reason": "x"}, "kind"), ({"kind": "keep", "reason": "x", "n": 1}, "n")):
        response = api.post(url, body, format="json")
        assert response.status_code == 400 and field in problem_fields(response), body
    assert "/api/crowd/" in problem_fields(api.post(url, {"kind": "reject", "reason": "x"}, format="json"))["kind"][0]
    assert not RaterDecision.objects.exists()


def test_review_platform_decision_of_a_rater_without_a_platform_is_refused(api, rated):
    study, done = rated
    response = api.post(f"/api/crowd/studies/{study.slug}/raters/{done[SPAMMER].rater_id}/decisions/",
                        {"kind": "approve", "reason": "fine"}, format="json")
    assert response.status_code == 400 and "platform" in problem_fields(response)
    assert not RaterDecision.objects.exists()


def test_review_platform_approve_through_the_crowd_api_reaches_mturk(api, mturk_stub, make_study):  # noqa: F811
    from crowd import publishing
    from tests.crowd.test_mturk import SETTINGS, synced_submitted

    study = make_study("likert", raters_per_item=4)
    publication = publishing.publication_configure(study=study, platform="mturk", sandbox=True, settings=SETTINGS)
    _, rows = synced_submitted(mturk_stub, publication, workers=("A1",))
    mturk_stub.add_response("approve_assignment", {}, {"AssignmentId": "3ASSIGNA1", "RequesterFeedback": "careful"})
    response = api.post(f"/api/crowd/studies/{study.slug}/raters/{rows[0].rater_id}/decisions/",
                        {"kind": "approve", "reason": "careful"}, format="json")
    assert response.status_code == 201 and response.json()["kind"] == "approve"
    assert Assignment.objects.get(pk=rows[0].pk).status == "approved"


def test_review_cross_researcher_gets_404_everywhere_and_changes_nothing(rated, other_user, user):
    study, done = rated
    bob = client_of(other_user)
    rater = done[SPAMMER].rater_id
    assert bob.get(f"/api/studies/{study.slug}/review/").status_code == 404
    assert bob.get(f"/api/studies/{study.slug}/raters/{rater}/").status_code == 404
    assert bob.post(f"/api/studies/{study.slug}/raters/{rater}/decisions/",
                    {"kind": "exclude", "reason": "x"}, format="json").status_code == 404
    assert bob.post(f"/api/crowd/studies/{study.slug}/raters/{rater}/decisions/",
                    {"kind": "approve", "reason": "x"}, format="json").status_code == 404
    mine = client_of(user).post(f"/api/studies/{study.slug}/raters/{rater}/decisions/",
                                {"kind": "exclude", "reason": "spam"}, format="json").json()
    assert bob.post(f"/api/studies/{study.slug}/decisions/{mine['id']}/revert/").status_code == 404
    assert RaterDecision.objects.get().reverted_at is None
