"""A nested object that may be null validates as null (OpenAPI 3.0.3): ``nullable`` acts only beside ``type``
in the same schema object, so drf-spectacular's ``allOf: [$ref]`` with ``nullable`` beside it refuses null
(tfranzel/drf-spectacular#925). ``config.schema`` writes such a field inline, with ``nullable`` beside its
``type``; these tests validate live answers that carry null there against the generated schema."""
import pytest

from tests.api.rater_helpers import base, enter, rater_client
from tests.api.test_report_schemas import HUMAN_METRIC, PPI, openapi, schema_errors, two_conditions  # noqa: F401 - the fixtures

pytestmark = pytest.mark.django_db


def no_op_nullables(node, path="#") -> list[str]:
    """Where ``nullable`` stands beside a composition (allOf/oneOf/anyOf) with no ``type``: a no-op in 3.0.3."""
    found = []
    if isinstance(node, dict):
        if node.get("nullable") and "type" not in node and {"allOf", "oneOf", "anyOf", "$ref"} & set(node):
            found.append(path)
        for key, value in node.items():
            found += no_op_nullables(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += no_op_nullables(value, f"{path}/{index}")
    return found


def test_no_nullable_is_a_no_op_in_the_schema(openapi):  # noqa: F811
    assert no_op_nullables(openapi) == []
    schemas = openapi["components"]["schemas"]
    for component, key in (("RaterItem", "reference"), ("HumanMetricCell", "response_level"),
                           ("HumanMetricCell", "system_level"), ("PpiSystem", "rater_noise")):
        field = schemas[component]["properties"][key]
        assert field["type"] == "object" and field["nullable"] is True and field["properties"], (component, key)


def test_a_rater_item_without_a_reference_validates(openapi, make_study):  # noqa: F811
    """A Likert item shows no reference: ``reference`` is null in the rater API's item."""
    study = make_study("likert")
    session = enter(study).json()
    client = rater_client(session)
    item = client.get(base(session) + "items/?limit=1").json()["results"][0]
    assert item["reference"] is None
    path = "/api/rate/assignments/{token}/items/{position}/"
    answer = client.get(base(session) + f"items/{item['position']}/")
    assert answer.status_code == 200 and answer.json()["reference"] is None
    assert schema_errors(openapi, path, answer.json()) == []
    assert schema_errors(openapi, path, {**answer.json(), "reference": {"text": 3}})  # still checked when present


def test_null_correlations_and_rater_noise_in_live_metric_answers_validate(api, openapi, two_conditions):  # noqa: F811
    """The answers' nested objects that may be null (too few points; the noise not told): a live answer with
    them null validates, and a wrongly typed one is still caught."""
    study, model = two_conditions
    experiment = study.experiment.slug
    cells = api.get(f"/api/experiments/{experiment}/metrics/{model.name}/").json()
    assert cells["cells"] and cells["cells"][0]["response_level"]
    nulls = {**cells, "cells": [{**cells["cells"][0], "response_level": None, "system_level": None}]}
    assert schema_errors(openapi, HUMAN_METRIC, nulls) == []
    wrong = {**cells, "cells": [{**cells["cells"][0], "response_level": {"pearson": "high"}}]}
    assert schema_errors(openapi, HUMAN_METRIC, wrong)

    ppi = api.get(f"/api/experiments/{experiment}/metrics/{model.name}/prediction-powered/?width=0.8").json()
    entry = ppi["studies"][0]
    criterion = entry["criteria"][0]
    assert criterion["systems"][0]["rater_noise"]
    quiet = {**criterion, "systems": [{**criterion["systems"][0], "rater_noise": None}]}
    assert schema_errors(openapi, PPI, {**ppi, "studies": [{**entry, "criteria": [quiet]}]}) == []

