"""The API's one convention, through the test client on a fresh database: every error in one RFC 9457
envelope (two different validation errors, a 404, a 409, an unknown /api/ path), unknown fields and
filters refused by name, filters that work, one strict pagination, and ``Idempotency-Key`` on creates
and actions (per user: another researcher's same key is theirs)."""
import pytest
from rest_framework.test import APIClient

from studies.authoring import services as authoring
from studies.models import Invite
from studies.rating import closing
from tests.factories import token_for
from tests.problems import problem_fields

pytestmark = pytest.mark.django_db
ENVELOPE = {"type", "title", "status", "detail", "errors"}


def client_of(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_for(user)}")
    return client


def test_an_unknown_field_is_a_400_naming_it_and_nothing_is_made(api):
    response = api.post("/api/experiments/create/", {"title": "T", "titel": "typo"}, format="json")
    assert response.status_code == 400 and response["Content-Type"] == "application/problem+json"
    assert set(response.json()) == ENVELOPE and "titel" in problem_fields(response)
    assert "title" in problem_fields(response)["titel"][0]  # says what it takes
    nested = api.post("/api/studies/create/", {"experiment": "x", "title": "T", "design": "likert",
                                               "criteria": [{"name": "fluency", "colour": "red"}]}, format="json")
    assert nested.status_code == 400 and "criteria.0.colour" in problem_fields(nested)


def test_two_different_validation_errors_share_one_envelope(api, make_study):
    study = make_study("likert", publish=False)
    missing = api.post("/api/studies/create/", {"title": "T"}, format="json")
    service = api.post("/api/studies/create/", {"experiment": study.experiment.slug, "title": "T", "design": "likert",
                                                "design_config": {"points": 40}}, format="json")
    assert missing.status_code == service.status_code == 400
    assert set(missing.json()) == set(service.json()) == ENVELOPE
    assert {"experiment", "design"} <= set(problem_fields(missing))
    assert "design_config.points" in problem_fields(service)
    assert missing.json()["type"] == service.json()["type"] == "urn:concord:problem:invalid"


def test_not_found_conflict_and_unknown_paths_are_problems(api, make_study, other_user):
    study = make_study("likert")
    theirs = authoring.experiment_create(owner=other_user, title="Theirs", conditions=[{"title": "T", "design": "likert"}])
    hidden = api.get(f"/api/studies/{theirs.studies.get().slug}/")
    unknown = api.get("/api/no/such/thing/")
    closing.study_close(study=study)
    conflict = api.post(f"/api/studies/{study.slug}/publish/")
    for response, code in ((hidden, 404), (unknown, 404), (conflict, 409)):
        assert response.status_code == code and response["Content-Type"] == "application/problem+json"
        assert set(response.json()) == ENVELOPE and response.json()["status"] == code
    assert conflict.json()["type"] == "urn:concord:problem:conflict" and conflict.json()["detail"]


def test_filters_work_or_are_refused(api, user, make_study):
    first = make_study("likert", publish=False)
    second = make_study("rme")
    listed = api.get("/api/studies/", {"experiment": first.experiment.slug}).json()
    assert [s["slug"] for s in listed["results"]] == [first.slug]
    assert [s["slug"] for s in api.get("/api/studies/", {"status": "published"}).json()["results"]] == [second.slug]
    for params, field in (({"status": "finished"}, "status"), ({"colour": "red"}, "colour"),
                          ({"limit": "abc"}, "limit"), ({"offset": "-1"}, "offset"), ({"limit": "0"}, "limit")):
        response = api.get("/api/studies/", params)
        assert response.status_code == 400 and field in problem_fields(response), params
    for params, field in (({"page": "2"}, "page"), ({"limit": "abc"}, "limit"), ({"offset": "-1"}, "offset")):
        refused = api.get(f"/api/studies/{second.slug}/browse/", params)  # the browser pages as every list
        assert refused.status_code == 400 and field in problem_fields(refused), params
    assert api.get(f"/api/studies/{second.slug}/browse/", {"limit": "1", "offset": "99"}).json()["results"] == []


def test_every_list_has_one_pagination(api, make_study):
    make_study("likert")
    for path in ("/api/experiments/", "/api/studies/", "/api/metrics/models/"):
        body = api.get(path, {"limit": 1}).json()
        assert set(body) == {"count", "next", "previous", "results"} and len(body["results"]) == 1, path


def test_an_idempotency_key_makes_one_invite_and_refuses_another_body(api, user, other_user, make_study):
    study = make_study("likert")
    headers = {"HTTP_IDEMPOTENCY_KEY": "retry-1"}
    first = api.post(f"/api/studies/{study.slug}/invites/", {"label": "ann"}, format="json", **headers)
    again = api.post(f"/api/studies/{study.slug}/invites/", {"label": "ann"}, format="json", **headers)
    assert first.status_code == again.status_code == 201 and first.json() == again.json()
    assert again["Idempotent-Replayed"] == "true" and Invite.objects.filter(study=study).count() == 1
    other_body = api.post(f"/api/studies/{study.slug}/invites/", {"label": "bo"}, format="json", **headers)
    assert other_body.status_code == 409 and Invite.objects.filter(study=study).count() == 1
    # the key is per user: another researcher's same key is their own (and this study stays hidden from them)
    theirs = client_of(other_user).post("/api/experiments/create/", {"title": "Bob's"}, format="json", **headers)
    assert theirs.status_code == 201 and theirs.json()["title"] == "Bob's"
    # a refusal is not kept: corrected, the same key goes through
    bad = api.post("/api/experiments/create/", {"title": ""}, format="json", HTTP_IDEMPOTENCY_KEY="make-2")
    good = api.post("/api/experiments/create/", {"title": "Fixed"}, format="json", HTTP_IDEMPOTENCY_KEY="make-2")
    assert bad.status_code == 400 and good.status_code == 201
