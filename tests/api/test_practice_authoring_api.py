"""Practice authored through the researcher API, as on the study page's Practice card: practice items
added (checked as the page checks them, each problem named) and removed, the pass mark set, the practice
shared with the experiment's other conditions; drafts only (409); another researcher's study a 404."""
import pytest

from studies.authoring import services as authoring
from studies.models import Onboarding, PracticeItem
from tests.api.test_convention import client_of
from tests.problems import problem_fields

pytestmark = pytest.mark.django_db
ITEM = {"context": "A: Where do you live?\nB: In a small town.",
        "responses": ["I live in a small town too, near the sea.", "Potato keyboard seven."],
        "rules": [{"response": 1, "value": 5}], "explanation": "Response A answers; B is nonsense."}


@pytest.fixture
def draft(make_study):
    return make_study("likert", publish=False)


def test_practice_items_authored_through_the_api_then_read_back(api, draft):
    url = f"/api/studies/{draft.slug}/practice/"
    created = api.post(url + "items/", ITEM, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["rules"] == ITEM["rules"] and created.json()["number"] == 1
    second = api.post(url + "items/", {**ITEM, "rules": [{"greater": 1, "than": 2}]}, format="json")
    assert second.status_code == 201 and second.json()["number"] == 2
    settings = api.put(url + "settings/", {"pass_mark": 2, "owner_wide": True}, format="json")
    assert settings.status_code == 200 and settings.json()["pass_mark"] == 2 and settings.json()["owner_wide"]
    listed = api.get(url).json()
    assert [i["rules"] for i in listed["items"]] == [ITEM["rules"], [{"greater": 1, "than": 2}]]
    assert api.delete(url + f"items/{created.json()['id']}/").status_code == 204
    assert list(PracticeItem.objects.filter(study=draft).values_list("position", flat=True)) == [0]
    assert Onboarding.objects.get(study=draft).pass_mark == 1  # never more than the items left


def test_practice_item_problems_are_named_and_nothing_is_written(api, draft):
    url = f"/api/studies/{draft.slug}/practice/items/"
    for body, field in (({**ITEM, "explanation": "  "}, "explanation"),
                        ({**ITEM, "rules": [{"response": 7, "value": 5}]}, "rules.0.response"),
                        ({**ITEM, "colour": "red"}, "colour")):
        response = api.post(url, body, format="json")
        assert response.status_code == 400, body
        assert any(name and name.startswith(field.split(".")[0]) for name in problem_fields(response)), \
            (field, problem_fields(response))
    bad_mark = api.put(f"/api/studies/{draft.slug}/practice/settings/", {"pass_mark": 1}, format="json")
    assert bad_mark.status_code == 400 and "pass_mark" in problem_fields(bad_mark)
    assert not PracticeItem.objects.filter(study=draft).exists()


def test_practice_authoring_on_a_published_study_is_409(api, make_study):
    study = make_study("likert")
    response = api.post(f"/api/studies/{study.slug}/practice/items/", ITEM, format="json")
    assert response.status_code == 409 and not PracticeItem.objects.filter(study=study).exists()


def test_practice_authoring_of_another_researchers_study_is_404(draft, other_user):
    bob = client_of(other_user)
    url = f"/api/studies/{draft.slug}/practice/"
    assert bob.post(url + "items/", ITEM, format="json").status_code == 404
    assert bob.put(url + "settings/", {"pass_mark": 1}, format="json").status_code == 404
    assert bob.post(url + "share/").status_code == 404
    item = client_of(draft.experiment.owner).post(url + "items/", ITEM, format="json").json()
    assert bob.delete(url + f"items/{item['id']}/").status_code == 404
    assert PracticeItem.objects.filter(study=draft).count() == 1


def test_practice_shared_with_the_experiments_other_conditions(api, user, draft, corpus):
    other = authoring.study_create(experiment=draft.experiment, title="B", design="likert")
    api.post(f"/api/studies/{draft.slug}/practice/items/", ITEM, format="json")
    shared = api.post(f"/api/studies/{draft.slug}/practice/share/")
    assert shared.status_code == 200 and shared.json()["updated"] == [other.slug]
    assert PracticeItem.objects.filter(study=other).count() == 1
