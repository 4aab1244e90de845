"""Study set-up as one flow (issue 26, walkthrough): criteria typed wrongly are refused with the line or
piece named, a new study starts at a pilot's size, item building is offered from a real corpus and near
the top of a draft, raters' links are those of the study's platform, and a Prolific study without its
completion code says so."""
import pytest

from studies.authoring import services as authoring
from studies.models import DEFAULT_ITEMS_PER_ASSIGNMENT, DEFAULT_RATERS_PER_ITEM, Study

pytestmark = pytest.mark.django_db


@pytest.fixture
def researcher(client, user):
    client.force_login(user)
    return client


@pytest.fixture
def experiment(user):
    return authoring.experiment_create(owner=user, title="E", slug="e")


def create(client, **changes):
    data = {"title": "S", "design": "likert", "criteria": "readability, coherence", "raters_per_item": 3,
            "items_per_assignment": 6, "platform": "invite", **changes}
    return client.post("/experiments/e/studies/new/", data)


@pytest.mark.parametrize(("criteria", "message"), [
    (" , ", "criterion 1 of 2 (between commas) has no name"),
    ("readability,, coherence", "criterion 2 of 3 (between commas) has no name"),
    ("readability\n| How coherent is it?", "line 2 has no criterion name before the first |"),
    ("", "This field is required"),
    ("readability, readability", "readability is given twice"),
])
def test_criteria_without_a_name_are_refused_with_the_piece_named(researcher, experiment, criteria, message):
    response = create(researcher, criteria=criteria)
    assert response.status_code == 200 and message in response.content.decode()
    assert not experiment.studies.exists()  # nothing created, in particular not with the default criteria


def test_criteria_lines_keep_every_named_criterion(researcher, experiment):
    assert create(researcher, criteria="fluency | Is it fluent?\n\ncoherence").status_code == 302
    default = next(c["question"] for c in authoring.DEFAULT_CRITERIA if c["name"] == "coherence")
    assert list(experiment.studies.get().criteria.values_list("name", "question")) == [
        ("fluency", "Is it fluent?"), ("coherence", default)]


def test_a_new_study_starts_at_a_pilots_size(researcher, experiment, api):
    page = researcher.get("/experiments/e/studies/new/").content.decode()
    assert f'name="raters_per_item" value="{DEFAULT_RATERS_PER_ITEM}"' in page
    assert f'name="items_per_assignment" value="{DEFAULT_ITEMS_PER_ASSIGNMENT}"' in page
    assert (DEFAULT_RATERS_PER_ITEM, DEFAULT_ITEMS_PER_ASSIGNMENT) == (5, 20)
    created = api.post("/api/studies/create/", {"experiment": "e", "title": "API", "design": "likert"}, format="json")
    assert created.status_code == 201, created.content
    study = Study.objects.get(slug=created.json()["slug"])
    assert (study.raters_per_item, study.items_per_assignment) == (5, 20)
