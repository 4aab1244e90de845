"""The researcher's practice editing on the study page: a refused practice item or pass mark comes
back with what was typed and each problem under its own field (nothing written); accepted ones show
in the Practice card; a published study offers no editing."""
import re

import pytest

from studies.models import Onboarding, PracticeItem
from studies.onboarding import selectors as onboarding_selectors

pytestmark = pytest.mark.django_db


def action(slug, name):
    return f"/studies/{slug}/practice/{name}/"


def row(i=0, **fields):
    """One rule row of the Practice card's form (studies/_rule_rows.html), as its controls post it."""
    return {f"rule-{i}-{key}": value for key, value in fields.items()}


AT_LEAST_4 = row(response="1", expects="min", value="4")


def test_practice_item_form_on_the_study_page_shows_field_level_errors(client, user, make_study):
    study = make_study("likert", publish=False)
    client.force_login(user)
    typed = {"context": "A: Hi", "responses": "Hello!\nZzz", **row(response="1", expects="value", value="9"),
             "explanation": ""}
    page = client.post(action(study.slug, "create"), typed, follow=True)
    html = page.content.decode()
    assert page.status_code == 200 and not PracticeItem.objects.exists()
    rules_error = re.search(r'data-testid="error-rules">([^<]+)<', html).group(1)
    assert rules_error.startswith("rule 1 (value): ") and "1" in rules_error
    assert 'data-testid="error-explanation"' in html and 'data-testid="error-context"' not in html
    assert "Zzz</textarea>" in html and 'name="rule-0-value" value="9"' in html  # kept as typed
    not_a_number = client.post(action(study.slug, "create"), {**typed, "rule-0-value": "nine", "explanation": "ok"},
                               follow=True)
    assert "rule 1: the value must be a number" in re.search(r'data-testid="error-rules">([^<]+)<',
                                                             not_a_number.content.decode()).group(1)
    added = client.post(action(study.slug, "create"), {**typed, **AT_LEAST_4,
                                                       "explanation": "A greets back."}, follow=True)
    html = added.content.decode()
    assert PracticeItem.objects.filter(study=study).count() == 1 and 'data-testid="error-' not in html
    assert 'data-testid="practice-item"' in html and "1 of 1" in html


def test_practice_pass_mark_form_shows_its_error_and_saves(client, user, make_study):
    study = make_study("likert", publish=False)
    client.force_login(user)
    for n in range(2):
        client.post(action(study.slug, "create"), {"context": "A: Hi", "responses": "Hello!\nZzz",
                                                   **AT_LEAST_4, "explanation": f"Why {n}"})
    refused = client.post(action(study.slug, "configure"), {"pass_mark": "3"}, follow=True).content.decode()
    assert "from 1 to 2" in re.search(r'data-testid="error-pass_mark">([^<]+)<', refused).group(1)
    assert 'name="pass_mark" min="1" max="2" value="3"' in refused  # what was typed, marked invalid
    assert Onboarding.objects.get(study=study).pass_mark == 0  # unchanged: every item until one is set
    assert onboarding_selectors.effective_pass_mark(study) == 2
    saved = client.post(action(study.slug, "configure"), {"pass_mark": "2", "owner_wide": "on"}, follow=True)
    assert Onboarding.objects.get(study=study).pass_mark == 2 and Onboarding.objects.get(study=study).owner_wide
    assert 'data-testid="practice-pass-mark">2 of 2' in saved.content.decode()
    item = PracticeItem.objects.filter(study=study).first()
    client.post(action(study.slug, "delete"), {"item": item.pk})
    assert PracticeItem.objects.filter(study=study).count() == 1 and Onboarding.objects.get(study=study).pass_mark == 1


def test_practice_not_editable_once_published(client, user, make_study):
    study = make_study("likert")
    client.force_login(user)
    page = client.post(action(study.slug, "create"), {"context": "A: Hi", "responses": "a\nb",
                                                      **AT_LEAST_4, "explanation": "x"},
                       follow=True)
    assert "practice is set while it is a draft" in page.content.decode() and not PracticeItem.objects.exists()
    assert "Add a practice item" not in page.content.decode()


def test_practice_actions_need_access_to_the_study(client, other_user, make_study):
    study = make_study("likert", publish=False)
    client.force_login(other_user)
    assert client.post(action(study.slug, "create"), {"context": "A: Hi"}).status_code == 404


def test_practice_shared_with_the_experiments_draft_conditions_and_copied_with_a_duplicate(client, user, make_study):
    from studies.authoring import editing

    study = make_study("likert", publish=False)
    twin = make_study("likert", publish=False, experiment=study.experiment)
    other = make_study("pairwise", publish=False, experiment=study.experiment)
    client.force_login(user)
    client.post(action(study.slug, "create"), {"context": "A: Hi", "responses": "Hello!\nZzz",
                                               **row(response="1", expects="greater", than="2"), "explanation": "A greets."})
    page = client.post(action(study.slug, "share"), follow=True).content.decode()
    assert "Practice shared with 1 condition(s): likert study." in page and "pairwise study (another design or unit)" in page
    copied = PracticeItem.objects.get(study=twin)
    original = PracticeItem.objects.get(study=study)
    assert (copied.rules, copied.response_ids, copied.conversation_id) == (
        original.rules, original.response_ids, original.conversation_id)
    assert not PracticeItem.objects.filter(study=other).exists()
    duplicate = editing.study_duplicate(study=study)
    assert PracticeItem.objects.filter(study=duplicate).count() == 1
    assert Onboarding.objects.get(study=duplicate).pass_mark == Onboarding.objects.get(study=study).pass_mark
    assert onboarding_selectors.effective_pass_mark(duplicate) == 1
    client.post(action(study.slug, "delete"), {"item": original.pk})  # the copies keep their shared conversation
    assert PracticeItem.objects.filter(study__in=[twin, duplicate]).count() == 2
    assert PracticeItem.objects.get(study=twin).conversation.turns
