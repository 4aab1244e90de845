"""The report API's ``system_scores`` (which system is better) is a typed component, and live answers of a
Likert, a pairwise and an ACUTE-Eval study conform to it; a wrongly typed block is caught, so the check can
fail; another researcher's study is not found."""
import pytest

from tests.api.test_report_schemas import STUDY_REPORT, assert_conforms, openapi, schema_errors  # noqa: F401
from tests.studies import test_pairwise
from tests.studies.acute_helpers import acute_study, rate_all
from tests.studies.test_system_scores_report import QUALITY, rated_likert

pytestmark = pytest.mark.django_db


def test_system_scores_are_a_typed_component_of_the_report(openapi):  # noqa: F811
    schemas = openapi["components"]["schemas"]
    prop = schemas["ReliabilityReport"]["properties"]["system_scores"]
    assert prop["items"]["$ref"].endswith("/SystemScoresBlock")
    block = schemas["SystemScoresBlock"]
    assert {"systems", "pairs", "n_raters", "n_items", "method"} <= set(block["required"])
    assert schemas["SystemScore"]["properties"]["ci_low"]["nullable"] is True
    assert schemas["SystemDifference"]["properties"]["p_holm"]["nullable"] is True


def test_system_scores_of_a_likert_study_conform_and_a_broken_block_is_caught(api, openapi, make_study):  # noqa: F811
    study = rated_likert(make_study)
    response = api.get(f"/api/studies/{study.slug}/report/")
    assert_conforms(openapi, STUDY_REPORT, response)
    data = response.json()
    block = data["system_scores"][0]
    assert {s["system"] for s in block["systems"]} == set(QUALITY) and block["pairs"][0]["test"]
    broken = {**data, "system_scores": [{**block, "systems": [{**block["systems"][0], "n": "twelve"}]}]}
    assert schema_errors(openapi, STUDY_REPORT, broken)


def test_system_scores_of_pairwise_and_acute_studies_conform(api, openapi, user, make_study):  # noqa: F811
    pairwise = test_pairwise.finished_study(make_study, contrarian=True)
    response = api.get(f"/api/studies/{pairwise.slug}/report/")
    assert_conforms(openapi, STUDY_REPORT, response)
    assert response.json()["system_scores"][0]["measure"] == "share of decisive judgments won"
    acute = acute_study(user, items_per_assignment=6)
    for number in range(3):
        rate_all(acute, f"judge-{number}", lambda slot, criterion, n=number: ("left", "right")[(slot.position + n) % 2],
                 seed=number)
    response = api.get(f"/api/studies/{acute.slug}/report/")
    assert_conforms(openapi, STUDY_REPORT, response)
    (block, *_) = response.json()["system_scores"]
    assert block["design"] == "acute" and block["n_raters"] == 3 and block["systems"]
    assert all(s["n"] > 0 and s["ci_low"] <= s["score"] <= s["ci_high"] for s in block["systems"])


def test_system_scores_of_another_researchers_study_are_not_in_the_api(make_study, other_user):
    from tests.api.test_convention import client_of

    study = rated_likert(make_study, raters=2)
    assert client_of(other_user).get(f"/api/studies/{study.slug}/report/").status_code == 404
