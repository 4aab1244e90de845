"""Rater pages without a browser: identities from each platform, authorization by token, CSRF,
double submit, autosave, closed and expired studies, researcher preview, safe instructions."""
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from studies import platforms, services
from studies.models import Assignment, AssignmentItem, Rater, Rating, Study
from studies.rater_views import field_name, render_markdown

pytestmark = pytest.mark.django_db


def enter(client, study, query):
    response = client.get(f"/r/{study.slug}/?{query}")
    assert response.status_code == 302, response.content.decode()[:300]
    token = response["Location"].split("/")[3]
    client.post(f"/r/a/{token}/", {"agree": "yes"})
    return Assignment.objects.get(token=token)


def likert_answers(slot, value=4):
    return {field_name(r, c): value for r in slot.response_order for c in ("readability", "coherence")}


@pytest.mark.parametrize(("query", "platform", "worker", "data"), [
    ("workerId=W1&assignmentId=A1&hitId=H1&turkSubmitTo=https%3A%2F%2Fwww.mturk.com", "mturk", "W1",
     {"assignmentId": "A1", "hitId": "H1", "turkSubmitTo": "https://www.mturk.com"}),
    ("PROLIFIC_PID=P1&STUDY_ID=S1&SESSION_ID=X1", "prolific", "P1", {"STUDY_ID": "S1", "SESSION_ID": "X1"}),
])
def test_platform_identities_are_stored_with_the_assignment(client, make_study, query, platform, worker, data):
    study = make_study("likert")
    assignment = enter(client, study, query)
    assert (assignment.rater.platform, assignment.rater.external_id, assignment.platform_data) == (platform, worker, data)


def test_signed_invites_work_only_unaltered_and_for_their_study(client, make_study):
    study, other = make_study("likert"), make_study("bws")
    token = platforms.invite_token(study.slug, "ana@lab.example")
    assert enter(client, study, f"invite={token}").rater.external_id == "ana@lab.example"
    assert client.get(f"/r/{study.slug}/?invite={token[:-2]}xx").status_code == 400
    response = client.get(f"/r/{other.slug}/?invite={token}")
    assert response.status_code == 400 and "another study" in response.content.decode()


def test_a_link_without_identity_or_an_mturk_preview_stores_nothing(client, make_study):
    study = make_study("likert")
    response = client.get(f"/r/{study.slug}/")
    assert response.status_code == 400 and "does not say who you are" in response.content.decode()
    preview = client.get(f"/r/{study.slug}/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=H1")
    assert preview.status_code == 200 and "Accept the HIT" in preview.content.decode()
    assert (Rater.objects.count(), Assignment.objects.count()) == (0, 0)


def test_tokens_are_unguessable_and_scoped_to_one_assignment(client, make_study):
    study = make_study("likert")
    mine = enter(client, study, "PROLIFIC_PID=me")
    theirs = enter(Client(), study, "PROLIFIC_PID=them")
    assert len(mine.token) >= 32 and mine.token != theirs.token
    assert client.get("/r/a/00000000000000000000000000000000/items/0/").status_code == 404
    client.post(f"/r/a/{mine.token}/items/0/", likert_answers(mine.assignment_items.get(position=0)))
    assert not Rating.objects.filter(assignment=theirs).exists()
    # answers naming the responses of another item are not accepted on mine
    my_second = mine.assignment_items.get(position=1)
    slot = theirs.assignment_items.exclude(item_id=my_second.item_id).first()
    response = client.post(f"/r/a/{mine.token}/items/1/", likert_answers(slot))
    assert response.status_code == 400


def test_item_posts_need_the_csrf_token(make_study):
    study = make_study("likert")
    strict = Client(enforce_csrf_checks=True)
    response = strict.get(f"/r/{study.slug}/?PROLIFIC_PID=csrf")
    token = response["Location"].split("/")[3]
    assert strict.post(f"/r/a/{token}/", {"agree": "yes"}).status_code == 403
    page = strict.get(f"/r/a/{token}/").content.decode()
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    assert strict.post(f"/r/a/{token}/", {"agree": "yes", "csrfmiddlewaretoken": csrf}).status_code == 302


def test_double_submit_stores_once_and_moves_on(client, make_study):
    study = make_study("likert")
    assignment = enter(client, study, "PROLIFIC_PID=twice")
    slot = assignment.assignment_items.get(position=0)
    first = client.post(f"/r/a/{assignment.token}/items/0/", likert_answers(slot))
    second = client.post(f"/r/a/{assignment.token}/items/0/", likert_answers(slot))
    assert first.status_code == second.status_code == 302
    assert Rating.objects.filter(assignment=assignment).count() == 8
    slot.refresh_from_db()
    assert slot.answered_at is not None and slot.started_at <= slot.answered_at
    assert Rating.objects.filter(assignment=assignment).first().seconds >= 0


def test_non_numbers_are_explained_and_kept(client, make_study):
    study = make_study("rme")
    assignment = enter(client, study, "PROLIFIC_PID=typo")
    slot = assignment.assignment_items.get(position=0)
    data = {field_name(r, c): "120" for r in slot.response_order for c in ("readability", "coherence")}
    bad = field_name(slot.response_order[0], "coherence")
    data[bad] = "ten"
    response = client.post(f"/r/a/{assignment.token}/items/0/", data)
    page = response.content.decode()
    assert response.status_code == 400
    assert "“ten” is not a whole number" in page and 'value="ten"' in page
    assert Rating.objects.count() == 0


def test_autosave_keeps_a_draft_and_refuses_bad_bodies(client, make_study):
    study = make_study("likert")
    assignment = enter(client, study, "PROLIFIC_PID=draft")
    slot = assignment.assignment_items.get(position=0)
    name = field_name(slot.response_order[0], "coherence")
    url = f"/r/a/{assignment.token}/items/0/draft/"
    assert client.post(url, {name: "5"}, content_type="application/json").json() == {"saved": True}
    assert AssignmentItem.objects.get(pk=slot.pk).draft == {name: "5"}
    assert f'name="{name}" value="5" checked' in client.get(f"/r/a/{assignment.token}/items/0/").content.decode()
    assert client.post(url, "[1, 2]", content_type="application/json").status_code == 400
    assert client.post(url, "{not json", content_type="application/json").status_code == 400


def test_closed_study_refuses_newcomers_but_lets_started_raters_finish(client, make_study):
    study = make_study("likert", items_per_assignment=1)
    assignment = enter(client, study, "PROLIFIC_PID=early")
    services.study_close(study=study)
    refused = Client().get(f"/r/{study.slug}/?PROLIFIC_PID=late")
    assert refused.status_code == 403 and "closed" in refused.content.decode()
    assert client.get(f"/r/{study.slug}/?PROLIFIC_PID=early")["Location"] == f"/r/a/{assignment.token}/"
    client.post(f"/r/a/{assignment.token}/items/0/", likert_answers(assignment.assignment_items.get()))
    done = client.post(f"/r/a/{assignment.token}/questionnaire/", {"prior_rating_experience": "yes",
                                                                   "prior_agent_experience": "no"})
    assert done.status_code == 302
    assert Assignment.objects.get(pk=assignment.pk).status == "submitted"


def test_questionnaire_requires_the_two_seed_questions(client, make_study):
    study = make_study("likert", items_per_assignment=1)
    assignment = enter(client, study, "PROLIFIC_PID=q")
    assert client.get(f"/r/a/{assignment.token}/questionnaire/")["Location"].endswith("/items/0/")
    client.post(f"/r/a/{assignment.token}/items/0/", likert_answers(assignment.assignment_items.get()))
    response = client.post(f"/r/a/{assignment.token}/questionnaire/", {"prior_agent_experience": "yes", "age_band": "25-34"})
    assert response.status_code == 400 and "please answer this question" in response.content.decode()
    assert 'value="yes" checked' in response.content.decode()
    assert Assignment.objects.get(pk=assignment.pk).status == "started"


def test_an_expired_assignment_says_so(client, make_study):
    study = make_study("likert")
    Study.objects.filter(pk=study.pk).update(platform_config={"time_limit_minutes": 30})
    assignment = enter(client, study, "PROLIFIC_PID=slow")
    Assignment.objects.filter(pk=assignment.pk).update(started_at=timezone.now() - timedelta(minutes=31))
    response = client.get(f"/r/a/{assignment.token}/items/0/")
    assert response.status_code == 410 and "time allowed" in response.content.decode()


def test_researcher_preview_shows_items_and_writes_nothing(client, user, make_study):
    study = make_study("bme")
    client.force_login(user)
    page = client.get(f"/studies/{study.slug}/preview/").content.decode()
    assert "Researcher preview" in page and "Reference response" in page and "Next (preview)" in page
    assert client.get(f"/studies/{study.slug}/preview/5/").status_code == 200
    assert (Rater.objects.count(), Assignment.objects.count(), Rating.objects.count()) == (0, 0, 0)
    link = client.get(f"/studies/{study.slug}/?invitee=ana").content.decode()
    assert "/r/" + study.slug + "/?invite=" in link


def test_instructions_markdown_is_rendered_without_scripts():
    html = render_markdown("**Read** carefully <script>alert(1)</script> [x](javascript:alert(1))")
    assert "<strong>Read</strong>" in html
    assert "<script" not in html and "javascript:" not in html
