"""The small convention gaps a notebook user met: the login operation declares no security and answers
``expires_at`` (``expires`` kept, deprecated); item positions and ids are integers in the schema; an unknown
/api/ path is the problem JSON 404 with DEBUG on too; a study shows its rater link key and studies filter by
``design``; the checks list refuses unknown parameters; synchronous imports are listed; a corpus-name clash
is reported under ``corpus``; a duplicated study is named after the original, not after its design."""
import io
import json

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from studies.authoring import services as authoring
from studies.models import ImportJob
from tests.conftest import jsonl_bytes
from tests.problems import problem_fields

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def schema(tmp_path_factory, django_db_blocker):
    import yaml

    path = tmp_path_factory.mktemp("schema") / "schema.yaml"
    with django_db_blocker.unblock():
        call_command("spectacular", "--file", str(path))
    return yaml.safe_load(path.read_text())


def test_login_declares_no_security_and_answers_expires_at(schema, user):
    operation = schema["paths"]["/api/auth/token/"]["post"]
    assert operation.get("security") in (None, [], [{}])
    issued = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    properties = schema["components"]["schemas"][issued]["properties"]
    assert "expires_at" in properties and "deprecated" in properties["expires"]["description"]
    body = APIClient().post("/api/auth/token/", {"username": "alice", "password": "pw-concord"}, format="json").json()
    assert body["expires_at"] == body["expires"] and body["token"]


def test_rater_position_and_ids_are_integers_in_the_schema(schema):
    item = schema["paths"]["/api/rate/assignments/{token}/items/{position}/"]["get"]["parameters"]
    assert {p["name"]: p["schema"]["type"] for p in item if p["in"] == "path"} == {"position": "integer",
                                                                                 "token": "string"}
    invite = schema["paths"]["/api/studies/{slug}/invites/{id}/"]["get"]["parameters"]
    assert [p["schema"]["type"] for p in invite if p["name"] == "id"] == ["integer"]


def test_unknown_api_path_is_problem_json_even_with_debug(api, settings):
    settings.DEBUG = True
    for path in ("/api/no/such/thing/", "/api/studies/x/nothing-here/", "/api/nope"):
        response = api.get(path)
        assert response.status_code == 404 and response["Content-Type"] == "application/problem+json", path
        assert response.json()["type"] == "urn:concord:problem:not_found"
    assert api.get("/api/studies").status_code == 301  # a missing final slash still finds its view


def test_study_shows_its_rater_key_and_studies_filter_by_design(api, make_study):
    likert = make_study("likert")
    bws = make_study("bws", publish=False)
    assert api.get(f"/api/studies/{likert.slug}/").json()["rater_key"] == likert.rater_key
    assert [s["slug"] for s in api.get("/api/studies/", {"design": "bws"}).json()["results"]] == [bws.slug]
    refused = api.get("/api/studies/", {"design": "poll"})
    assert refused.status_code == 400 and "design" in problem_fields(refused)


def test_checks_list_refuses_unknown_query_parameters(api, make_study):
    study = make_study("likert", publish=False)
    assert api.get(f"/api/studies/{study.slug}/checks/").status_code == 200
    refused = api.get(f"/api/studies/{study.slug}/checks/", {"kind": "gold"})
    assert refused.status_code == 400 and "kind" in problem_fields(refused)


def _upload(name="x.jsonl", corpus=None):
    upload = io.BytesIO(jsonl_bytes([{"id": "x1", "turns": ["Hi", "Hey"], "responses": {"sysA": "hello"}}],
                                    {"concord": "dialogues/1", "systems": ["sysA"]}))
    upload.name = name
    return {"file": upload, "format": "auto", **({"corpus": corpus} if corpus else {})}


def test_synchronous_imports_are_listed(api):
    made = api.post("/api/imports/", _upload(), format="multipart")
    assert made.status_code == 201, made.content
    listed = api.get("/api/imports/").json()["results"]
    assert [(j["status"], j["corpus"], j["source_name"]) for j in listed] == \
           [("done", json.loads(made.content)["corpus"], "x.jsonl")]
    assert listed[0]["counts"]["conversations"] == 1 and ImportJob.objects.get().path == ""


def test_corpus_name_clash_is_reported_under_corpus(api, corpus):
    clash = api.post("/api/imports/", _upload(corpus=corpus.slug), format="multipart")
    assert clash.status_code == 400 and "corpus" in problem_fields(clash) and "file" not in problem_fields(clash)


def test_duplicated_study_is_named_after_the_original(api, user, corpus):
    experiment = authoring.experiment_create(owner=user, title="Demo")
    labels = authoring.study_create(experiment=experiment, title="Labels", design="likert", slug="demo-labels",
                                    criteria=[{"name": "safety", "kind": "categorical",
                                               "options": {"labels": ["safe", "unsafe"]}}])
    first = api.post(f"/api/studies/{labels.slug}/duplicate/", {}, format="json").json()["slug"]
    second = api.post(f"/api/studies/{first}/duplicate/", {}, format="json").json()["slug"]
    assert (first, second) == ("demo-labels-2", "demo-labels-3")


def test_design_config_is_typed_with_every_designs_keys(schema):
    from studies.designs import DESIGNS

    typed = schema["components"]["schemas"]["DesignConfigSchema"]["properties"]
    assert set(typed) == {key for design in DESIGNS.values() for key in design.defaults}
    assert typed["points"]["type"] == "integer" and typed["labels"]["type"] == "array"
    for path in ("StudyOutput", "StudyCreateInputRequest"):
        assert schema["components"]["schemas"][path]["properties"]["design_config"]["$ref"].endswith(
            "DesignConfigSchema" + ("Request" if "Request" in path else ""))


def test_a_post_to_no_api_view_is_the_problem_404_not_a_csrf_page():
    from django.test import Client

    response = Client(enforce_csrf_checks=True).post("/api/studies/%C2%9F/practice/items/", {})
    assert response.status_code == 404 and response["Content-Type"] == "application/problem+json"


def test_checks_list_is_paged_by_limit_and_offset_as_every_list(api, make_study, other_user):
    from studies.authoring import checks

    study = make_study("likert", publish=False)
    made = [checks.check_item_create(study=study, kind="instructed", context=f"A: Question {n}?",
                                     responses=["Yes.", "No.", "Maybe.", "Later."],
                                     rules=[{"response": 1, "value": 5}]).pk
            for n in range(3)]
    url = f"/api/studies/{study.slug}/checks/"
    first = api.get(url, {"limit": 2}).json()
    assert (first["count"], [i["id"] for i in first["results"]]) == (3, made[:2]) and first["next"]
    rest = api.get(url, {"limit": 2, "offset": 2}).json()
    assert [i["id"] for i in rest["results"]] == made[2:] and rest["next"] is None and rest["previous"]
    assert set(first) == {"count", "next", "previous", "results", "settings", "flagged"}
    for params, field in (({"limit": "x"}, "limit"), ({"offset": "-3"}, "offset"), ({"page": "2"}, "page")):
        refused = api.get(url, params)
        assert refused.status_code == 400 and field in problem_fields(refused), params
    assert APIClient().get(url).status_code == 401
    from tests.api.test_convention import client_of

    assert client_of(other_user).get(url).status_code == 404


def test_invites_filter_by_status_and_label_or_refuse_by_name(api, make_study):
    from studies.rating import invites

    study = make_study("likert")
    kept, revoked, _ = [api.post(f"/api/studies/{study.slug}/invites/", {"label": label}, format="json").json()["id"]
                        for label in ("panel", "panel", "solo")]
    invites.invite_revoke(invite=study.invites.get(pk=revoked))
    url = f"/api/studies/{study.slug}/invites/"
    assert [i["id"] for i in api.get(url, {"status": "revoked"}).json()["results"]] == [revoked]
    assert {i["id"] for i in api.get(url, {"status": "open", "label": "panel"}).json()["results"]} == {kept}
    assert api.get(url, {"label": "nobody"}).json()["count"] == 0
    for params, field in (({"status": "lost"}, "status"), ({"design": "likert"}, "design")):
        refused = api.get(url, params)
        assert refused.status_code == 400 and field in problem_fields(refused), params


def test_metric_models_filter_by_metric_level_and_kind_or_refuse_by_name(api):
    from metrics.scoring import services

    readability, cosine = (services.metric_model_default(key=key) for key in ("readability", "cosine_last"))
    names = lambda **params: {m["name"] for m in api.get("/api/metrics/models/", params).json()["results"]}  # noqa: E731
    assert names(metric="readability") == {readability.name}
    assert names(kind=readability.metric.kind) >= {readability.name}
    assert cosine.name in names(level=cosine.metric.level) and readability.name not in names(metric="cosine_last")
    for params, field in (({"level": "sentence"}, "level"), ({"kind": "magic"}, "kind"), ({"design": "x"}, "design")):
        refused = api.get("/api/metrics/models/", params)
        assert refused.status_code == 400 and field in problem_fields(refused), params


def test_human_metric_unit_is_the_studys_never_null(api, make_study):
    from metrics.scoring import services
    from tests.api.test_report_schemas import bot_rates

    tuples = make_study("bws_tuples", raters_per_item=2, items_per_assignment=6, tuple_size=3)
    bot_rates(tuples, 2)
    model = services.metric_model_default(key="readability")
    services.scoring_run_execute(run=services.scoring_run_create(metric_model=model, study=tuples, enqueue=False))
    cells = api.get(f"/api/experiments/{tuples.experiment.slug}/metrics/{model.name}/", {"study": tuples.slug})
    assert cells.status_code == 200, cells.content[:300]
    assert cells.json()["cells"] and {cell["unit"] for cell in cells.json()["cells"]} == {tuples.unit}
