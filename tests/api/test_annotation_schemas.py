"""Annotation responses a generated client can read as typed models, not untyped objects: the report's per-turn
section (each behaviour's test between systems, agreement per behaviour), the span agreement (token level,
exact and overlapping span F1) and the Label Studio export's tasks (data, annotations, results and their
values) declare their properties; live answers of rated studies validate against what the schema declares,
and a mutated answer does not."""
import json

import pytest
from drf_spectacular.generators import SchemaGenerator
from openapi_schema_validator import OAS30Validator

from studies.models import AssignmentItem
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from tests.studies import dataio_files
from tests.studies.per_turn_helpers import study_make
from tests.studies.test_span_kind import rated_span_study  # noqa: F401 - a span study three raters answered

pytestmark = pytest.mark.django_db

STUDY_REPORT = "/api/studies/{slug}/report/"
SPAN_AGREEMENT = "/api/studies/{slug}/span-agreement/"
LABEL_STUDIO = "/api/studies/{slug}/label-studio/"


@pytest.fixture(scope="module")
def openapi():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(json.dumps(schema, default=str))


def schema_errors(openapi, path: str, data) -> list[str]:
    schema = openapi["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    validator = OAS30Validator({**schema, "components": openapi["components"]})
    return [f"{'/'.join(map(str, error.absolute_path))}: {error.message}" for error in validator.iter_errors(data)]


def properties(openapi, name: str) -> dict:
    return openapi["components"]["schemas"][name]["properties"]


def ref(prop: dict) -> str:
    """The component a property names (directly, through allOf, or as its array's items)."""
    prop = prop.get("items", prop)
    target = prop.get("$ref") or prop["allOf"][0]["$ref"]
    return target.rpartition("/")[2]


def test_per_turn_span_and_label_studio_figures_are_typed_components(openapi):
    per_turn = properties(openapi, "PerTurnCriterion")
    assert ref(per_turn["agreement"]) == "PerTurnAgreement"
    assert ref(properties(openapi, "PerTurnAgreement")["per_label"]) == "PerTurnLabelAgreement"
    assert {"alpha", "raw_agreement", "pairs"} <= set(properties(openapi, "PerTurnLabelAgreement"))
    assert ref(properties(openapi, "PerTurnBehaviour")["test"]) == "SystemAssociation"
    assert {"chi2", "df", "p", "cramers_v", "fisher_p"} <= set(properties(openapi, "SystemAssociation"))
    span = properties(openapi, "SpanAgreement")
    assert ref(span["token"]) == "SpanTokenAgreement"
    assert ref(span["exact"]) == ref(span["overlap"]) == "SpanMatch"
    assert set(properties(openapi, "SpanMatch")) == {"f1", "pairs", "spans"}
    tasks = properties(openapi, "LabelStudioExportOutput")["tasks"]
    assert ref(tasks) == "LabelStudioTask"
    assert ref(properties(openapi, "LabelStudioTask")["annotations"]) == "LabelStudioAnnotation"
    assert ref(properties(openapi, "LabelStudioAnnotation")["result"]) == "LabelStudioResult"
    assert {"rating", "number", "choices", "text"} == set(properties(openapi, "LabelStudioValue"))


def rate_turns(study, name, labels_for):
    """A rater answers every dialogue's judged turns with ``labels_for(turn index)``."""
    rater = rater_entry.rater_get_or_create(platform="invite", external_id=name)
    assignment = rater_entry.assignment_start(study=study, rater=rater, seed=len(name))
    for slot in AssignmentItem.objects.filter(assignment=assignment).select_related("item__conversation"):
        turns = slot.item.conversation.turns
        given = {i: labels_for(i) for i in range(1, len(turns), 2)}
        answering.ratings_record(assignment=assignment, item_id=slot.item_id,
                                 answers={"problems": {slot.item.conversation_id: given}})
    return answering.assignment_submit(assignment=assignment)


def test_a_per_turn_report_matches_its_schema(api, openapi, user):
    study = study_make(user, n=4, raters=2)
    rate_turns(study, "r1", lambda i: ["redundant"] if i == 1 else [])
    rate_turns(study, "r2", lambda i: ["redundant", "irrelevant"] if i == 3 else [])
    report = api.get(f"/api/studies/{study.slug}/report/")
    assert report.status_code == 200, report.content[:300]
    data = report.json()
    (section,) = data["per_turn"]
    assert section["agreement"]["per_label"] and section["rates"][0]["test"]["df"] >= 0
    assert not schema_errors(openapi, STUDY_REPORT, data)
    broken = {**data, "per_turn": [{**section, "agreement": {**section["agreement"], "per_label": [{"label": 3}]}}]}
    assert schema_errors(openapi, STUDY_REPORT, broken)


def test_a_span_agreement_matches_its_schema(api, openapi, rated_span_study):  # noqa: F811
    answer = api.get(f"/api/studies/{rated_span_study.slug}/span-agreement/")
    assert answer.status_code == 200, answer.content[:300]
    data = answer.json()
    assert data[0]["exact"]["pairs"] > 0 and data[0]["token"]["tokens"] > 0
    assert not schema_errors(openapi, SPAN_AGREEMENT, data)
    assert schema_errors(openapi, SPAN_AGREEMENT, [{**data[0], "exact": {"f1": "high", "pairs": 1, "spans": 2}}])


def test_a_label_studio_export_matches_its_schema(api, openapi, user):
    summary = dataio_files.import_bytes(user, dataio_files.fixture_bytes("label_studio_export.json"),
                                        "label_studio_export.json")
    answer = api.get(f"/api/studies/{summary.benchmark_study.slug}/label-studio/")
    assert answer.status_code == 200, answer.content[:300]
    data = answer.json()
    kinds = {r["type"] for t in data["tasks"] for a in t["annotations"] for r in a["result"]}
    assert {"rating", "choices"} <= kinds
    assert not schema_errors(openapi, LABEL_STUDIO, data)
    task = data["tasks"][0]
    assert schema_errors(openapi, LABEL_STUDIO, {**data, "tasks": [{**task, "annotations": [{"result": "none"}]}]})


CHECKS = "/api/studies/{slug}/checks/"


def test_check_rules_and_context_are_typed_and_a_live_check_list_matches(api, openapi, user):
    from studies.authoring import checks

    request = openapi["paths"]["/api/studies/{slug}/checks/create/"]["post"]["requestBody"]["content"]
    body = openapi["components"]["schemas"][ref(request["application/json"]["schema"])]["properties"]
    assert ref(body["rules"]) == "CheckRuleRequest"
    assert [option.get("type") for option in body["context"]["oneOf"]] == ["string", "array"]
    rule = properties(openapi, "CheckRule")
    assert {"criterion", "response", "value", "min", "max", "greater", "than", "best", "worst", "label", "labels",
            "turns", "spans", "min_match"} == set(rule)
    assert rule["turns"]["additionalProperties"]["oneOf"][0]["items"]["type"] == "string"
    assert ref(properties(openapi, "CheckItem")["rules"]) == "CheckRule"

    study = study_make(user, publish=False, raters=1)
    checks.check_item_create(study=study, kind="gold", context=[
        {"speaker": "user", "text": "I love hiking."}, {"speaker": "bot", "text": "I love hiking."}],
        rules=[{"criterion": "problems", "response": 1, "turns": {"1": ["redundant"]}, "min_match": 1.0}])
    listed = api.get(f"/api/studies/{study.slug}/checks/")
    assert listed.status_code == 200, listed.content[:300]
    data = listed.json()
    assert data["results"][0]["rules"][0]["turns"] == {"1": ["redundant"]}
    assert not schema_errors(openapi, CHECKS, data)
    wrong = {**data["results"][0], "rules": [{"turns": {"1": 3}}]}
    assert schema_errors(openapi, CHECKS, {**data, "results": [wrong]})
