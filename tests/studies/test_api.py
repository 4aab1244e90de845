"""Researcher API: token auth, ownership (404, not 403), create/publish flow, import, export, schema."""
import csv
import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.validation import validate_schema
from rest_framework.test import APIClient

from studies.authoring import services as authoring
from studies.models import Conversation, Corpus
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from studies.reports import selectors
from tests.conftest import small_corpus_lines
from tests.problems import problem_fields

pytestmark = pytest.mark.django_db


def test_anonymous_requests_are_refused():
    assert APIClient().get("/api/studies/").status_code == 401


def test_token_from_password(user):
    response = APIClient().post("/api/auth/token/", {"username": "alice", "password": "pw-concord"})
    assert response.status_code == 200 and response.json()["token"].startswith("cnc_")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {response.json()['token']}")
    assert client.get("/api/experiments/").status_code == 200


@pytest.mark.parametrize("path", [
    "/api/studies/{slug}/", "/api/studies/{slug}/progress/", "/api/studies/{slug}/items/",
    "/api/studies/{slug}/ratings/",
])
def test_another_researchers_study_is_a_404(api, other_user, path):
    theirs = authoring.experiment_create(owner=other_user, title="Theirs", conditions=[{"title": "T", "design": "likert"}])
    slug = theirs.studies.get().slug
    assert api.get(path.format(slug=slug)).status_code == 404
    assert api.get(path.format(slug="no-such-study")).status_code == 404


def test_another_researchers_study_cannot_be_changed(api, other_user):
    theirs = authoring.experiment_create(owner=other_user, title="Theirs", conditions=[{"title": "T", "design": "likert"}])
    study = theirs.studies.get()
    assert api.post(f"/api/studies/{study.slug}/publish/").status_code == 404
    assert api.post("/api/studies/create/", {"experiment": theirs.slug, "title": "x", "design": "rme"},
                    format="json").status_code == 404
    study.refresh_from_db()
    assert study.status == "draft" and theirs.studies.count() == 1


def test_collaborators_see_shared_experiments(api, user, other_user):
    shared = authoring.experiment_create(owner=other_user, title="Shared", conditions=[{"title": "T", "design": "bws"}])
    shared.collaborators.add(user)
    assert [s["slug"] for s in api.get("/api/studies/").json()["results"]] == [shared.studies.get().slug]


def test_create_build_publish_and_progress_through_the_api(api, corpus):
    assert api.post("/api/experiments/create/", {"title": "Pilot", "slug": "pilot"}, format="json").status_code == 201
    created = api.post("/api/studies/create/", {
        "experiment": "pilot", "title": "Pilot RME", "design": "rme", "raters_per_item": 3, "items_per_assignment": 2,
        "criteria": [{"name": "coherence", "question": "Does it follow?"}]}, format="json")
    assert created.status_code == 201, created.json()
    slug = created.json()["slug"]
    assert created.json()["design_config"] == {"reference_value": 100, "min": 0, "max": 999}
    built = api.post(f"/api/studies/{slug}/items/build/", {"corpus": corpus.slug, "reference_system": "human"}, format="json")
    assert built.json() == {"items": 6}
    items = api.get(f"/api/studies/{slug}/items/?limit=2").json()
    assert items["count"] == 6 and len(items["results"]) == 2
    assert items["results"][0]["reference_value"] == 100
    assert {r["system"] for r in items["results"][0]["responses"]} == {"hred", "seq2seq", "thred"}
    assert api.post(f"/api/studies/{slug}/publish/").json()["status"] == "published"
    progress = api.get(f"/api/studies/{slug}/progress/").json()
    assert (progress["items"], progress["needed"], progress["done"]) == (6, 18, 0)


def test_bad_design_config_is_a_400_naming_the_field(api, user):
    authoring.experiment_create(owner=user, title="E", slug="e")
    response = api.post("/api/studies/create/", {"experiment": "e", "title": "x", "design": "likert",
                                                 "design_config": {"points": 40}}, format="json")
    assert response.status_code == 400
    assert "design_config.points" in problem_fields(response)


def test_publish_without_items_is_a_400_with_the_reason(api, user):
    experiment = authoring.experiment_create(owner=user, title="E", conditions=[{"title": "T", "design": "likert"}])
    response = api.post(f"/api/studies/{experiment.studies.get().slug}/publish/")
    assert response.status_code == 409 and "no items" in response.json()["detail"]  # a state conflict


def test_import_upload_succeeds_and_bad_upload_names_line_and_writes_nothing(api):
    ok = api.post("/api/imports/", {"file": SimpleUploadedFile("pilot.jsonl", small_corpus_lines(3))}, format="multipart")
    assert ok.status_code == 201, ok.json()
    assert (ok.json()["corpus"], ok.json()["conversations"], ok.json()["responses"]) == ("pilot", 3, 12)
    bad = small_corpus_lines(2) + b'{"id": "c7", "turns": ["x"], "responses": {"hred": ""}}\n'
    response = api.post("/api/imports/", {"file": SimpleUploadedFile("bad.jsonl", bad)}, format="multipart")
    assert response.status_code == 400
    assert problem_fields(response)["file"] == ["line 4, responses.hred: is empty"]
    assert list(Corpus.objects.values_list("slug", flat=True)) == ["pilot"]
    assert Conversation.objects.count() == 3


def test_export_streams_tidy_csv_for_the_owner(api, make_study):
    study = make_study("likert", raters_per_item=1)
    worker = rater_entry.rater_get_or_create(platform="prolific", external_id="p1")
    assignment = rater_entry.assignment_start(study=study, rater=worker)
    for slot in assignment.assignment_items.all():
        answering.ratings_record(assignment=assignment, item_id=slot.item_id,
                                answers={c: dict.fromkeys(slot.response_order, 5) for c in ("readability", "coherence")})
    response = api.get(f"/api/studies/{study.slug}/ratings/?format=csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(rows) == 6 * 4 * 2
    pseudonym = selectors.rater_pseudonym(study.experiment_id, worker.pk)
    assert {(r["rater"], r["platform"], r["value"], r["design"]) for r in rows} == {(pseudonym, "prolific", "5.0", "likert")}
    assert "no-store" in response["Cache-Control"].split(", ")
    raw = api.get(f"/api/studies/{study.slug}/ratings/?format=csv&raw_ids=1")
    assert {r["rater"] for r in csv.DictReader(io.StringIO(b"".join(raw.streaming_content).decode()))} == {"p1"}
    assert api.get(f"/api/studies/{study.slug}/ratings/?format=xml").status_code == 400


def test_schema_validates_and_documents_every_operation():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    validate_schema(schema)
    paths = schema["paths"]
    for path in ("/api/studies/", "/api/studies/{slug}/progress/", "/api/imports/", "/api/studies/{slug}/ratings/"):
        assert path in paths
    assert APIClient().get("/api/docs/").status_code == 200


def test_export_command_names_raters_by_pseudonym_unless_raw_ids(make_study, tmp_path):
    from django.core.management import call_command

    study = make_study("likert", raters_per_item=1)
    worker = rater_entry.rater_get_or_create(platform="mturk", external_id="=cmd|' /C calc'!A0")
    assignment = rater_entry.assignment_start(study=study, rater=worker)
    for slot in assignment.assignment_items.all():
        answering.ratings_record(assignment=assignment, item_id=slot.item_id,
                                answers={c: dict.fromkeys(slot.response_order, 4) for c in ("readability", "coherence")})
    out = tmp_path / "ratings.csv"
    call_command("export_ratings", "--study", study.slug, "-o", str(out))
    assert {r["rater"] for r in csv.DictReader(out.open())} == {selectors.rater_pseudonym(study.experiment_id, worker.pk)}
    call_command("export_ratings", "--study", study.slug, "-o", str(out), "--raw-ids")
    assert {r["rater"] for r in csv.DictReader(out.open())} == {"'=CMD|' /C CALC'!A0"}  # MTurk ids are stored upper case
