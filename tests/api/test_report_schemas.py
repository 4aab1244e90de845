"""Typed report responses: the reliability report (study and experiment), human vs metric and
the prediction-powered estimates declare real component schemas, and live answers validate against what
the schema declares (OpenAPI 3.0 semantics: ``nullable``), for rated studies of several designs, a
labels-only study and a study nobody has rated, and the design sections (pairwise, ACUTE-Eval, best-worst
tuples) and the human-vs-metric label cells as typed rows. A mutated answer fails, so the check can fail."""
import json

import numpy as np
import pytest
from drf_spectacular.generators import SchemaGenerator
from openapi_schema_validator import OAS30Validator

from metrics.api import report_schemas as metric_schemas
from metrics.models import MetricScore
from metrics.scoring import services
from studies.api import design_report_schemas, report_schemas, schema_fields
from studies.models import Response
from studies.rating import answers as answering
from tests.api.rater_helpers import answer_every_item, base, enter, questionnaire_answers, rater_client
from tests.api.test_blockers import labels_only  # noqa: F401 - the labels-only fixture
from tests.api.test_convention import client_of
from tests.metrics.test_ppi_estimates import rated_study, score
from tests.studies import test_pairwise
from tests.studies.acute_helpers import acute_study, rate_all
from tests.studies.test_services import answer_all

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def openapi():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(json.dumps(schema, default=str))


def component(openapi, path: str) -> str:
    ref = openapi["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    return ref.rpartition("/")[2]


def schema_errors(openapi, path: str, data) -> list[str]:
    schema = openapi["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    validator = OAS30Validator({**schema, "components": openapi["components"]})
    return [f"{'/'.join(map(str, error.absolute_path))}: {error.message}" for error in validator.iter_errors(data)]


def assert_conforms(openapi, path: str, response):
    assert response.status_code == 200, response.content[:500]
    errors = schema_errors(openapi, path, response.json())
    assert not errors, errors[:10]


STUDY_REPORT = "/api/studies/{slug}/report/"
EXPERIMENT_REPORT = "/api/experiments/{slug}/report/"
HUMAN_METRIC = "/api/experiments/{slug}/metrics/{model}/"
PPI = "/api/experiments/{slug}/metrics/{model}/prediction-powered/"


def test_the_reports_are_declared_as_components_not_untyped_objects(openapi):
    names = {path: component(openapi, path) for path in (STUDY_REPORT, EXPERIMENT_REPORT, HUMAN_METRIC, PPI)}
    assert names == {STUDY_REPORT: "ReliabilityReport", EXPERIMENT_REPORT: "ReliabilityReport",
                     HUMAN_METRIC: "HumanMetricReport", PPI: "PredictionPoweredReport"}
    schemas = openapi["components"]["schemas"]
    report = schemas["ReliabilityReport"]
    assert {"tables", "alpha", "raters", "positions", "labels", "notes"} <= set(report["required"])
    assert report["properties"]["tables"]["$ref"].endswith("/IccTables")
    assert schemas["PpiSystem"]["properties"]["estimate"]["nullable"] is True


@pytest.fixture
def two_conditions(user, corpus, make_study):
    """A rated Likert study (varied answers), its metric scores, and a second condition (RME) rated too,
    so the experiment report compares conditions (ANOVA, Tukey)."""
    import io

    from studies.corpora import services as corpus_imports
    from tests.metrics.test_ppi_estimates import varied_corpus_lines

    twelve = corpus_imports.dialogues_import(stream=io.BytesIO(varied_corpus_lines(12)), source_name="twelve.jsonl",
                                             corpus_slug="twelve", owner=user).corpus
    study = rated_study(user, twelve, reward="0.90")
    model = services.metric_model_default(key="readability")
    score(model, corpus=twelve)
    rme = make_study("rme", experiment=study.experiment, raters_per_item=2, items_per_assignment=6)
    for number in range(2):
        start = test_pairwise.start(rme, f"rme-{number}", seed=number)
        answer_all(start, value=50 + 20 * number)
        answering.assignment_submit(assignment=start, total_seconds=90.0 + number)
    return study, model


def test_live_reports_match_their_schemas(api, openapi, two_conditions):
    study, model = two_conditions
    experiment = study.experiment.slug
    assert_conforms(openapi, STUDY_REPORT, api.get(f"/api/studies/{study.slug}/report/"))
    experiment_report = api.get(f"/api/experiments/{experiment}/report/")
    assert_conforms(openapi, EXPERIMENT_REPORT, experiment_report)
    assert len(experiment_report.json()["conditions"]) == 2
    assert_conforms(openapi, EXPERIMENT_REPORT, api.get(f"/api/experiments/{experiment}/report/?exclude_flagged=1"))
    assert_conforms(openapi, HUMAN_METRIC, api.get(f"/api/experiments/{experiment}/metrics/{model.name}/"))
    ppi = api.get(f"/api/experiments/{experiment}/metrics/{model.name}/prediction-powered/?width=0.8")
    assert_conforms(openapi, PPI, ppi)
    assert ppi.json()["studies"] and ppi.json()["studies"][0]["criteria"]


def test_a_mismatching_answer_is_caught(api, openapi, make_study):
    study = make_study("likert")
    data = api.get(f"/api/studies/{study.slug}/report/").json()
    assert not schema_errors(openapi, STUDY_REPORT, data)  # nobody rated it: empty tables, a note
    assert schema_errors(openapi, STUDY_REPORT, {**data, "tables": "none"})
    assert schema_errors(openapi, STUDY_REPORT, {key: value for key, value in data.items() if key != "alpha"})
    broken = {**data, "conditions": [{**data["conditions"][0], "benchmark": "no"}]}
    assert schema_errors(openapi, STUDY_REPORT, broken)


def test_a_pairwise_study_and_a_labels_study_report_match_their_schemas(api, openapi, make_study, labels_only):  # noqa: F811
    pairwise = test_pairwise.finished_study(make_study)
    report = api.get(f"/api/studies/{pairwise.slug}/report/")
    assert_conforms(openapi, STUDY_REPORT, report)
    assert report.json()["pairwise"]
    owner, study = labels_only
    client = client_of(owner)
    labels = client.get(f"/api/studies/{study.slug}/report/")
    assert_conforms(openapi, STUDY_REPORT, labels)
    assert labels.json()["labels"]
    assert_conforms(openapi, HUMAN_METRIC, client.get(f"/api/experiments/{study.experiment.slug}/metrics/readability/"))
    assert_conforms(openapi, PPI, client.get(
        f"/api/experiments/{study.experiment.slug}/metrics/readability/prediction-powered/"))


def bot_rates(study, raters: int, *, label: int = 0) -> None:
    """``raters`` bots each take an invitation, answer every item through the rater API and submit."""
    for number in range(raters):
        session = enter(study, secret=f"a-bot-rater-secret-{number:04d}").json()
        client = rater_client(session)
        for item in answer_every_item(client, session, label=label + number):
            assert item["answered"]
        done = client.post(base(session) + "submit/", {"questionnaire": questionnaire_answers(session)}, format="json")
        assert done.status_code == 200, done.content[:500]


def section_component(openapi, key: str) -> str:
    return openapi["components"]["schemas"]["ReliabilityReport"]["properties"][key]["items"]["$ref"].rpartition("/")[2]


def test_the_design_sections_and_label_cells_are_typed_rows(openapi):
    assert {key: section_component(openapi, key) for key in ("pairwise", "bws_tuples", "acute")} == {
        "pairwise": "PairwiseStudy", "bws_tuples": "BwsTuplesEntry", "acute": "AcuteStudy"}
    schemas = openapi["components"]["schemas"]
    assert schemas["PairwiseWinRate"]["properties"]["win_rate_a"]["nullable"] is True
    assert schemas["SplitHalf"]["properties"]["spearman_mean"]["nullable"] is True
    assert schemas["HumanMetricReport"]["properties"]["label_cells"]["items"]["$ref"].endswith("/LabelMetricCell")
    assert schemas["LabelMetricCell"]["properties"]["auc"]["nullable"] is True
    pay = schemas["PpiStudy"]["properties"]["pay"]  # inline, so that null is admitted (OpenAPI 3.0.3)
    assert pay["nullable"] is True and pay["type"] == "object" and "cost_with_metric" in pay["properties"]


def test_acute_bws_tuples_and_labels_sections_match_their_schemas(api, openapi, user, make_study, labels_only):  # noqa: F811
    acute = acute_study(user, items_per_assignment=6)
    for number in range(3):
        rate_all(acute, f"judge-{number}", lambda slot, criterion, n=number: ("left", "right")[(slot.position + n) % 2],
                 seed=number)
    report = api.get(f"/api/studies/{acute.slug}/report/")
    assert_conforms(openapi, STUDY_REPORT, report)
    section = report.json()["acute"]
    assert section and section[0]["criteria"] and section[0]["criteria"][0]["win_rates"]
    assert "mark" in section[0]["criteria"][0]["win_rates"][0] and "pairs" in section[0]["checks"]

    tuples = make_study("bws_tuples", raters_per_item=2, items_per_assignment=6, tuple_size=3)
    bot_rates(tuples, 2)
    report = api.get(f"/api/studies/{tuples.slug}/report/")
    assert_conforms(openapi, STUDY_REPORT, report)
    entry = report.json()["bws_tuples"][0]
    assert entry["responses"] and entry["systems"] and entry["annotations"] > 0

    owner, study = labels_only
    cells = client_of(owner).get(f"/api/experiments/{study.experiment.slug}/metrics/readability/")
    assert_conforms(openapi, HUMAN_METRIC, cells)
    rows = cells.json()["label_cells"]
    assert rows and any(row["auc"] is None for row in rows)  # the label nobody picked: NaN written as null


def test_a_wrongly_typed_design_row_is_caught(api, openapi, make_study):
    pairwise = test_pairwise.finished_study(make_study)
    data = api.get(f"/api/studies/{pairwise.slug}/report/").json()
    assert not schema_errors(openapi, STUDY_REPORT, data)
    criterion = data["pairwise"][0]["criteria"][0]
    wrong_rate = {**criterion, "win_rates": [{**criterion["win_rates"][0], "wins_a": "three"}]}
    broken = {**data, "pairwise": [{**data["pairwise"][0], "criteria": [wrong_rate]}]}
    assert any("wins_a" in error for error in schema_errors(openapi, STUDY_REPORT, broken))
    no_strengths = {**criterion, "bt": {**(criterion["bt"] or {}), "strengths": "none"}}
    assert schema_errors(openapi, STUDY_REPORT, {**data, "pairwise": [{**data["pairwise"][0], "criteria": [no_strengths]}]})
    assert schema_errors(openapi, STUDY_REPORT, {**data, "bws_tuples": [{"condition": "x"}]})


def test_the_report_schemas_share_one_nullable_number():
    field = schema_fields.number(help_text="h")
    assert field.allow_null and field.run_validation(None) is None and field.run_validation("0.5") == 0.5
    assert report_schemas.number is design_report_schemas.number is schema_fields.number
    assert metric_schemas.number is schema_fields.number
    assert not any(hasattr(module, "_number") for module in (report_schemas, design_report_schemas, metric_schemas))


def test_a_pairwise_studys_prediction_powered_rows_are_typed(api, openapi, make_study):
    """A pairwise study's estimates (``metrics.ppi.estimates._pairwise``): per criterion the win rates (a over b, ties
    half) and the Bradley-Terry strengths, or null where no logistic fit exists; a live answer validates
    against the typed rows and a wrongly typed row is caught."""
    study = test_pairwise.finished_study(make_study, n_raters=3, contrarian=True)
    model = services.metric_model_default(key="readability")
    rng = np.random.default_rng(1)  # the small corpus's templated responses score alike: store varied scores
    MetricScore.objects.bulk_create([MetricScore(metric_model=model, response_id=pk, value=float(rng.normal()))
                                     for pk in Response.objects.values_list("pk", flat=True)])
    answer = api.get(f"/api/experiments/{study.experiment.slug}/metrics/{model.name}/prediction-powered/")
    assert_conforms(openapi, PPI, answer)
    data = answer.json()
    entry = data["studies"][0]
    criterion = entry["pairwise"][0]
    assert criterion["win_rates"] and criterion["bradley_terry"]["strengths"]
    schemas = openapi["components"]["schemas"]
    assert schemas["PpiStudy"]["properties"]["pairwise"]["items"]["$ref"].endswith("/PpiPairwiseCriterion")

    def with_criterion(changed):
        return {**data, "studies": [{**entry, "pairwise": [changed]}]}

    assert not schema_errors(openapi, PPI, with_criterion({**criterion, "bradley_terry": None}))
    wrong_rate = {**criterion, "win_rates": [{**criterion["win_rates"][0], "estimate": "high"}]}
    assert any("estimate" in error for error in schema_errors(openapi, PPI, with_criterion(wrong_rate)))
    strengths = criterion["bradley_terry"]["strengths"]
    wrong_strength = {**criterion, "bradley_terry": {**criterion["bradley_terry"],
                                                     "strengths": [{**strengths[0], "reference": "yes"}]}}
    assert any("reference" in error for error in schema_errors(openapi, PPI, with_criterion(wrong_strength)))
    assert schema_errors(openapi, PPI, with_criterion({**criterion, "win_rates": [{"a": "hred"}]}))
