"""The new-study page's live preview: the rater's page for a sample item built from the unsaved form,
with nothing written; the form's problems refused naming their fields; login, CSRF and the
experiment's owner required as on the edit page's preview."""
import re

import pytest
from django.test import Client

from studies.authoring import services as authoring
from studies.authoring.new_study_preview import SAMPLE_RESPONSES
from studies.models import Criterion, Study, StudyItem

pytestmark = pytest.mark.django_db


@pytest.fixture
def experiment(user):
    return authoring.experiment_create(owner=user, title="New preview", slug="new-preview")


def url(experiment):
    return f"/experiments/{experiment.slug}/studies/new/preview/"


def form(**changes):
    data = {"title": "Draft", "design": "likert", "unit": "response", "likert_points": "5", "raters_per_item": "3",
            "items_per_assignment": "10", "platform": "invite",
            "c-0-name": "clarity", "c-0-question": "How clear is the answer?", "c-0-kind": "scale"}
    return {**data, **changes}


def counts():
    return Study.objects.count(), Criterion.objects.count(), StudyItem.objects.count()


def test_preview_of_new_study_renders_the_rater_page_for_the_unsaved_form(client, user, experiment):
    client.force_login(user)
    before = counts()
    answer = client.post(url(experiment), form())
    page = answer.content.decode()
    assert answer.status_code == 200, page
    assert 'data-testid="rater-frame"' in page and 'data-items="1"' in page
    assert "How clear is the answer?" in page  # the question as typed, not saved
    for text in SAMPLE_RESPONSES.values():
        assert text in page
    assert len(re.findall(r'type="radio"[^>]*name="[^"]*clarity', page)) == 5 * len(SAMPLE_RESPONSES)  # 5 points
    assert 'data-testid="expected"' not in page  # no expected answers for a study not yet saved
    assert counts() == before


def test_preview_of_new_study_follows_the_typed_scale(client, user, experiment):
    client.force_login(user)
    page = client.post(url(experiment), form(likert_points="7")).content.decode()
    assert len(re.findall(r'type="radio"[^>]*name="[^"]*clarity', page)) == 7 * len(SAMPLE_RESPONSES)


@pytest.mark.parametrize(("changes", "field"), [
    ({"design": "nonsense"}, "Design"),
    ({"raters_per_item": "0"}, "Raters per item"),
    ({"c-0-question": "", "c-0-name": ""}, "Questions raters answer"),
])
def test_preview_of_new_study_refuses_bad_input_naming_the_field(client, user, experiment, changes, field):
    client.force_login(user)
    before = counts()
    answer = client.post(url(experiment), form(**changes))
    assert answer.status_code == 400
    refused = re.search(r'data-testid="preview-refused">(.*?)</p>', answer.content.decode(), re.S).group(1)
    assert field in refused
    assert counts() == before


def test_preview_of_new_study_says_other_designs_are_shown_once_items_exist(client, user, experiment):
    client.force_login(user)
    page = client.post(url(experiment), form(design="pairwise")).content.decode()
    assert 'data-testid="preview-not-shown"' in page and "edit page" in page
    assert 'data-testid="rater-frame"' not in page


def test_preview_of_new_study_needs_login_csrf_and_the_researchers_experiment(user, other_user, experiment):
    anonymous = Client()
    assert anonymous.post(url(experiment), form()).status_code == 302
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(user)
    assert strict.post(url(experiment), form()).status_code == 403
    assert strict.get(url(experiment)).status_code == 405
    other = Client()
    other.force_login(other_user)
    assert other.post(url(experiment), form()).status_code == 404
    assert Study.objects.count() == 0


def test_preview_of_new_study_has_a_status_line_on_the_create_page(client, user, experiment):
    client.force_login(user)
    page = client.get(f"/experiments/{experiment.slug}/studies/new/").content.decode()
    assert f'data-preview-url="{url(experiment)}"' in page
    assert re.search(r'<p class="visually-hidden" role="status" data-preview-status', page)


def test_preview_of_new_study_names_a_question_whose_labels_are_missing(client, user, experiment):
    client.force_login(user)
    answer = client.post(url(experiment), form(**{"c-0-kind": "categorical", "c-0-labels": ""}))
    assert answer.status_code == 400
    problem = re.search(r'data-testid="preview-refused">(.*?)</p>', answer.content.decode(), re.S).group(1)
    assert "Questions raters answer: row 1 (clarity), options" in problem
    assert Study.objects.count() == 0
