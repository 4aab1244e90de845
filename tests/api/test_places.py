"""Invites and places through the API: an opened link holds a place only for the time
limit (the default, or the researcher's), invites are listed and revoked, assignments listed and
freed; another researcher sees none of it (404) and can change none of it."""
from datetime import timedelta

import pytest
from django.utils import timezone

from studies.errors import AssignmentRefused
from studies.models import Assignment, Invite
from studies.rating import invites, review
from tests.api.test_convention import client_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def small_study(make_study):
    """Two places: 6 items, 6 per assignment, 2 raters per item."""
    return make_study("likert", raters_per_item=2, items_per_assignment=6)


def open_link(study, invite, browser: str):
    return invites.invite_enter(study=study, token=invite.token, browser_secret=browser)


def test_an_abandoned_open_holds_a_place_only_for_the_default_time_limit(api, small_study):
    study = small_study
    assert api.get(f"/api/studies/{study.slug}/").json()["time_limit_minutes"] == review.DEFAULT_TIME_LIMIT_MINUTES
    links = [invites.invite_create(study=study, label=name) for name in ("a", "b", "c")]
    opened = [open_link(study, links[i], f"browser-{i}") for i in (0, 1)]  # two opens, then nobody rates
    with pytest.raises(AssignmentRefused):
        open_link(study, links[2], "browser-2")
    Assignment.objects.filter(pk__in=[a.pk for a in opened]).update(
        started_at=timezone.now() - timedelta(minutes=review.DEFAULT_TIME_LIMIT_MINUTES + 1))
    third = open_link(study, links[2], "browser-2")
    assert third.status == "started" and Assignment.objects.get(pk=opened[0].pk).status == "abandoned"
    # the researcher changes the limit, and the API says when a place is freed
    assert api.post(f"/api/studies/{study.slug}/rater-settings/", {"time_limit_minutes": "30"},
                    format="json").status_code == 200
    listed = api.get(f"/api/studies/{study.slug}/assignments/", {"status": "started"}).json()["results"]
    assert [a["id"] for a in listed] == [third.pk]
    expires = timezone.datetime.fromisoformat(listed[0]["expires_at"])
    assert abs((expires - third.started_at).total_seconds() - 30 * 60) < 1


def test_invites_are_listed_and_revoked_which_frees_the_place(api, small_study):
    study = small_study
    created = api.post(f"/api/studies/{study.slug}/invites/", {"label": "ann"}, format="json").json()
    invite = Invite.objects.get(pk=created["id"])
    assignment = open_link(study, invite, "ann-browser")
    listed = api.get(f"/api/studies/{study.slug}/invites/").json()
    assert listed["count"] == 1 and listed["results"][0]["status"] == "claimed"
    assert listed["results"][0]["assignment"] == assignment.pk
    revoked = api.post(f"/api/studies/{study.slug}/invites/{invite.pk}/revoke/")
    assert revoked.status_code == 200 and revoked.json()["status"] == "revoked"
    assert Assignment.objects.get(pk=assignment.pk).status == "abandoned"
    with pytest.raises(AssignmentRefused):  # its own browser cannot come back either
        open_link(study, invite, "ann-browser")


def test_a_started_place_is_freed_once_and_a_finished_one_is_a_conflict(api, small_study):
    study = small_study
    assignment = open_link(study, invites.invite_create(study=study), "b1")
    freed = api.post(f"/api/studies/{study.slug}/assignments/{assignment.pk}/free/")
    assert freed.status_code == 200 and freed.json()["status"] == "abandoned"
    again = api.post(f"/api/studies/{study.slug}/assignments/{assignment.pk}/free/")
    assert again.status_code == 409 and "abandoned" in again.json()["detail"]
    bad = api.get(f"/api/studies/{study.slug}/assignments/", {"status": "lost"})
    assert bad.status_code == 400


def test_another_researcher_can_neither_see_nor_change_invites_or_places(small_study, other_user):
    study = small_study
    invite = invites.invite_create(study=study, label="ann")
    assignment = open_link(study, invite, "ann-browser")
    bob = client_of(other_user)
    for path in (f"/api/studies/{study.slug}/invites/", f"/api/studies/{study.slug}/assignments/"):
        assert bob.get(path).status_code == 404
    assert bob.post(f"/api/studies/{study.slug}/invites/{invite.pk}/revoke/").status_code == 404
    assert bob.post(f"/api/studies/{study.slug}/assignments/{assignment.pk}/free/").status_code == 404
    invite.refresh_from_db()
    assert invite.revoked_at is None and Assignment.objects.get(pk=assignment.pk).status == "started"
