"""Practice for invitation links (studies.rating.invites.invite_enter, studies.onboarding): an
invitee of a study with practice items gets the practice before a slot, as the invite's rater; the
invite is claimed by the first browser even so (another browser is refused); a failed invitee holds
no slot and finds the same failed attempt on every reload, with a polite page and no platform code;
a pass gives the slot that the invitation link then resumes."""
import re

import pytest
from django.test import Client
from django.urls import reverse

from studies.authoring import services as authoring
from studies.designs.ratings import field_name
from studies.errors import AssignmentRefused, PracticeRequired
from studies.models import Assignment, Invite, PracticeAnswer, PracticeAttempt, Rater
from studies.onboarding import selectors as onboarding_selectors
from studies.onboarding import services as onboarding
from studies.rating import invites, practice_gate
from tests.visible import visible_text

pytestmark = pytest.mark.django_db

def consented(client, page):
    """Consent comes first: on the start page before the practice, tick the box and go on."""
    html = page.content.decode()
    if 'name="agree"' not in html:
        return page
    token = re.search(r'name="form_token" value="([0-9a-f]+)"', html).group(1)
    attempt = PracticeAttempt.objects.order_by("-pk").first()
    return client.post(reverse("raters:practice", args=[attempt.token]), {"form_token": token, "agree": "yes"},
                       follow=True)



def practice_study(make_study):
    """A published invitation-link Likert study with two practice items, pass mark 2."""
    study = make_study("likert", publish=False, platform="invite", raters_per_item=2, items_per_assignment=3)
    onboarding.practice_item_create(study=study, context="A: Hi!\nB: Hello, how can I help?",
                                    responses=["I need a table for two tonight.", "Banana seventeen."],
                                    rules=[{"response": 2, "max": 2}], explanation="B does not answer.")
    onboarding.practice_item_create(study=study, context="A: Where is the station?",
                                    responses=["Second street on the left.", "I like trains."],
                                    rules=[{"greater": 1, "than": 2}], explanation="A gives the way; B does not.")
    onboarding.onboarding_configure(study=study, pass_mark=2)
    authoring.study_publish(study=study)
    study.refresh_from_db()
    return study


def post(study, item, values):
    return {field_name(rid, c.name, item.response_ids): str(v) for c in study.criteria.all()
            for rid, v in zip(item.response_ids, values, strict=True)}


def take_practice(attempt, study, answers):
    attempt = onboarding.practice_attempt_consent(attempt=attempt)  # consent first, as the consent page records
    for item, values in zip(onboarding_selectors.practice_items(study), answers, strict=True):
        _, errors = onboarding.practice_answer(attempt=attempt, item=item, post=post(study, item, values))
        assert errors == {}
    attempt.refresh_from_db()
    return attempt


def test_invite_practice_required_as_the_invites_rater_and_the_invite_claimed(make_study):
    study = practice_study(make_study)
    invite = invites.invite_create(study=study)
    with pytest.raises(PracticeRequired) as required:
        invites.invite_enter(study=study, token=invite.token, browser_secret="browser-one")
    identity = required.value.identity
    assert (identity.platform, identity.external_id, identity.acceptance_id) == ("invite", f"invite-{invite.pk}", "")
    assert not Assignment.objects.exists() and not Rater.objects.exists()
    invite.refresh_from_db()
    assert invite.claimed_at is not None  # claimed by the practising browser: nobody else can take it over
    with pytest.raises(AssignmentRefused) as refused:
        invites.invite_enter(study=study, token=invite.token, browser_secret="browser-two")
    assert refused.value.reason == AssignmentRefused.INVITE_CLAIMED
    assert not practice_gate.practice_needed(make_study("likert"), "invite", "invite-1")  # no practice, no gate


def test_invite_practice_failed_holds_no_slot_and_cannot_be_retried(make_study):
    study = practice_study(make_study)
    invite = invites.invite_create(study=study)
    with pytest.raises(PracticeRequired) as required:
        invites.invite_enter(study=study, token=invite.token, browser_secret="browser-one")
    identity = required.value.identity
    attempt = onboarding.practice_attempt_begin(study=study, platform=identity.platform,
                                                external_id=identity.external_id, platform_data=identity.platform_data)
    attempt = take_practice(attempt, study, [(1, 5), (1, 5)])  # B above 2, B not above A: both disagree
    assert attempt.status == PracticeAttempt.Status.FAILED
    with pytest.raises(PracticeRequired) as again:  # a reload of the invitation: still no slot
        invites.invite_enter(study=study, token=invite.token, browser_secret="browser-one")
    same = onboarding.practice_attempt_begin(study=study, platform="invite", external_id=again.value.identity.external_id)
    assert same.pk == attempt.pk and same.status == PracticeAttempt.Status.FAILED
    assert not Assignment.objects.exists() and not Rater.objects.exists()


def test_invite_practice_passed_gives_the_slot_the_link_resumes(make_study):
    study = practice_study(make_study)
    invite = invites.invite_create(study=study)
    with pytest.raises(PracticeRequired) as required:
        invites.invite_enter(study=study, token=invite.token, browser_secret="browser-one")
    identity = required.value.identity
    attempt = onboarding.practice_attempt_begin(study=study, platform=identity.platform,
                                                external_id=identity.external_id, platform_data=identity.platform_data)
    attempt = take_practice(attempt, study, [(5, 1), (5, 1)])
    assert attempt.status == PracticeAttempt.Status.PASSED
    assignment = onboarding.practice_continue(attempt=attempt)
    assert assignment.rater.external_id == f"invite-{invite.pk}" and assignment.platform_data == {"invite": invite.pk}
    resumed = invites.invite_enter(study=study, token=invite.token, browser_secret="browser-one")
    assert resumed.pk == assignment.pk and Assignment.objects.count() == 1


def _fill(client, page, study, values):
    html = page.content.decode()
    token = re.search(r'name="form_token" value="([0-9a-f]+)"', html).group(1)
    action = re.search(r'<form method="post" id="item-form"[^>]* action="([^"]+)"', html).group(1)
    item = onboarding_selectors.practice_items(study)[int(action.rstrip("/").rsplit("/", 1)[1])]
    return client.post(action, {"form_token": token, "active_ms": "900", **post(study, item, values)})


def test_invite_practice_pages_fail_politely_without_a_code_and_a_reload_changes_nothing(make_study):
    study = practice_study(make_study)
    invite = invites.invite_create(study=study)
    client = Client()
    link = f"/r/{study.slug}/?invite={invite.token}"
    first = client.get(link)
    assert first.status_code == 302 and "/r/p/" in first["Location"]
    assert first.cookies["concord_browser"]["httponly"]  # the browser keeps its claim on the way to the practice
    page = consented(client, client.get(first["Location"], follow=True))
    assert b"Practice 1 of 2" in page.content and not Assignment.objects.exists()
    assert Client().get(link).status_code == 403  # another browser: the invite is in use
    _fill(client, page, study, (1, 5))
    attempt = PracticeAttempt.objects.get()
    _fill(client, client.get(reverse("raters:practice_item", args=[attempt.token, 1])), study, (1, 5))
    result = client.get(reverse("raters:practice", args=[attempt.token]))
    html = result.content.decode()
    assert result.status_code == 200 and "Thank you for your time" in html and 'data-result="failed"' in html
    assert "you may close this page" in html and "completion-code" not in html
    assert "HIT" not in visible_text(html) and "Prolific" not in visible_text(html)
    reload = client.get(link, follow=True)  # reloading the invitation: the same failed page, no new practice
    assert 'data-result="failed"' in reload.content.decode()
    assert PracticeAttempt.objects.count() == 1 and PracticeAnswer.objects.count() == 2
    assert not Assignment.objects.exists() and not Rater.objects.exists()
    assert Invite.objects.get().claimed_at is not None


def test_invite_practice_pages_pass_then_the_study_starts(make_study):
    study = practice_study(make_study)
    invite = invites.invite_create(study=study)
    client = Client()
    link = f"/r/{study.slug}/?invite={invite.token}"
    page = consented(client, client.get(link, follow=True))
    _fill(client, page, study, (5, 1))
    attempt = PracticeAttempt.objects.get()
    _fill(client, client.get(reverse("raters:practice_item", args=[attempt.token, 1])), study, (5, 1))
    result = client.get(reverse("raters:practice", args=[attempt.token]))
    assert b"you passed the practice" in result.content
    token = re.search(r'name="form_token" value="([0-9a-f]+)"', result.content.decode()).group(1)
    go = client.post(reverse("raters:practice_continue", args=[attempt.token]), {"form_token": token})
    assignment = Assignment.objects.get()
    assert go.status_code == 302 and go["Location"] == reverse("raters:start", args=[assignment.token])
    assert client.get(link)["Location"] == go["Location"]  # the invitation now resumes the slot
