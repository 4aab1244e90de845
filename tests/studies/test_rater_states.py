"""The rater's states beyond the happy path: Prolific's fixed completion codes, screened-out
raters, assignments that run out of time (abandoned on access), studies that close themselves, and
an MTurk worker on a second HIT of a study they finished."""
import re
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.utils import timezone

from studies import tasks
from studies.authoring import services as authoring
from studies.errors import AssignmentRefused
from studies.models import Assignment, AssignmentItem, Study
from studies.rating import closing, platforms, review
from studies.rating import entry as rater_entry
from tests.factories import prolific_id
from tests.studies.test_rater_views import enter, likert_answers, post_item, post_questionnaire
from tests.visible import visible_text

pytestmark = pytest.mark.django_db

QUESTIONNAIRE = {"prior_rating_experience": "yes", "prior_agent_experience": "no"}


def finish(client, assignment):
    slots = list(assignment.assignment_items.order_by("position"))
    for slot in slots:  # a stored answer shows the next item at once; the last one goes to the questionnaire
        expected = 302 if slot.position == slots[-1].position else 200
        assert post_item(client, assignment, slot.position, likert_answers(slot)).status_code == expected
    assert post_questionnaire(client, assignment, QUESTIONNAIRE).status_code == 302
    assignment.refresh_from_db()
    return assignment


def configure(study, **config):
    Study.objects.filter(pk=study.pk).update(platform_config={**study.platform_config, **config})
    study.refresh_from_db()


def prolific_link(page: str) -> str:
    return re.search(r'href="([^"]*prolific[^"]*)"', page).group(1).replace("&amp;", "&")


# --- Prolific completion codes ---------------------------------------------------------------------

@pytest.mark.parametrize(("config", "code", "expected"), [
    ({}, "C0DE", "https://app.prolific.com/submissions/complete?cc=C0DE"),
    ({"completion_url": "https://app.prolific.com/submissions/complete"}, "C0DE",
     "https://app.prolific.com/submissions/complete?cc=C0DE"),
    ({"completion_url": "https://app.prolific.com/submissions/complete?cc=C0DE"}, "C0DE",
     "https://app.prolific.com/submissions/complete?cc=C0DE"),
    ({"completion_url": "https://app.prolific.com/submissions/complete?cc=C0DE"}, "SCREEN",
     "https://app.prolific.com/submissions/complete?cc=SCREEN"),
    ({"completion_url": "https://example.org/back?x=1"}, "C0DE", "https://example.org/back?x=1&cc=C0DE"),
])
def test_prolific_completion_url_carries_exactly_one_cc(config, code, expected):
    url = platforms.prolific_completion_url(config, code)
    assert url == expected and parse_qs(urlsplit(url).query)["cc"] == [code]


def test_prolific_raters_get_the_studys_fixed_code_and_a_link_with_one_cc(make_study):
    study = make_study("likert", platform="prolific", items_per_assignment=1)
    configure(study, completion_code="C1OSED42",
              completion_url="https://app.prolific.com/submissions/complete?cc=C1OSED42")
    pages = []
    for pid in ("p1", "p2"):
        client = Client()
        assignment = finish(client, enter(client, study, f"PROLIFIC_PID={prolific_id(pid)}&STUDY_ID=8de0b3c47f112c59745f717a&SESSION_ID={prolific_id('s-' + pid + '')}"))
        assert assignment.completion_code == "C1OSED42"
        pages.append(client.get(f"/r/a/{assignment.token}/done/").content.decode())
    for page in pages:
        assert 'data-testid="completion-code">C1OSED42<' in page
        assert prolific_link(page) == "https://app.prolific.com/submissions/complete?cc=C1OSED42"


def test_the_code_is_read_from_a_pasted_completion_url_when_no_code_is_set(make_study):
    study = make_study("likert", platform="prolific", items_per_assignment=1)
    configure(study, completion_url="https://app.prolific.com/submissions/complete?cc=FROMURL")
    client = Client()
    assert finish(client, enter(client, study, "PROLIFIC_PID=148de9c5a7a44d19e56cd9ae&SESSION_ID=043a718774c572bd8a25adbe")).completion_code == "FROMURL"


def test_mturk_and_invite_raters_keep_a_code_of_their_own(make_study):
    study = make_study("likert", platform="mturk", items_per_assignment=1)
    configure(study, completion_code="NOT-FOR-MTURK")
    codes = set()
    for n in (1, 2):
        client = Client()
        codes.add(finish(client, enter(client, study, f"workerId=W{n}&assignmentId=A{n}&hitId=H1"
                                                      "&turkSubmitTo=https://www.mturk.com")).completion_code)
    assert len(codes) == 2 and all(c.startswith("CC-") for c in codes)


# --- screened out ----------------------------------------------------------------------------------

def test_a_screened_out_rater_gets_the_screened_out_code_and_their_items_go_back(make_study):
    study = make_study("likert", platform="prolific", raters_per_item=1, items_per_assignment=6)
    configure(study, completion_code="GOOD", screened_out_code="SCREENED")
    client = Client()
    assignment = enter(client, study, "PROLIFIC_PID=2149fac79658885917e81e64&SESSION_ID=e8bc163c82eee18733288c7d")
    with pytest.raises(review.ReviewError, match="reason"):
        review.assignment_screen_out(assignment=assignment, reason=" ")
    screened = review.assignment_screen_out(assignment=assignment, reason="failed 2 of 3 attention checks")
    assert screened.screened_out and screened.status == Assignment.Status.ABANDONED
    assert screened.completion_code == "SCREENED"
    for url in (f"/r/a/{assignment.token}/done/", f"/r/a/{assignment.token}/items/0/",
                f"/r/{study.slug}/?PROLIFIC_PID=2149fac79658885917e81e64&SESSION_ID=e8bc163c82eee18733288c7d"):
        page = client.get(url).content.decode()
        assert "did not pass this study's checks" in page and "GOOD" not in visible_text(page)
        assert "cc=GOOD" not in page
        assert prolific_link(page) == "https://app.prolific.com/submissions/complete?cc=SCREENED"
    # the study had one slot per item: the screened-out rater's items are free again
    other = rater_entry.assignment_enter(study=study, platform="prolific", external_id="next", acceptance_id="s2")
    assert other.assignment_items.count() == 6
    again = review.assignment_screen_out(assignment=assignment, reason="again")
    assert again.platform_data["screen_reason"] == "failed 2 of 3 attention checks"


def test_without_a_screened_out_code_the_rater_is_asked_to_return_and_sees_no_code(make_study):
    study = make_study("likert", platform="prolific")
    configure(study, completion_code="GOOD")
    client = Client()
    assignment = enter(client, study, "PROLIFIC_PID=148de9c5a7a44d19e56cd9ae&SESSION_ID=e8bc163c82eee18733288c7d")
    review.assignment_screen_out(assignment=assignment, reason="failed the instructed-response item")
    page = client.get(f"/r/a/{assignment.token}/done/").content.decode()
    assert "return your submission on Prolific" in page and "GOOD" not in visible_text(page) and "cc=" not in page


def test_a_submitted_assignment_screened_out_stays_submitted_with_the_screened_out_code(make_study):
    study = make_study("likert", platform="prolific", items_per_assignment=1)
    configure(study, completion_code="GOOD", screened_out_code="SCREENED")
    client = Client()
    assignment = finish(client, enter(client, study, "PROLIFIC_PID=148de9c5a7a44d19e56cd9ae&SESSION_ID=e8bc163c82eee18733288c7d"))
    assert assignment.completion_code == "GOOD"
    screened = review.assignment_screen_out(assignment=assignment, reason="gold items wrong")
    assert screened.status == Assignment.Status.SUBMITTED and screened.completion_code == "SCREENED"
    other_client = Client()
    approved = review.assignment_approve(
        assignment=finish(other_client, enter(other_client, study, "PROLIFIC_PID=8e35c2cd3bf6641bdb0e2050&SESSION_ID=ad328846aa18b32a33581637")))
    with pytest.raises(review.ReviewError, match="approved"):  # a reviewed assignment is not changed
        review.assignment_screen_out(assignment=approved, reason="late")
    assert Assignment.objects.get(pk=approved.pk).completion_code == "GOOD"


# --- time limits: abandoned on access -------------------------------------------------------------

def test_an_assignment_past_its_time_limit_is_abandoned_on_access_and_frees_its_items(make_study):
    study = make_study("likert", platform="prolific", raters_per_item=1, items_per_assignment=6)
    configure(study, time_limit_minutes=30)
    client = Client()
    assignment = enter(client, study, "PROLIFIC_PID=5e0cf7bd1dfa3831788b0cf6&SESSION_ID=e8bc163c82eee18733288c7d")
    Assignment.objects.filter(pk=assignment.pk).update(started_at=timezone.now() - timedelta(minutes=31))
    page = client.get(f"/r/a/{assignment.token}/items/0/")
    assert page.status_code == 410 and "Time is up" in page.content.decode()
    assert "return your submission on Prolific" in page.content.decode()
    stored = Assignment.objects.get(pk=assignment.pk)
    assert stored.status == Assignment.Status.ABANDONED and "time limit" in stored.platform_data["abandon_reason"]
    # every later visit says the same, and the items were free for the next rater at once
    assert "Time is up" in client.get(f"/r/a/{assignment.token}/done/").content.decode()
    other = rater_entry.assignment_enter(study=study, platform="prolific", external_id="next", acceptance_id="s2")
    assert set(other.assignment_items.values_list("item", flat=True)) == \
        set(assignment.assignment_items.values_list("item", flat=True))


def test_a_full_study_with_a_timed_out_assignment_takes_the_next_rater(make_study):
    study = make_study("likert", platform="prolific", raters_per_item=1, items_per_assignment=6)
    configure(study, time_limit_minutes=10)
    stuck = rater_entry.assignment_enter(study=study, platform="prolific", external_id="gone", acceptance_id="s1")
    with pytest.raises(AssignmentRefused):  # full while the first is within its time
        rater_entry.assignment_enter(study=study, platform="prolific", external_id="early", acceptance_id="s2")
    Assignment.objects.filter(pk=stuck.pk).update(started_at=timezone.now() - timedelta(minutes=11))
    response = Client().get(f"/r/{study.slug}/?PROLIFIC_PID=1d9283d848ea941ace1fe0d2&SESSION_ID=41242b9fae56fad4e6e77dfe")
    assert response.status_code == 302
    assert Assignment.objects.get(pk=stuck.pk).status == Assignment.Status.ABANDONED


def test_within_the_time_limit_nothing_is_abandoned(make_study):
    study = make_study("likert", platform="prolific")
    configure(study, time_limit_minutes=30)
    client = Client()
    assignment = enter(client, study, "PROLIFIC_PID=22c72aa82ce77c82e2ca65a7&SESSION_ID=e8bc163c82eee18733288c7d")
    assert client.get(f"/r/a/{assignment.token}/items/0/").status_code == 200
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.STARTED


# --- closing ---------------------------------------------------------------------------------------

def test_the_study_closes_itself_when_every_item_has_its_raters(client, user, make_study):
    study = make_study("likert", platform="prolific", raters_per_item=2, items_per_assignment=6)
    raters = []
    for pid in ("a", "b"):
        rater_client = Client()
        raters.append((rater_client, enter(rater_client, study, f"PROLIFIC_PID={prolific_id(pid)}&SESSION_ID={prolific_id('s-' + pid + '')}")))
    finish(*raters[0])
    study.refresh_from_db()
    assert study.status == Study.Status.PUBLISHED  # one of two raters per item so far
    finish(*raters[1])
    study.refresh_from_db()
    assert study.status == Study.Status.CLOSED and study.closed_at is not None
    refused = Client().get(f"/r/{study.slug}/?PROLIFIC_PID=2e7d2c03a9507ae265ecf5b5&SESSION_ID=3af3c8de9fba8381f875a644")
    assert refused.status_code == 403 and "closed" in refused.content.decode()
    client.force_login(user)
    page = client.get(f"/studies/{study.slug}/").content.decode()
    assert 'data-testid="closed-reason"' in page and "every item has its 2 rater(s)" in page


def test_the_study_closes_at_its_closing_time_on_access_and_started_raters_may_finish(make_study):
    study = make_study("likert", platform="prolific", items_per_assignment=1)
    configure(study, closes_at=(timezone.now() + timedelta(hours=1)).isoformat())
    client = Client()
    started = enter(client, study, "PROLIFIC_PID=f408830bcc7fab3708191722&SESSION_ID=e8bc163c82eee18733288c7d")
    configure(study, closes_at=(timezone.now() - timedelta(minutes=1)).isoformat())
    late = Client().get(f"/r/{study.slug}/?PROLIFIC_PID=089001a35679a33ef3db0ca3&SESSION_ID=ad328846aa18b32a33581637")
    assert late.status_code == 403 and "closed" in late.content.decode()
    study.refresh_from_db()
    assert study.status == Study.Status.CLOSED and not Assignment.objects.filter(rater__external_id="late").exists()
    assert finish(client, started).status == Assignment.Status.SUBMITTED  # the rater already at work finishes


def test_the_periodic_task_closes_due_studies_and_expires_stale_assignments(settings, make_study):
    assert settings.CELERY_BEAT_SCHEDULE["studies-close-due"]["task"] == tasks.studies_close_due.name
    due = make_study("likert", platform="prolific")
    later = make_study("rme", platform="prolific")
    configure(due, closes_at="2020-01-01T00:00:00+00:00")
    configure(later, closes_at="2999-01-01T00:00:00+00:00", time_limit_minutes=5)
    stale = rater_entry.assignment_enter(study=later, platform="prolific", external_id="x", acceptance_id="s")
    Assignment.objects.filter(pk=stale.pk).update(started_at=timezone.now() - timedelta(minutes=6))
    assert tasks.studies_close_due() == {"expired": 1, "closed": 1}
    assert dict(Study.objects.filter(pk__in=[due.pk, later.pk]).values_list("slug", "status")) == {
        due.slug: "closed", later.slug: "published"}
    assert tasks.studies_close_due() == {"expired": 0, "closed": 0}


def test_the_study_page_shows_the_closing_time_or_why_it_is_ignored(client, user, make_study):
    study = make_study("likert", platform="prolific")
    client.force_login(user)
    configure(study, closes_at="2999-01-01T18:00:00+00:00")
    page = client.get(f"/studies/{study.slug}/").content.decode()
    assert 'data-testid="closes-at"' in page and "2999-01-01 18:00" in page
    configure(study, closes_at="next tuesday")
    page = client.get(f"/studies/{study.slug}/").content.decode()
    assert "closes_at is not a date and time" in page
    assert Client().get(f"/r/{study.slug}/?PROLIFIC_PID=148de9c5a7a44d19e56cd9ae&SESSION_ID=043a718774c572bd8a25adbe").status_code == 302  # ignored, still open


def test_returned_and_abandoned_assignments_give_their_items_back(make_study):
    study = make_study("likert", platform="prolific", raters_per_item=1, items_per_assignment=3)
    first = rater_entry.assignment_enter(study=study, platform="prolific", external_id="a", acceptance_id="s1")
    second = rater_entry.assignment_enter(study=study, platform="prolific", external_id="b", acceptance_id="s2")
    with pytest.raises(AssignmentRefused):
        rater_entry.assignment_enter(study=study, platform="prolific", external_id="c", acceptance_id="s3")
    review.assignment_abandon(assignment=second, reason="the Prolific submission is RETURNED")
    third = rater_entry.assignment_enter(study=study, platform="prolific", external_id="c", acceptance_id="s3")
    items = lambda a: set(AssignmentItem.objects.filter(assignment=a).values_list("item", flat=True))  # noqa: E731
    assert items(third) == items(second) and not items(third) & items(first)


# --- MTurk: a second HIT of a finished study -------------------------------------------------------

def test_an_mturk_worker_on_a_second_hit_is_told_to_return_it_and_nothing_is_posted(make_study):
    study = make_study("likert", platform="mturk", items_per_assignment=1)
    client = Client()
    first = finish(client, enter(client, study, "workerId=W7&assignmentId=ASGFIRST&hitId=H1"
                                                "&turkSubmitTo=https://www.mturk.com"))
    second = Client().get(f"/r/{study.slug}/?workerId=W7&assignmentId=ASGSECOND&hitId=H2"
                          "&turkSubmitTo=https://www.mturk.com")
    page = second.content.decode()
    assert second.status_code == 403 and "return this HIT" in page
    assert "ASGFIRST" not in page and first.completion_code not in page and "<form" not in page
    assert Assignment.objects.count() == 1


# --- the settings behind all this ------------------------------------------------------------------

def test_rater_settings_are_checked_field_by_field_and_a_bad_one_changes_nothing(make_study):
    study = make_study("likert", platform="prolific")
    authoring.study_rater_settings_set(study=study, values={
        "completion_code": "C0DE1", "screened_out_code": "OUT1", "time_limit_minutes": "45",
        "closes_at": "2999-06-01T12:00:00+00:00", "completion_url": ""})
    study.refresh_from_db()
    assert study.platform_config == {"completion_code": "C0DE1", "screened_out_code": "OUT1",
                                     "time_limit_minutes": 45, "closes_at": "2999-06-01T12:00:00+00:00"}
    with pytest.raises(ValidationError) as bad:
        authoring.study_rater_settings_set(study=study, values={
            "completion_code": "has space", "completion_url": "http://plain.example.org", "time_limit_minutes": "0",
            "closes_at": "2001-01-01T00:00:00+00:00", "colour": "red"})
    assert set(bad.value.message_dict) == {"completion_code", "completion_url", "time_limit_minutes", "closes_at",
                                           "colour"}
    with pytest.raises(ValidationError) as same:
        authoring.study_rater_settings_set(study=study, values={"screened_out_code": "C0DE1"})
    assert "differ" in same.value.message_dict["screened_out_code"][0]
    study.refresh_from_db()
    assert study.platform_config["completion_code"] == "C0DE1" and study.platform_config["screened_out_code"] == "OUT1"
    authoring.study_rater_settings_set(study=study, values={"screened_out_code": "", "closes_at": " "})
    study.refresh_from_db()
    assert "screened_out_code" not in study.platform_config and "closes_at" not in study.platform_config


def test_the_study_page_saves_rater_settings_and_reports_errors(client, user, make_study):
    study = make_study("likert", platform="prolific")
    client.force_login(user)
    saved = client.post(f"/studies/{study.slug}/rater-settings/", {"completion_code": "C0DE9", "time_limit_minutes": "30",
                                                                  "close_when_complete": "on"}, follow=True)
    assert "Rater settings saved" in saved.content.decode() and 'value="C0DE9"' in saved.content.decode()
    refused = client.post(f"/studies/{study.slug}/rater-settings/", {"completion_code": "C0DE9",
                                                                    "time_limit_minutes": "lots"}, follow=True)
    assert "time_limit_minutes: must be a whole number" in refused.content.decode()
    study.refresh_from_db()
    assert study.platform_config == {"completion_code": "C0DE9", "time_limit_minutes": 30}
    client.post(f"/studies/{study.slug}/rater-settings/", {"completion_code": "C0DE9"})  # box unticked
    study.refresh_from_db()
    assert study.platform_config == {"completion_code": "C0DE9", "close_when_complete": False}


def test_a_study_switched_to_stay_open_does_not_close_when_complete(make_study):
    study = make_study("likert", platform="prolific", raters_per_item=1, items_per_assignment=6)
    authoring.study_rater_settings_set(study=study, values={"close_when_complete": ""})
    client = Client()
    finish(client, enter(client, study, "PROLIFIC_PID=f905b19542ed08c9a9c26543&SESSION_ID=e8bc163c82eee18733288c7d"))
    study.refresh_from_db()
    assert study.status == Study.Status.PUBLISHED and closing.study_close_if_done(study=study) is None
    authoring.study_rater_settings_set(study=study, values={"close_when_complete": True})
    assert closing.study_close_if_done(study=study) == "every item has its 1 rater(s)"
