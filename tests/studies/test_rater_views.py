"""Rater pages without a browser: identities from each platform, authorization by token, form
tokens instead of cookie CSRF, double submit, autosave, closed and expired studies, researcher
preview, safe instructions."""
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from studies.authoring import services as authoring
from studies.designs.ratings import field_name
from studies.models import Assignment, AssignmentItem, Rater, Rating, Study
from studies.rating import answers as answering
from studies.rating import closing, form_tokens, invites
from studies.rating import entry as rater_entry
from studies.rating.pages import render_markdown
from tests.visible import visible_text

pytestmark = pytest.mark.django_db

MTURK = "workerId=W1&assignmentId=A1&hitId=H1&turkSubmitTo=https%3A%2F%2Fwww.mturk.com"


def form_token_in(page: str) -> str:
    return re.search(r'name="form_token" value="([0-9a-f]+)"', page).group(1)


def enter(client, study, query):
    response = client.get(f"/r/{study.slug}/?{query}")
    assert response.status_code == 302, response.content.decode()[:300]
    token = response["Location"].split("/")[3]
    page = client.get(f"/r/a/{token}/").content.decode()
    client.post(f"/r/a/{token}/", {"agree": "yes", "form_token": form_token_in(page)})
    return Assignment.objects.get(token=token)


def post_item(client, assignment, position, data):
    return client.post(f"/r/a/{assignment.token}/items/{position}/",
                       {**data, "form_token": form_tokens.form_token(assignment.token, "item")})


def post_questionnaire(client, assignment, data):
    return client.post(f"/r/a/{assignment.token}/questionnaire/",
                       {**data, "form_token": form_tokens.form_token(assignment.token, "questionnaire")})


def likert_answers(slot, value=4):
    return {field_name(r, c, slot.response_order): value for r in slot.response_order for c in ("readability", "coherence")}


def rows():
    return Rater.objects.count(), Assignment.objects.count(), Rating.objects.count()


@pytest.mark.parametrize(("query", "platform", "worker", "acceptance", "data"), [
    (MTURK, "mturk", "W1", "A1", {"assignmentId": "A1", "hitId": "H1", "turkSubmitTo": "https://www.mturk.com"}),
    ("PROLIFIC_PID=fbeae7c18667b6987518f3ae&STUDY_ID=3696ad59777e09d5f2daacb5&SESSION_ID=ad667b78ba8ed0275868fcc1", "prolific",
     "fbeae7c18667b6987518f3ae", "ad667b78ba8ed0275868fcc1",
     {"STUDY_ID": "3696ad59777e09d5f2daacb5", "SESSION_ID": "ad667b78ba8ed0275868fcc1"}),
])
def test_platform_identities_are_stored_with_the_assignment(client, make_study, query, platform, worker, acceptance,
                                                             data):
    study = make_study("likert", platform=platform)
    assignment = enter(client, study, query)
    assert (assignment.rater.platform, assignment.rater.external_id, assignment.acceptance_id, assignment.platform_data) \
        == (platform, worker, acceptance, data)


# --- framing ----------------------------------------------------------------------------------------

def test_rater_pages_may_be_framed_by_mturk_and_configured_origins_only(client, make_study, settings):
    settings.CONCORD_FRAME_ANCESTORS = ["https://lab.example.org"]
    study = make_study("likert", platform="mturk")
    entry = client.get(f"/r/{study.slug}/?{MTURK}")
    assignment = Assignment.objects.get()
    for response in (entry, client.get(f"/r/a/{assignment.token}/"), client.get("/r/no-such-study/?x=1")):
        assert "X-Frame-Options" not in response
        policy = response["Content-Security-Policy"]
        ancestors = re.search(r"frame-ancestors ([^;]+)", policy).group(1).split()
        assert ancestors == ["'self'", "https://worker.mturk.com", "https://workersandbox.mturk.com",
                             "https://www.mturk.com", "https://requester.mturk.com",
                             "https://requestersandbox.mturk.com", "https://lab.example.org"]
    for other in (client.get("/accounts/login/"), client.get("/api/schema/")):
        assert other["X-Frame-Options"] == "DENY"
        assert "frame-ancestors 'none'" in other["Content-Security-Policy"]  # the site-wide policy


def test_a_frame_origin_that_is_not_an_origin_is_refused(client, make_study, settings):
    from django.core.exceptions import ImproperlyConfigured

    from studies.rating.framing import rater_policy
    settings.CONCORD_FRAME_ANCESTORS = ["https://ok.example; script-src *"]
    with pytest.raises(ImproperlyConfigured, match="CONCORD_FRAME_ANCESTORS"):
        rater_policy()


# --- form tokens instead of cookie CSRF -------------------------------------------------------------

def test_rater_posts_need_the_form_token_and_no_cookie(make_study):
    study = make_study("likert", platform="prolific", items_per_assignment=1)
    strict = Client(enforce_csrf_checks=True)
    token = strict.get(f"/r/{study.slug}/?PROLIFIC_PID=7ce12ba8782a32f74357cefb&SESSION_ID=043a718774c572bd8a25adbe")["Location"].split("/")[3]
    assignment = Assignment.objects.get(token=token)
    other = Assignment.objects.create(study=study, rater=Rater.objects.create(platform="prolific", external_id="o"),
                                      experiment=study.experiment, seed=1, started_at=timezone.now())
    for bad in ({}, {"form_token": "0" * 64}, {"form_token": form_tokens.form_token(other.token, "consent")},
                {"form_token": form_tokens.form_token(token, "item")}):  # another assignment's or purpose's token
        refused = strict.post(f"/r/a/{token}/", {"agree": "yes", **bad})
        assert refused.status_code == 403 and "nothing was saved" in refused.content.decode()
    assert Assignment.objects.get(pk=assignment.pk).consented_at is None
    page = strict.get(f"/r/a/{token}/")
    assert "csrftoken" not in page.cookies and "csrfmiddlewaretoken" not in page.content.decode()
    fresh = Client(enforce_csrf_checks=True)  # no cookies at all, as in a cross-site frame
    assert fresh.post(f"/r/a/{token}/", {"agree": "yes", "form_token": form_token_in(page.content.decode())}).status_code == 302
    slot = assignment.assignment_items.get()
    assert fresh.post(f"/r/a/{token}/items/0/", likert_answers(slot)).status_code == 403
    assert not Rating.objects.exists() and AssignmentItem.objects.get(pk=slot.pk).started_at is None
    assert post_item(fresh, assignment, 0, likert_answers(slot)).status_code == 302
    assert post_questionnaire(fresh, assignment, {"prior_rating_experience": "yes"}).status_code == 400
    answers = {"prior_rating_experience": "yes", "prior_agent_experience": "no"}
    assert fresh.post(f"/r/a/{token}/questionnaire/", answers).status_code == 403
    assert post_questionnaire(fresh, assignment, answers).status_code == 302
    assert Assignment.objects.get(pk=assignment.pk).status == "submitted"


def test_researcher_pages_keep_django_csrf(user, make_study):
    study = make_study("likert", publish=False)
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(user)
    assert strict.post(f"/studies/{study.slug}/publish/").status_code == 403
    assert Study.objects.get(pk=study.pk).status == "draft"


# --- identity ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("platform", "query", "named"), [
    ("invite", "PROLIFIC_PID=12ed8d14a55fdb4701ee8219&SESSION_ID=043a718774c572bd8a25adbe", "PROLIFIC_PID"),
    ("invite", MTURK, "workerId"),
    ("mturk", "PROLIFIC_PID=12ed8d14a55fdb4701ee8219&SESSION_ID=043a718774c572bd8a25adbe", "PROLIFIC_PID"),
    ("prolific", MTURK, "workerId"),
    ("prolific", "invite=whatever", "invite"),
])
def test_only_the_studys_own_platform_identity_is_accepted(client, make_study, platform, query, named):
    study = make_study("likert", platform=platform)
    response = client.get(f"/r/{study.slug}/?{query}")
    assert response.status_code == 400 and f"{named} is not accepted here" in response.content.decode()
    assert rows() == (0, 0, 0)


@pytest.mark.parametrize(("platform", "query", "message"), [
    ("mturk", "workerId=&assignmentId=A1&hitId=H1&turkSubmitTo=https://www.mturk.com", "The link parameter workerId is blank."),
    ("mturk", f"workerId={'A' * 121}&assignmentId=A1&hitId=H1&turkSubmitTo=https://www.mturk.com",
     "The link parameter workerId is longer than 120 characters"),
    ("mturk", "workerId=A%00B&assignmentId=A1&hitId=H1&turkSubmitTo=https://www.mturk.com", "The link parameter workerId contains control"),
    ("mturk", "workerId=A1&assignmentId=A%001&hitId=H1&turkSubmitTo=https://www.mturk.com", "The link parameter assignmentId contains control"),
    ("mturk", "workerId=A1&assignmentId=A1&hitId=H1&turkSubmitTo=https://evil.example", "The link parameter turkSubmitTo must be one of"),
    ("mturk", "workerId=A1&assignmentId=A1&hitId=H1", "The link lacks turkSubmitTo."),
    ("mturk", "workerId=A1&hitId=H1&turkSubmitTo=https://www.mturk.com", "The link lacks assignmentId."),
    ("mturk", "workerId=A1-B&assignmentId=A1&hitId=H1&turkSubmitTo=https://www.mturk.com", "letters and digits"),
    ("prolific", "PROLIFIC_PID=%20%20&SESSION_ID=043a718774c572bd8a25adbe", "The link parameter PROLIFIC_PID is blank."),
    ("prolific", f"PROLIFIC_PID={'p' * 121}&SESSION_ID=043a718774c572bd8a25adbe", "The link parameter PROLIFIC_PID is longer than 120"),
    ("prolific", "PROLIFIC_PID=p%00&SESSION_ID=043a718774c572bd8a25adbe", "The link parameter PROLIFIC_PID contains control"),
    ("prolific", "PROLIFIC_PID=148de9c5a7a44d19e56cd9ae", "The link lacks SESSION_ID."),
    ("invite", "invite=%00", "The link parameter invite contains control"),
])
def test_bad_platform_parameters_are_a_400_naming_them_and_write_nothing(client, make_study, platform, query, message):
    study = make_study("likert", platform=platform)
    response = client.get(f"/r/{study.slug}/?{query}")
    assert response.status_code == 400 and message in response.content.decode()
    assert rows() == (0, 0, 0)


def test_lone_surrogates_in_a_parameter_are_refused():
    from studies.rating.platforms import IdentityError, identity_from
    with pytest.raises(IdentityError, match="PROLIFIC_PID contains invalid characters") as caught:
        identity_from({"PROLIFIC_PID": "p\ud800", "SESSION_ID": "s"}, "prolific")
    assert caught.value.parameter == "PROLIFIC_PID"


def test_mturk_worker_ids_are_normalised_and_bound_to_their_assignment_id(client, make_study, user):
    experiment = authoring.experiment_create(owner=user, title="Between subjects")
    study = make_study("likert", platform="mturk", experiment=experiment)
    other_condition = make_study("rme", platform="mturk", experiment=experiment)
    first = enter(client, study, "workerId=A1REALWORKER&assignmentId=ASG1&hitId=H1&turkSubmitTo=https://www.mturk.com")
    post_item(client, first, 0, likert_answers(first.assignment_items.get(position=0)))
    again = Client().get(f"/r/{study.slug}/?workerId=%20a1realworker&assignmentId=ASG1&hitId=H1"
                         f"&turkSubmitTo=https://www.mturk.com")
    assert again["Location"] == f"/r/a/{first.token}/"  # the same worker, the same acceptance: resume
    # the public worker id with another acceptance gets nothing of the first assignment
    thief = Client().get(f"/r/{study.slug}/?workerId=a1realworker&assignmentId=ASG2&hitId=H2"
                         f"&turkSubmitTo=https://www.mturk.com")
    page = thief.content.decode()
    assert thief.status_code == 403 and "already done this study" in page and "return this HIT" in page
    assert first.token not in page and "CC-" not in visible_text(page)  # a token may hold "CC-"
    elsewhere = Client().get(f"/r/{other_condition.slug}/?workerId=a1realworker&assignmentId=ASG3&hitId=H3"
                             f"&turkSubmitTo=https://www.mturk.com")
    assert elsewhere.status_code == 403 and "through another link" in elsewhere.content.decode()
    # someone else presenting the first worker's assignment id is refused too
    other = Client().get(f"/r/{study.slug}/?workerId=B2&assignmentId=ASG1&hitId=H1&turkSubmitTo=https://www.mturk.com")
    assert other.status_code == 403 and first.token not in other.content.decode()
    assert (Rater.objects.count(), Assignment.objects.count(), Rating.objects.count()) == (1, 1, 8)


def test_prolific_sessions_bind_the_assignment(client, make_study):
    study = make_study("likert", platform="prolific")
    first = enter(client, study, "PROLIFIC_PID=f64551fcd6f07823cb87971c&STUDY_ID=043a718774c572bd8a25adbe&SESSION_ID=7b49643cd7a067223da175a1")
    assert Client().get(f"/r/{study.slug}/?PROLIFIC_PID=f64551fcd6f07823cb87971c&STUDY_ID=043a718774c572bd8a25adbe&SESSION_ID=7b49643cd7a067223da175a1")["Location"] == f"/r/a/{first.token}/"
    other = Client().get(f"/r/{study.slug}/?PROLIFIC_PID=f64551fcd6f07823cb87971c&STUDY_ID=043a718774c572bd8a25adbe&SESSION_ID=c3da66551fe79d707fc5dfa8")
    assert other.status_code == 403 and "return this submission on Prolific" in other.content.decode()
    assert first.token not in other.content.decode() and Assignment.objects.count() == 1


def test_the_done_page_posts_only_the_bound_assignment_to_mturk(client, make_study):
    study = make_study("likert", platform="mturk", items_per_assignment=1)
    assignment = enter(client, study, "workerId=W9&assignmentId=ASG9&hitId=H1"
                                      "&turkSubmitTo=https%3A%2F%2Fworkersandbox.mturk.com%2F")
    post_item(client, assignment, 0, likert_answers(assignment.assignment_items.get()))
    post_questionnaire(client, assignment, {"prior_rating_experience": "yes", "prior_agent_experience": "no"})
    page = client.get(f"/r/a/{assignment.token}/done/").content.decode()
    assert 'action="https://workersandbox.mturk.com/mturk/externalSubmit"' in page
    assert re.findall(r'name="assignmentId" value="([^"]*)"', page) == ["ASG9"]
    # a row whose stored host is not MTurk's (e.g. older data) gets no form at all
    Assignment.objects.filter(pk=assignment.pk).update(platform_data={"turkSubmitTo": "https://evil.example"})
    page = client.get(f"/r/a/{assignment.token}/done/").content.decode()
    assert "evil.example" not in page and "<form" not in page


@pytest.mark.parametrize(("status", "shown"), [("abandoned", "This task was abandoned"),
                                               ("rejected", "This work was not accepted")])
def test_a_returning_worker_whose_work_ended_is_told_so(client, make_study, status, shown):
    study = make_study("likert", platform="prolific", items_per_assignment=1)
    assignment = enter(client, study, "PROLIFIC_PID=3c482346f375027677fa8a0d&SESSION_ID=e8bc163c82eee18733288c7d")
    Assignment.objects.filter(pk=assignment.pk).update(status=status, completion_code="CC-OLD")
    for response in (client.get(f"/r/{study.slug}/?PROLIFIC_PID=3c482346f375027677fa8a0d&SESSION_ID=e8bc163c82eee18733288c7d"),
                     client.get(f"/r/a/{assignment.token}/done/"), client.get(f"/r/a/{assignment.token}/items/0/")):
        page = response.content.decode()
        assert response.status_code == 410 and shown in page
        assert "CC-OLD" not in page and "<button" not in page


def test_a_returning_worker_whose_time_ran_out_is_told_so(client, make_study):
    study = make_study("likert", platform="prolific", items_per_assignment=1)
    Study.objects.filter(pk=study.pk).update(platform_config={"time_limit_minutes": 30})
    assignment = enter(client, study, "PROLIFIC_PID=5e0cf7bd1dfa3831788b0cf6&SESSION_ID=e8bc163c82eee18733288c7d")
    Assignment.objects.filter(pk=assignment.pk).update(started_at=timezone.now() - timedelta(minutes=31))
    for response in (client.get(f"/r/{study.slug}/?PROLIFIC_PID=5e0cf7bd1dfa3831788b0cf6&SESSION_ID=e8bc163c82eee18733288c7d"),
                     client.get(f"/r/a/{assignment.token}/done/")):
        assert response.status_code == 410 and "Time is up" in response.content.decode()


def test_mturk_preview_shows_the_instructions_only_while_the_study_takes_workers(client, make_study):
    study = make_study("likert", platform="mturk", raters_per_item=1, items_per_assignment=6)
    Study.objects.filter(pk=study.pk).update(instructions="Judge **carefully**.")
    url = f"/r/{study.slug}/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=H1"
    preview = client.get(url)
    page = preview.content.decode()
    assert preview.status_code == 200 and "Accept the HIT" in page and "<strong>carefully</strong>" in page
    assert rows() == (0, 0, 0)
    enter(client, study, MTURK)  # takes every item once: the study is now full
    full = client.get(url)
    assert full.status_code == 410 and "Accept the HIT" not in full.content.decode()
    closing.study_close(study=study)
    closed = client.get(url)
    assert closed.status_code == 410 and "closed" in closed.content.decode()


def test_anonymous_visitors_cannot_tell_a_draft_study_from_an_unknown_slug(client, make_study):
    draft = make_study("likert", publish=False, platform="prolific")
    query = "?PROLIFIC_PID=148de9c5a7a44d19e56cd9ae&SESSION_ID=043a718774c572bd8a25adbe"
    unknown = client.get(f"/r/no-such-study/{query}")
    hidden = client.get(f"/r/{draft.slug}/{query}")
    preview = client.get(f"/r/{draft.slug}/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE")
    assert unknown.status_code == hidden.status_code == preview.status_code == 404
    assert unknown.content == hidden.content == preview.content
    assert rows() == (0, 0, 0)


def test_a_link_without_identity_stores_nothing(client, make_study):
    study = make_study("likert")
    response = client.get(f"/r/{study.slug}/")
    assert response.status_code == 400 and "does not say who you are" in response.content.decode()
    assert rows() == (0, 0, 0)


def test_closed_study_refuses_newcomers_without_writing_and_lets_started_raters_finish(client, make_study):
    study = make_study("likert", items_per_assignment=1, platform="prolific")
    assignment = enter(client, study, "PROLIFIC_PID=f408830bcc7fab3708191722&SESSION_ID=3f79bb7b435b05321651daef")
    closing.study_close(study=study)
    refused = Client().get(f"/r/{study.slug}/?PROLIFIC_PID=089001a35679a33ef3db0ca3&SESSION_ID=acac86c0e609ca906f632b0e")
    assert refused.status_code == 403 and "closed" in refused.content.decode()
    assert Rater.objects.count() == 1  # no row for the latecomer
    assert client.get(f"/r/{study.slug}/?PROLIFIC_PID=f408830bcc7fab3708191722&SESSION_ID=3f79bb7b435b05321651daef")["Location"] == f"/r/a/{assignment.token}/"
    post_item(client, assignment, 0, likert_answers(assignment.assignment_items.get()))
    done = post_questionnaire(client, assignment, {"prior_rating_experience": "yes", "prior_agent_experience": "no"})
    assert done.status_code == 302
    assert Assignment.objects.get(pk=assignment.pk).status == "submitted"


# --- invitations ------------------------------------------------------------------------------------

def test_an_invite_is_single_use_bound_to_the_first_browser(client, make_study):
    study = make_study("likert")
    invite = invites.invite_create(study=study, label="ana@lab.example")
    assert timedelta(days=13, hours=23) < invite.expires_at - timezone.now() <= timedelta(days=14)
    first = client.get(f"/r/{study.slug}/?invite={invite.token}")
    assert first.status_code == 302
    cookie = first.cookies["concord_browser"]
    assert cookie["httponly"] and cookie["path"] == "/r/"
    invite.refresh_from_db()
    assert invite.claimed_at is not None and cookie.value not in invite.browser_hash and len(invite.browser_hash) == 64
    second = Client().get(f"/r/{study.slug}/?invite={invite.token}")
    page = second.content.decode()
    assert second.status_code == 403 and "another browser" in page and first["Location"] not in page
    assert client.get(f"/r/{study.slug}/?invite={invite.token}")["Location"] == first["Location"]  # the first resumes
    assert Assignment.objects.get().rater.external_id == f"invite-{invite.pk}"
    assert Rater.objects.count() == 1


def test_invites_expire_are_per_study_and_cannot_be_minted_with_the_secret_key(client, make_study):
    from django.core import signing
    study, other = make_study("likert"), make_study("bws")
    expired = invites.invite_create(study=study, expires_in_days=1)
    expired.expires_at = timezone.now() - timedelta(seconds=1)
    expired.save()
    response = client.get(f"/r/{study.slug}/?invite={expired.token}")
    assert response.status_code == 410 and "expired" in response.content.decode()
    valid = invites.invite_create(study=study)
    assert client.get(f"/r/{other.slug}/?invite={valid.token}").status_code == 400
    assert client.get(f"/r/{study.slug}/?invite={valid.token[:-2]}xx").status_code == 400
    minted = signing.dumps({"study": study.slug, "invitee": "mallory"}, salt="concord.invite", compress=True)
    assert client.get(f"/r/{study.slug}/?invite={minted}").status_code == 400
    assert rows() == (0, 0, 0)


def test_invites_are_made_on_the_study_page_the_api_and_the_command(client, user, api, make_study):
    from io import StringIO

    from django.core.management import call_command
    study = make_study("likert")
    client.force_login(user)
    client.post(f"/studies/{study.slug}/invites/new/", {"label": "ana", "expires_in_days": "3"})
    made = study.invites.get()
    assert made.label == "ana" and timedelta(days=2, hours=23) < made.expires_at - timezone.now() <= timedelta(days=3)
    assert f"/r/c/{study.rater_key}/?invite={made.token}" in client.get(f"/studies/{study.slug}/").content.decode()
    response = api.post(f"/api/studies/{study.slug}/invites/", {"label": "bo"}, format="json")
    assert response.status_code == 201 and response.json()["url"].endswith(study.invites.get(label="bo").token)
    assert api.post(f"/api/studies/{study.slug}/invites/", {"expires_in_days": 0}, format="json").status_code == 400
    out = StringIO()
    call_command("invite_create", study.slug, "--count", "2", "--label", "group", "--base-url", "https://h.example", stdout=out)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"https://h.example/r/c/{study.rater_key}/?invite=")
    assert study.invites.count() == 4
    prolific = make_study("likert", platform="prolific")
    assert api.post(f"/api/studies/{prolific.slug}/invites/", {}, format="json").status_code == 400


# --- assignments: scope, answers, autosave ---------------------------------------------------------

def test_tokens_are_unguessable_and_scoped_to_one_assignment(client, make_study):
    study = make_study("likert", platform="prolific")
    mine = enter(client, study, "PROLIFIC_PID=2744ccd10c7533bd736ad890&SESSION_ID=6b86b273ff34fce19d6b804e")
    theirs = enter(Client(), study, "PROLIFIC_PID=c9a8dc336964db7fd6c764f1&SESSION_ID=d4735e3a265e16eee03f5971")
    assert len(mine.token) >= 32 and mine.token != theirs.token
    assert client.get("/r/a/00000000000000000000000000000000/items/0/").status_code == 404
    post_item(client, mine, 0, likert_answers(mine.assignment_items.get(position=0)))
    assert not Rating.objects.filter(assignment=theirs).exists()
    # a page names its responses by letter: answers naming responses by database id (this item's or
    # another's) name no field and are refused; nothing is stored
    my_second = mine.assignment_items.get(position=1)
    slot = theirs.assignment_items.exclude(item_id=my_second.item_id).first()
    by_id = {f"r{r}-{c}": 4 for s in (slot, my_second) for r in s.response_order for c in ("readability", "coherence")}
    assert post_item(client, mine, 1, by_id).status_code == 400
    assert not Rating.objects.filter(assignment=mine, item_id=my_second.item_id).exists()


def test_double_submit_stores_once_and_moves_on(client, make_study):
    study = make_study("likert", platform="prolific")
    assignment = enter(client, study, "PROLIFIC_PID=dc8ffdbf2736dbdf39508017&SESSION_ID=6b86b273ff34fce19d6b804e")
    slot = assignment.assignment_items.get(position=0)
    first = post_item(client, assignment, 0, likert_answers(slot))
    second = post_item(client, assignment, 0, likert_answers(slot))
    # each answered with the next item's own page (its address in the form), not a redirect
    next_url = f'action="/r/a/{assignment.token}/items/1/"'
    for answer in (first, second):
        page = answer.content.decode()
        assert answer.status_code == 200 and next_url in page and "Conversation 2 of" in page
        assert page.count("checked") == 0  # item 2 is not answered yet
    assert Rating.objects.filter(assignment=assignment).count() == 8
    slot.refresh_from_db()
    assert slot.answered_at is not None and slot.started_at <= slot.answered_at
    assert Rating.objects.filter(assignment=assignment).first().seconds >= 0


def test_non_numbers_are_explained_and_kept(client, make_study):
    study = make_study("rme", platform="prolific")
    assignment = enter(client, study, "PROLIFIC_PID=a1974688cdc37e17be7363cc&SESSION_ID=6b86b273ff34fce19d6b804e")
    slot = assignment.assignment_items.get(position=0)
    data = {field_name(r, c, slot.response_order): "120" for r in slot.response_order for c in ("readability", "coherence")}
    bad = field_name(slot.response_order[0], "coherence", slot.response_order)
    for typed in ("ten", "NaN", "Infinity"):
        data[bad] = typed
        response = post_item(client, assignment, 0, data)
        page = response.content.decode()
        assert response.status_code == 400
        assert f"“{typed}” is not a number: type digits, e.g. 40 or 12.5" in page and f'value="{typed}"' in page
    assert Rating.objects.count() == 0


@pytest.mark.parametrize("active_ms", ["NaN", "Infinity", "-Infinity", "1e400", "-5", "soon"])
def test_non_finite_active_time_is_a_400_naming_the_field(client, make_study, active_ms):
    study = make_study("likert", platform="prolific")
    assignment = enter(client, study, "PROLIFIC_PID=e3b98a4da31a127d4bde6e43&SESSION_ID=6b86b273ff34fce19d6b804e")
    slot = assignment.assignment_items.get(position=0)
    response = post_item(client, assignment, 0, {**likert_answers(slot), "active_ms": active_ms})
    assert response.status_code == 400 and "active_ms" in response.content.decode()
    assert Rating.objects.count() == 0 and AssignmentItem.objects.get(pk=slot.pk).answered_at is None


def test_non_finite_rating_values_are_refused_by_the_service(make_study):
    from django.core.exceptions import ValidationError
    study = make_study("rme")
    assignment = rater_entry.assignment_start(study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id="x"))
    slot = assignment.assignment_items.get(position=0)
    for bad in (float("nan"), float("inf"), float("-inf")):
        answers = {c: {r: (bad if r == slot.response_order[0] else 50) for r in slot.response_order}
                   for c in ("readability", "coherence")}
        with pytest.raises(ValidationError, match="finite"):
            answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers)
    answers = {c: {r: 50 for r in slot.response_order} for c in ("readability", "coherence")}
    with pytest.raises(ValidationError, match="active_ms"):
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers, active_seconds=float("nan"))
    assert Rating.objects.count() == 0


def test_autosave_keeps_a_draft_and_refuses_bad_bodies(client, make_study):
    study = make_study("likert", platform="prolific")
    assignment = enter(client, study, "PROLIFIC_PID=7743ce348d9284d677a185f3&SESSION_ID=6b86b273ff34fce19d6b804e")
    slot = assignment.assignment_items.get(position=0)
    name = field_name(slot.response_order[0], "coherence", slot.response_order)
    url = f"/r/a/{assignment.token}/items/0/draft/"
    header = {"HTTP_X_CONCORD_FORM_TOKEN": form_tokens.form_token(assignment.token, "draft")}

    def save(body, **extra):
        return client.post(url, body, content_type="application/json", **extra)
    assert save({name: "5"}).status_code == 403  # no form token
    assert save({name: "5"}, HTTP_X_CONCORD_FORM_TOKEN=form_tokens.form_token(assignment.token, "item")).status_code == 403
    assert save({name: "5"}, **header).json() == {"saved": True}
    assert AssignmentItem.objects.get(pk=slot.pk).draft == {name: "5"}
    page = client.get(f"/r/a/{assignment.token}/items/0/").content.decode()
    assert f'name="{name}" value="5" checked' in page
    assert save("[1, 2]", **header).status_code == 400
    assert save("{not json", **header).status_code == 400
    deep = save("[" * 100_000 + "]" * 100_000, **header)
    assert deep.status_code == 400 and deep.json()["field"] == "draft"
    deep_object = save('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", **header)
    assert deep_object.status_code == 400
    for value in ('"5\\u0000"', '"\\ud800"', "NaN", "Infinity", '{"x": 1}'):
        body = f'{{"{name}": {value}}}'
        refused = save(body, **header)
        assert refused.status_code == 400 and refused.json()["field"] == name, body
    nul_key = save('{"r1\\u0000": "5"}', **header)
    assert nul_key.status_code == 400 and nul_key.json()["field"] == "draft"
    assert AssignmentItem.objects.get(pk=slot.pk).draft == {name: "5"}  # nothing of the bad bodies written


def test_questionnaire_requires_the_two_seed_questions(client, make_study):
    study = make_study("likert", items_per_assignment=1, platform="prolific")
    assignment = enter(client, study, "PROLIFIC_PID=8e35c2cd3bf6641bdb0e2050&SESSION_ID=6b86b273ff34fce19d6b804e")
    assert client.get(f"/r/a/{assignment.token}/questionnaire/")["Location"].endswith("/items/0/")
    post_item(client, assignment, 0, likert_answers(assignment.assignment_items.get()))
    response = post_questionnaire(client, assignment, {"prior_agent_experience": "yes", "age_band": "25-34"})
    assert response.status_code == 400 and "please answer this question" in response.content.decode()
    assert 'value="yes" checked' in response.content.decode()
    assert Assignment.objects.get(pk=assignment.pk).status == "started"


def test_an_expired_assignment_says_so(client, make_study):
    study = make_study("likert", platform="prolific")
    Study.objects.filter(pk=study.pk).update(platform_config={"time_limit_minutes": 30})
    assignment = enter(client, study, "PROLIFIC_PID=5e0cf7bd1dfa3831788b0cf6&SESSION_ID=6b86b273ff34fce19d6b804e")
    Assignment.objects.filter(pk=assignment.pk).update(started_at=timezone.now() - timedelta(minutes=31))
    response = client.get(f"/r/a/{assignment.token}/items/0/")
    assert response.status_code == 410 and "time allowed" in response.content.decode()


def test_researcher_preview_shows_items_and_writes_nothing(client, user, make_study):
    study = make_study("bme")
    client.force_login(user)
    page = client.get(f"/studies/{study.slug}/preview/").content.decode()
    assert "Researcher preview" in page and "Reference response" in page and "Next (preview)" in page
    assert client.get(f"/studies/{study.slug}/preview/5/").status_code == 200
    assert rows() == (0, 0, 0)


def test_instructions_markdown_is_rendered_without_scripts():
    html = render_markdown("**Read** carefully <script>alert(1)</script> [x](javascript:alert(1))")
    assert "<strong>Read</strong>" in html
    assert "<script" not in html and "javascript:" not in html


def test_questionnaire_text_answers_with_control_characters_are_refused():
    from studies.rating.questionnaire import questionnaire_clean
    spec = [{"name": "comment", "kind": "text", "required": False, "question": "Anything else?"}]
    assert questionnaire_clean(spec, {"comment": "fine\x00"}) == ({}, {"comment": "this answer contains control characters (such as NUL)"})
    assert questionnaire_clean(spec, {"comment": "fine, thanks"}) == ({"comment": "fine, thanks"}, {})


# --- cost per item ----------------------------------------------------------------------------------

def test_an_item_costs_a_fixed_small_number_of_queries(client, make_study, django_assert_max_num_queries):
    """The item GET reads its slot, assignment, study, item and conversation in one query (criteria
    and response texts come from the cache once warm); the POST reads its slot and the next one in
    one query, locks and re-reads once, upserts the ratings in one statement, marks the slot, and
    answers with the next item's page (noting when it was first shown). Under the test's outer
    transaction the service's atomic block adds a SAVEPOINT and a RELEASE."""
    study = make_study("likert", platform="prolific")
    warm = enter(client, study, "PROLIFIC_PID=0f0aa408c1832abefd06bced&SESSION_ID=5feceb66ffc86f38d952786c")
    for slot in warm.assignment_items.all():
        assert client.get(f"/r/a/{warm.token}/items/{slot.position}/").status_code == 200
    assignment = enter(Client(), study, "PROLIFIC_PID=9f82f7b375f4aa1bd7d50abe&SESSION_ID=6b86b273ff34fce19d6b804e")
    slots = list(assignment.assignment_items.order_by("position"))
    assert len(slots) >= 3
    with django_assert_max_num_queries(2):  # slot with everything, started_at
        assert client.get(f"/r/a/{assignment.token}/items/0/").status_code == 200
    for slot in slots[:-1]:
        with django_assert_max_num_queries(7):  # read; SAVEPOINT, locked read, upsert, slot, RELEASE; next opened
            answer = post_item(client, assignment, slot.position, likert_answers(slot))
        assert answer.status_code == 200
        assert f"Conversation {slot.position + 2} of {len(slots)}" in answer.content.decode()
        with django_assert_max_num_queries(2):  # back to an answered item: its ratings are read
            page = client.get(f"/r/a/{assignment.token}/items/{slot.position}/").content.decode()
        assert page.count("checked") == 8
    with django_assert_max_num_queries(7):  # the last item goes on to the questionnaire
        last = post_item(client, assignment, slots[-1].position, likert_answers(slots[-1]))
    assert last.status_code == 302 and last["Location"].endswith("/questionnaire/")
    assert Rating.objects.filter(assignment=assignment).count() == 8 * len(slots)
    assert AssignmentItem.objects.filter(assignment=assignment, started_at__isnull=True).count() == 0
