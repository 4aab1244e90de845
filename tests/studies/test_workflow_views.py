"""Researcher pages of the study workflow: the edit form (labels, lock reasons, one clear BWS
message), duplicate, delete, pause/resume and re-open buttons, sharing, the item & rating browser,
and what raters see (pay on the start page, a polite refusal while paused or past the deadline)."""
from datetime import timedelta
from decimal import Decimal

import pytest
from django.template.loader import render_to_string
from django.utils import timezone

from studies.authoring import editing
from studies.authoring import services as authoring
from studies.models import Study
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from studies.reports import selectors
from tests.factories import UserFactory
from tests.studies.test_services import answer_all, rater

pytestmark = pytest.mark.django_db


@pytest.fixture
def researcher(client, user):
    client.force_login(user)
    return client


def edit_post(study, **changes):
    """What the edit form posts for the study, with ``changes``."""
    data = {"title": study.title, "design": study.design, "criteria": "readability\ncoherence",
            "likert_points": study.design_config.get("points", ""), "raters_per_item": study.raters_per_item,
            "items_per_assignment": study.items_per_assignment, "platform": study.platform,
            "instructions": study.instructions, "consent_text": "", "reward": "", "estimated_minutes": "",
            "time_limit_minutes": "", "closes_at": "", "questionnaire": ""}
    data.update(changes)
    return data


def test_edit_page_has_readable_labels_and_saves_every_setting(researcher, make_study):
    study = make_study("likert", publish=False)
    page = researcher.get(f"/studies/{study.slug}/edit/").content.decode()
    for label in ("Largest value a rater may give", "Responses ranked per item (BWS)", "Reward per assignment",
                  "Consent text", "Deadline", "Estimated minutes per assignment"):
        assert label in page
    assert "Me max" not in page and "Bws tuple size" not in page
    deadline = (timezone.now() + timedelta(days=2)).strftime("%Y-%m-%dT%H:%M")
    response = researcher.post(f"/studies/{study.slug}/edit/", edit_post(
        study, title="Edited", likert_points=5, criteria="fluency | Is it fluent? | grammar\ncoherence",
        consent_text="I agree to **this**", reward="1.20", estimated_minutes="6", time_limit_minutes="30",
        closes_at=deadline, questionnaire="age | choice | optional | Your age? | 18-30, 31+\nnotes | text | required | Anything else?"))
    assert response.status_code == 302
    study.refresh_from_db()
    assert (study.title, study.design_config["points"], study.reward, study.estimated_minutes) == ("Edited", 5, Decimal("1.20"), 6)
    assert list(study.criteria.values_list("name", "question", "help_text"))[0] == ("fluency", "Is it fluent?", "grammar")
    assert study.questionnaire == [
        {"name": "age", "kind": "choice", "required": False, "question": "Your age?", "choices": ["18-30", "31+"]},
        {"name": "notes", "kind": "text", "required": True, "question": "Anything else?"}]
    assert study.platform_config["time_limit_minutes"] == 30 and study.platform_config["closes_at"].startswith(deadline)
    page = researcher.get(f"/studies/{study.slug}/").content.decode()
    # an invitation study: its reward in US dollars unless its currency rater setting says otherwise
    assert "5-point scale" in page and "$1.20" in page.split('data-testid="pay-plan"')[1][:400]


def test_a_published_study_explains_why_its_design_is_fixed_and_ignores_a_forged_change(researcher, make_study):
    study = make_study("likert")
    page = researcher.get(f"/studies/{study.slug}/edit/").content.decode()
    assert 'data-testid="structure-locked"' in page and "duplicate it to change them" in page
    response = researcher.post(f"/studies/{study.slug}/edit/", edit_post(
        study, design="bws", likert_points=9, instructions="Be careful"))
    assert response.status_code == 302
    study.refresh_from_db()
    assert (study.design, study.design_config["points"], study.instructions) == ("likert", 6, "Be careful")


def test_bad_input_on_the_edit_page_names_the_field_and_writes_nothing(researcher, make_study):
    study = make_study("likert", publish=False)
    response = researcher.post(f"/studies/{study.slug}/edit/", edit_post(
        study, title="Nope", questionnaire="age | number | optional | Age?"))
    assert response.status_code == 200
    assert "line 1: the kind is one of yes_no, choice, text" in response.content.decode()
    study.refresh_from_db()
    assert study.title == "likert study"


def test_bws_with_four_systems_and_the_reference_builds_and_says_so_once(researcher, user, corpus):
    experiment = authoring.experiment_create(owner=user, title="E", slug="e")
    response = researcher.post("/experiments/e/studies/new/", {
        "title": "BWS", "design": "bws", "criteria": "readability, coherence", "raters_per_item": 3,
        "items_per_assignment": 6, "platform": "invite"})
    study = experiment.studies.get()
    assert response.status_code == 302 and study.design_config["tuple_size"] == 4
    response = researcher.post(f"/studies/{study.slug}/", {"corpus": corpus.slug, "systems": "seq2seq, hred",
                                                          "reference_system": "human"})
    assert response.status_code == 302
    study.refresh_from_db()
    assert study.design_config["tuple_size"] == 3 and study.items.count() == 6
    page = researcher.get(f"/studies/{study.slug}/").content.decode()
    assert "raters rank 3 responses per item" in page
    response = researcher.post(f"/studies/{study.slug}/", {"corpus": corpus.slug, "systems": "seq2seq, nobody"})
    assert response.status_code == 200 and response.content.decode().count("no responses from nobody") == 1


def test_duplicate_delete_pause_resume_and_reopen_from_the_study_page(researcher, make_study):
    draft = make_study("likert", publish=False)
    response = researcher.post(f"/studies/{draft.slug}/duplicate/", {})
    copy = Study.objects.exclude(pk=draft.pk).get()
    assert response["Location"] == f"/studies/{copy.slug}/" and copy.items.count() == draft.items.count()
    response = researcher.post(f"/studies/{copy.slug}/delete/", {}, follow=True)
    assert "Tick the box" in response.content.decode() and Study.objects.filter(pk=copy.pk).exists()
    researcher.post(f"/studies/{copy.slug}/delete/", {"confirm": "yes"})
    assert not Study.objects.filter(pk=copy.pk).exists()
    later = authoring.experiment_create(owner=draft.experiment.owner, title="Later", slug="later")
    foreign = authoring.experiment_create(owner=UserFactory(username="dave"), title="Dave's", slug="daves")
    researcher.post(f"/studies/{draft.slug}/duplicate/", {"experiment": "later", "title": "Rerun"})
    assert list(later.studies.values_list("title", flat=True)) == ["Rerun"]
    page = researcher.post(f"/studies/{draft.slug}/duplicate/", {"experiment": "daves"}, follow=True).content.decode()
    assert "Select a valid choice" in page and not foreign.studies.exists()

    authoring.study_publish(study=draft)
    response = researcher.post(f"/studies/{draft.slug}/delete/", {"confirm": "yes"}, follow=True)
    assert "only drafts can be deleted" in response.content.decode() and Study.objects.filter(pk=draft.pk).exists()
    page = researcher.post(f"/studies/{draft.slug}/state/pause/", follow=True).content.decode()
    assert 'data-testid="paused"' in page and "Resume" in page
    page = researcher.post(f"/studies/{draft.slug}/state/resume/", follow=True).content.decode()
    assert 'data-testid="paused"' not in page
    researcher.post(f"/studies/{draft.slug}/close/")
    page = researcher.post(f"/studies/{draft.slug}/state/reopen/", follow=True).content.decode()
    draft.refresh_from_db()
    assert draft.status == "published" and "re-opened" in page


def test_sharing_adds_and_removes_a_collaborator_who_then_sees_the_study(researcher, client, make_study):
    study = make_study("likert")
    carol = UserFactory(username="carol", email="carol@example.org")
    page = researcher.post(f"/experiments/{study.experiment.slug}/collaborators/add/",
                           {"user": "carol@example.org", "next": f"/studies/{study.slug}/"}, follow=True).content.decode()
    assert "carol can now open" in page and 'data-testid="collaborator">carol' in page
    client.force_login(carol)
    assert client.get(f"/studies/{study.slug}/").status_code == 200
    response = client.post(f"/experiments/{study.experiment.slug}/collaborators/add/", {"user": "bob"}, follow=True)
    assert "Only the experiment&#x27;s owner can share it" in response.content.decode()
    client.force_login(study.experiment.owner)
    client.post(f"/experiments/{study.experiment.slug}/collaborators/remove/", {"user": "carol"})
    client.force_login(carol)
    assert client.get(f"/studies/{study.slug}/").status_code == 404


def test_item_browser_shows_raters_by_pseudonym_with_flags_and_filters(researcher, client, make_study, other_user):
    study = make_study("likert", raters_per_item=2, items_per_assignment=6)
    good = rater_entry.assignment_start(study=study, rater=rater("worker-good"))
    for slot in good.assignment_items.all():  # varied answers: no straight-lining
        answering.ratings_record(assignment=good, item_id=slot.item_id, answers={
            c: {r: 1 + (slot.position + i) % 6 for i, r in enumerate(slot.response_order)}
            for c in ("readability", "coherence")})
    answering.assignment_submit(assignment=good, total_seconds=100)
    flagged = rater_entry.assignment_start(study=study, rater=rater("worker-bad"))
    answer_all(flagged, value=5)  # the same score everywhere: straight-lining
    answering.assignment_submit(assignment=flagged, total_seconds=50)
    flagged.checks_failed = True
    flagged.save(update_fields=["checks_failed"])
    good_name = selectors.rater_pseudonym(study.experiment_id, good.rater_id)
    bad_name = selectors.rater_pseudonym(study.experiment_id, flagged.rater_id)
    page = researcher.get(f"/studies/{study.slug}/browse/").content.decode()
    assert "worker-good" not in page and page.count('data-testid="browser-item"') == 6
    assert page.count(f">{good_name}</a>") == 12 and page.count(f">{bad_name}</a>") == 12  # 6 items x 2 criteria
    assert page.count('<tr class="flagged">') == 12 and "failed checks" in page and "straight-lining" in page
    page = researcher.get(f"/studies/{study.slug}/browse/?flagged=1").content.decode()
    assert page.count(f">{bad_name}</a>") == 12 and f">{good_name}</a>" not in page
    page = researcher.get(f"/studies/{study.slug}/browse/?raw_ids=1&rater={good.rater_id}").content.decode()
    assert page.count(">invite:worker-good</a>") == 12 and ">invite:worker-bad</a>" not in page
    assert '<tr class="flagged">' not in page
    client.force_login(other_user)
    assert client.get(f"/studies/{study.slug}/browse/").status_code == 404


def test_raters_see_pay_and_consent_and_a_polite_refusal_while_paused(client, make_study):
    study = make_study("likert", platform="prolific", raters_per_item=2)
    editing.study_update(study=study, values={"reward": "1.50", "estimated_minutes": 9, "consent_text": "Data is **kept** for a year."})
    study.refresh_from_db()
    html = render_to_string("raters/_pay.html", {"study": study})
    assert "1.50" in html and "9 minutes" in html and "10.00 an hour" in html and "<strong>kept</strong>" in html
    editing.study_pause(study=study)
    response = client.get(f"/r/{study.slug}/?PROLIFIC_PID=fbeae7c18667b6987518f3ae&STUDY_ID=3696ad59777e09d5f2daacb5&SESSION_ID=ad667b78ba8ed0275868fcc1")
    assert response.status_code == 403 and "paused for now" in response.content.decode()
    editing.study_resume(study=study)
    response = client.get(f"/r/{study.slug}/?PROLIFIC_PID=fbeae7c18667b6987518f3ae&STUDY_ID=3696ad59777e09d5f2daacb5&SESSION_ID=ad667b78ba8ed0275868fcc1")
    assert response.status_code == 302 and "/r/a/" in response["Location"]
