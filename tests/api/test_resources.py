"""Resources on their own paths: experiments, studies, invites, check items and collaborators
read, changed (PATCH) and deleted (DELETE) where the UI allows it, 409 where the state forbids it; the old
action routes keep working. Another researcher gets a 404 and changes nothing; unknown fields are refused
by name; invitations are made several at once (``count``, bounded) as on the study page."""
import pytest

from studies.authoring import editing
from studies.authoring import services as authoring
from studies.models import Experiment, Invite, Study, StudyItem
from tests.api.test_convention import client_of
from tests.problems import problem_fields
from tests.studies.test_checks import LIKERT_TEXTS, add_check

pytestmark = pytest.mark.django_db


@pytest.fixture
def bob(other_user):
    return client_of(other_user)


@pytest.fixture
def draft(make_study):
    return make_study("likert", publish=False)


def test_an_experiment_is_read_changed_and_deleted_by_its_path(api, user, draft, other_user):
    experiment = draft.experiment
    editing.experiment_collaborator_add(experiment=experiment, by=user, identifier=other_user.username)
    read = api.get(f"/api/experiments/{experiment.slug}/").json()
    assert read["slug"] == experiment.slug and read["owner"] == user.username
    assert read["collaborators"] == [other_user.username] and [s["slug"] for s in read["studies"]] == [draft.slug]
    changed = api.patch(f"/api/experiments/{experiment.slug}/", {"title": "Renamed", "description": "why"},
                        format="json")
    assert changed.status_code == 200 and changed.json()["title"] == "Renamed"
    experiment.refresh_from_db()
    assert (experiment.title, experiment.description) == ("Renamed", "why")
    # a collaborator works on it but may not delete it
    forbidden = client_of(other_user).delete(f"/api/experiments/{experiment.slug}/")
    assert forbidden.status_code == 403 and Experiment.objects.filter(pk=experiment.pk).exists()
    assert api.delete(f"/api/experiments/{experiment.slug}/").status_code == 204
    assert not Experiment.objects.filter(pk=experiment.pk).exists() and not Study.objects.filter(pk=draft.pk).exists()
    assert api.get(f"/api/experiments/{experiment.slug}/").status_code == 404


def test_an_experiment_with_a_published_condition_is_not_deleted_409(api, make_study):
    study = make_study("likert")
    response = api.delete(f"/api/experiments/{study.experiment.slug}/")
    assert response.status_code == 409 and study.slug in response.json()["detail"]
    assert Experiment.objects.filter(pk=study.experiment_id).exists() and Study.objects.filter(pk=study.pk).exists()


def test_experiment_patch_refuses_unknown_and_bad_fields_by_name(api, draft):
    experiment = draft.experiment
    for body, field in (({"titel": "x"}, "titel"), ({"slug": "new-slug"}, "slug"), ({"title": ""}, "title"),
                        ({"title": "x" * 201}, "title")):
        response = api.patch(f"/api/experiments/{experiment.slug}/", body, format="json")
        assert response.status_code == 400 and field in problem_fields(response), body
    experiment.refresh_from_db()
    assert experiment.title == "Exp likert" and experiment.slug == draft.experiment.slug


def test_another_researcher_can_neither_read_change_nor_delete_an_experiment(bob, draft):
    path = f"/api/experiments/{draft.experiment.slug}/"
    assert bob.get(path).status_code == 404
    assert bob.patch(path, {"title": "Mine now"}, format="json").status_code == 404
    assert bob.delete(path).status_code == 404
    draft.experiment.refresh_from_db()
    assert draft.experiment.title == "Exp likert" and Study.objects.filter(pk=draft.pk).exists()


def test_a_study_is_changed_and_deleted_by_its_path_and_the_old_routes_still_work(api, make_study, draft):
    changed = api.patch(f"/api/studies/{draft.slug}/", {"title": "New title", "raters_per_item": 4}, format="json")
    assert changed.status_code == 200 and changed.json()["study"]["title"] == "New title"
    draft.refresh_from_db()
    assert (draft.title, draft.raters_per_item) == ("New title", 4)
    unknown = api.patch(f"/api/studies/{draft.slug}/", {"colour": "red"}, format="json")
    assert unknown.status_code == 400 and "colour" in problem_fields(unknown)
    published = make_study("rme")
    refused = api.delete(f"/api/studies/{published.slug}/")
    assert refused.status_code == 409 and Study.objects.filter(pk=published.pk).exists()
    assert api.delete(f"/api/studies/{draft.slug}/").status_code == 204
    assert not Study.objects.filter(pk=draft.pk).exists()
    other = make_study("likert", publish=False)
    assert api.post(f"/api/studies/{other.slug}/delete/").status_code == 204  # the action route
    assert not Study.objects.filter(pk=other.pk).exists()


def test_another_researcher_can_neither_change_nor_delete_a_study(bob, draft):
    assert bob.patch(f"/api/studies/{draft.slug}/", {"title": "Mine"}, format="json").status_code == 404
    assert bob.delete(f"/api/studies/{draft.slug}/").status_code == 404
    draft.refresh_from_db()
    assert draft.title == "likert study"


def test_an_invite_is_read_and_revoked_by_delete_and_another_researcher_gets_404(api, bob, make_study):
    study = make_study("likert")
    made = api.post(f"/api/studies/{study.slug}/invites/", {"label": "ann"}, format="json").json()
    path = f"/api/studies/{study.slug}/invites/{made['id']}/"
    assert bob.get(path).status_code == 404 and bob.delete(path).status_code == 404
    assert Invite.objects.get(pk=made["id"]).revoked_at is None
    assert api.get(path).json()["status"] == "open"
    assert api.delete(path).status_code == 204
    assert api.get(path).json()["status"] == "revoked" and Invite.objects.get(pk=made["id"]).revoked_at is not None


def test_invites_are_made_several_at_once_all_or_none(api, make_study):
    study = make_study("likert")
    made = api.post(f"/api/studies/{study.slug}/invites/", {"label": "panel", "count": 3}, format="json")
    assert made.status_code == 201
    body = made.json()
    assert len(body["invites"]) == 3 and body["id"] == body["invites"][0]["id"]
    assert len({link["url"] for link in body["invites"]}) == 3
    assert set(Invite.objects.filter(study=study).values_list("pk", flat=True)) == {i["id"] for i in body["invites"]}
    for count in (0, 201, "many", True):
        refused = api.post(f"/api/studies/{study.slug}/invites/", {"count": count}, format="json")
        assert refused.status_code == 400 and "count" in problem_fields(refused), count
    assert Invite.objects.filter(study=study).count() == 3
    draft = make_study("likert", publish=False)
    StudyItem.objects.filter(study=draft).delete()  # no items: no link, and none of the five is made
    refused = api.post(f"/api/studies/{draft.slug}/invites/", {"count": 5}, format="json")
    assert refused.status_code == 400 and not Invite.objects.filter(study=draft).exists()


def test_a_check_item_is_removed_by_delete_in_a_draft_only(api, bob, draft):
    item = add_check(draft, [{"response": 1, "value": 2}], texts=LIKERT_TEXTS)
    path = f"/api/studies/{draft.slug}/checks/{item.pk}/"
    assert bob.delete(path).status_code == 404 and StudyItem.objects.filter(pk=item.pk).exists()
    assert api.delete(path).status_code == 204 and not StudyItem.objects.filter(pk=item.pk).exists()
    kept = add_check(draft, [{"response": 1, "value": 2}], texts=LIKERT_TEXTS)
    authoring.study_publish(study=draft)
    refused = api.delete(f"/api/studies/{draft.slug}/checks/{kept.pk}/")
    assert refused.status_code == 409 and StudyItem.objects.filter(pk=kept.pk).exists()


def test_a_collaborator_is_removed_by_delete_by_the_owner_only(api, user, bob, other_user, draft):
    experiment = draft.experiment
    editing.experiment_collaborator_add(experiment=experiment, by=user, identifier=other_user.username)
    refused = bob.delete(f"/api/experiments/{experiment.slug}/collaborators/{other_user.username}/")
    assert refused.status_code == 400 and "user" in problem_fields(refused)
    assert experiment.collaborators.filter(pk=other_user.pk).exists()
    unknown = api.delete(f"/api/experiments/{experiment.slug}/collaborators/nobody-here/")
    assert unknown.status_code == 400 and "user" in problem_fields(unknown)
    assert api.delete(f"/api/experiments/{experiment.slug}/collaborators/{other_user.username}/").status_code == 204
    assert not experiment.collaborators.filter(pk=other_user.pk).exists()
    assert bob.get(f"/api/experiments/{experiment.slug}/").status_code == 404  # access gone


def test_delete_is_idempotent_with_a_key(api, make_study):
    study = make_study("likert", publish=False)
    headers = {"HTTP_IDEMPOTENCY_KEY": "delete-once"}
    first = api.delete(f"/api/studies/{study.slug}/", **headers)
    again = api.delete(f"/api/studies/{study.slug}/", **headers)
    assert first.status_code == again.status_code == 204 and again["Idempotent-Replayed"] == "true"


def test_the_study_page_makes_several_links_through_the_same_service(client, user, make_study):
    study = make_study("likert")
    client.force_login(user)
    client.post(f"/studies/{study.slug}/invites/new/", {"label": "lab", "expires_in_days": "3", "count": "4"})
    assert list(Invite.objects.filter(study=study).values_list("label", flat=True)) == ["lab"] * 4
    client.post(f"/studies/{study.slug}/invites/new/", {"expires_in_days": "3", "count": "201"})
    assert Invite.objects.filter(study=study).count() == 4


def test_an_imported_benchmark_is_neither_changed_nor_deleted_409(api, user):
    benchmark = Experiment.objects.create(slug="grade-bench", title="GRADE", owner=user, is_benchmark=True)
    changed = api.patch(f"/api/experiments/{benchmark.slug}/", {"title": "Mine"}, format="json")
    deleted = api.delete(f"/api/experiments/{benchmark.slug}/")
    assert changed.status_code == deleted.status_code == 409
    benchmark.refresh_from_db()
    assert benchmark.title == "GRADE"
