"""The OpenAPI schema documents every endpoint with its own schemas and errors, and the running API
keeps to it: drf-spectacular's validator, then schemathesis against a live server."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command

from tests.factories import token_for

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def schema(tmp_path_factory):
    path = tmp_path_factory.mktemp("schema") / "schema.yml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(path))  # SystemExit on a warning
    return yaml.safe_load(path.read_text())


def response_ref(schema, path, method, code):
    content = schema["paths"][path][method]["responses"][code]["content"]
    media = "application/problem+json" if int(code) >= 400 else "application/json"
    return content[media]["schema"]["$ref"].rpartition("/")[2]


def test_schema_validates_without_a_warning_and_every_endpoint_has_its_own_component(schema):
    assert response_ref(schema, "/api/imports/{id}/", "get", "200") == "ImportJobDetailOutput"
    experiments = schema["components"]["schemas"][response_ref(schema, "/api/experiments/", "get", "200")]
    assert experiments["properties"]["results"]["items"]["$ref"].endswith("/ExperimentListOutput")  # one pagination
    items = response_ref(schema, "/api/studies/{slug}/items/", "get", "200")
    assert set(schema["components"]["schemas"][items]["properties"]) >= {"count", "next", "previous", "results"}
    body = schema["paths"]["/api/metrics/runs/"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body["$ref"].endswith("/ScoringRunCreateInputRequest")


def test_schema_documents_the_error_answers_as_one_problem_envelope(schema):
    for path, method, code in [("/api/studies/{slug}/", "get", "404"), ("/api/experiments/", "get", "401"),
                               ("/api/studies/create/", "post", "400"), ("/api/metrics/training/", "post", "403"),
                               ("/api/studies/{slug}/publish/", "post", "409"),
                               ("/api/crowd/publications/{id}/publish/", "post", "502")]:
        assert response_ref(schema, path, method, code) == "Problem", (path, code)
    assert set(schema["components"]["schemas"]["Problem"]["required"]) == {"type", "title", "status", "detail", "errors"}
    assert "400" in schema["paths"]["/api/experiments/"]["get"]["responses"]  # limit/offset and filters are checked
    assert "400" not in schema["paths"]["/api/studies/{slug}/"]["get"]["responses"]


@pytest.mark.django_db(transaction=True)
def test_schemathesis_finds_no_server_error_and_no_schema_mismatch(live_server, user, make_study, tmp_path):
    """Bounded for a 2-core CI box: a few examples per operation, one worker, a time cap (45 s).
    A fixed seed keeps CI reproducible; CONCORD_SCHEMATHESIS_SEED explores other inputs."""
    st = shutil.which("st", path=str(Path(sys.executable).parent))
    if st is None:
        pytest.skip("schemathesis is not installed (pip install -r requirements.txt)")
    make_study("likert")
    token = token_for(user)
    command = [st, "run", f"{live_server.url}/api/schema/", "--header", f"Authorization: Token {token}",
               "--checks", "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance",
               "--max-examples", "8", "--workers", "1", "--seed", os.environ.get("CONCORD_SCHEMATHESIS_SEED", "17"), "--max-time", "45", "--request-timeout", "20",
               # The actions on a publication call Mechanical Turk or Prolific; tests never reach a platform
               # (CROWD_PLATFORM_CALLS is off), so they could only answer 502: tests/crowd stubs them instead.
               "--exclude-path-regex", r"^/api/crowd/publications/\{id\}/.+",
               "--no-shrink", "--report", "junit", "--report-dir", str(tmp_path), "--warnings", "off"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path,
                            env={**os.environ, "SCHEMATHESIS_HOOKS": ""})
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]


@pytest.mark.django_db
def test_a_path_under_api_that_matches_no_view_answers_the_documented_json_404(api, client):
    missing = api.get("/api/metrics/runs/not-a-number/cancel/")
    assert missing.status_code == 404
    assert missing["Content-Type"] == "application/problem+json"
    assert missing.json() == {"type": "urn:concord:problem:not_found", "title": "Not found", "status": 404,
                              "detail": "No API endpoint at /api/metrics/runs/not-a-number/cancel/.", "errors": []}
    page = client.get("/no-such-page/")
    assert page.status_code == 404 and page["Content-Type"].startswith("text/html")


def test_schema_names_the_judgement_kind_enum_with_every_kind(schema):
    """Generated clients import ``JudgementKindEnum``: the override must list the kinds there are, or the enum
    loses its name as soon as a kind is added."""
    from studies.designs.kinds import KINDS

    assert schema["components"]["schemas"]["JudgementKindEnum"]["enum"] == list(KINDS)
