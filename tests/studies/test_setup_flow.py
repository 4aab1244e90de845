"""Study set-up as one flow: criteria typed wrongly are refused with the line or
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
    ("", "name at least one criterion"),  # no rows and no text (the builder posts rows: tests/studies/test_builder.py)
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


def test_items_are_built_from_a_real_corpus_near_the_top_of_a_draft(researcher, make_study, corpus):
    from studies.authoring import checks

    study = make_study("likert", publish=False)
    checks.check_item_create(study=study, kind="instructed", context="A: Hi.\nB: Hello.",
                             responses=["Fine.", "Good.", "Great.", "Well."], rules=[{"response": 1, "value": 1}])
    page = researcher.get(f"/studies/{study.slug}/").content.decode()
    options = page[page.index('name="corpus"'):page.index("</select>", page.index('name="corpus"'))]
    assert f'value="{corpus.slug}"' in options and "checks-" not in options  # the newest corpus is the checks one
    assert page.index('id="items"') < page.index("<h2>Progress</h2>")  # step one of a draft comes first
    assert 'data-testid="items-step"' in page


@pytest.mark.parametrize(("platform", "shown", "hidden"), [
    ("invite", ["invite-only"], ["mturk-link", "prolific-link", "/crowd/"]),
    ("mturk", ["mturk-link", "/crowd/"], ["prolific-link", "invite-only"]),
    ("prolific", ["prolific-link", "/crowd/", 'name="completion_code" maxlength'], ["mturk-link", "invite-only"]),
])
def test_the_raters_card_lists_only_the_links_of_the_studys_platform(researcher, make_study, platform, shown, hidden):
    study = make_study("likert", platform=platform)
    page = researcher.get(f"/studies/{study.slug}/").content.decode()
    card = page[page.index('id="rater-links"'):]
    assert all(s in card for s in shown) and not any(h in card for h in hidden), platform


def test_rater_settings_of_a_non_prolific_study_keep_its_codes(researcher, make_study):
    study = make_study("likert", platform="invite", publish=False)
    Study.objects.filter(pk=study.pk).update(platform_config={"completion_code": "KEEP", "close_when_complete": True})
    page = researcher.get(f"/studies/{study.slug}/").content.decode()
    assert '<input type="hidden" name="completion_code" value="KEEP">' in page
    researcher.post(f"/studies/{study.slug}/rater-settings/", {"completion_code": "KEEP", "time_limit_minutes": "30"})
    study.refresh_from_db()
    assert study.platform_config["completion_code"] == "KEEP" and study.platform_config["time_limit_minutes"] == 30


def test_a_prolific_study_without_its_completion_code_says_so(researcher, make_study):
    study = make_study("likert", platform="prolific", publish=False)
    response = researcher.post(f"/studies/{study.slug}/publish/", follow=True)
    page = response.content.decode()
    assert "Published without a Prolific completion code" in page and 'data-testid="prolific-code-missing"' in page
    researcher.post(f"/studies/{study.slug}/rater-settings/", {"completion_code": "C0DE1234"})
    assert 'data-testid="prolific-code-missing"' not in researcher.get(f"/studies/{study.slug}/").content.decode()
