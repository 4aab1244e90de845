"""Practice over the researcher API (studies.api.practice_views): the study's practice items with their
expected answers (responses numbered from 1) and explanations, the pass mark, and the practice results
(pass rate, items most often failed) equal to the stored attempts; read-only; another researcher's study
(or an unknown one) is a 404; the schema stays valid and documents both operations."""
import pytest
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.validation import validate_schema
from rest_framework.test import APIClient

from studies.models import PracticeAnswer, PracticeAttempt
from tests.factories import token_for
from tests.studies.test_onboarding import answer_all, begin, practice_study  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db


def test_practice_items_and_pass_mark_through_the_api(api, practice_study):  # noqa: F811
    response = api.get(f"/api/studies/{practice_study.slug}/practice/")
    assert response.status_code == 200
    body = response.json()
    assert body["pass_mark"] == 2 and body["owner_wide"] is False
    assert [i["number"] for i in body["items"]] == [1, 2, 3]
    assert [i["rules"] for i in body["items"]] == [[{"response": 1, "value": 5}], [{"response": 2, "min": 1, "max": 2}],
                                                    [{"greater": 1, "than": 2}]]  # as the researcher wrote them
    first = body["items"][0]
    assert first["responses"] == ["I live in a small town too, near the sea.", "Potato keyboard seven."]
    assert first["turns"][-1]["text"] == "In a small town." and first["reference"] is None
    assert first["explanation"] == "Response A answers; B is nonsense."


def test_practice_results_through_the_api_count_the_attempts(api, practice_study):  # noqa: F811
    empty = api.get(f"/api/studies/{practice_study.slug}/practice/results/").json()
    assert (empty["finished"], empty["pass_rate"]) == (0, None)
    answer_all(begin(practice_study, "W1", "A1"), practice_study, [(5, 1), (5, 1), (5, 1)])  # all agree: passed
    answer_all(begin(practice_study, "W2", "A2"), practice_study, [(5, 1), (1, 5), (1, 5)])  # 1 of 3: failed
    answer_all(begin(practice_study, "W3", "A3"), practice_study, [(1, 5), (5, 1), (1, 5)])  # 1 of 3: failed
    begin(practice_study, "W4", "A4")  # still practising
    body = api.get(f"/api/studies/{practice_study.slug}/practice/results/").json()
    assert (body["finished"], body["passed"], body["failed"], body["in_practice"]) == (3, 1, 2, 1)
    assert body["pass_rate"] == pytest.approx(1 / 3) and body["pass_mark"] == 2
    assert PracticeAttempt.objects.filter(status="failed").count() == 2
    # item 3 (ordering) was failed twice, items 1 and 2 once each: most often failed first
    assert [(i["number"], i["answered"], i["failed"]) for i in body["items"]] == [(3, 3, 2), (1, 3, 1), (2, 3, 1)]
    assert body["items"][0]["fail_rate"] == pytest.approx(2 / 3)
    assert sum(i["failed"] for i in body["items"]) == PracticeAnswer.objects.filter(agreed=False).count()


def test_practice_api_is_read_only_and_another_researchers_study_is_a_404(api, practice_study, other_user):  # noqa: F811
    assert api.post(f"/api/studies/{practice_study.slug}/practice/", {}).status_code == 405
    theirs = APIClient()
    theirs.credentials(HTTP_AUTHORIZATION=f"Token {token_for(other_user)}")
    for path in ("practice/", "practice/results/"):
        assert theirs.get(f"/api/studies/{practice_study.slug}/{path}").status_code == 404
        assert api.get(f"/api/studies/no-such-study/{path}").status_code == 404
        assert APIClient().get(f"/api/studies/{practice_study.slug}/{path}").status_code == 401


def test_practice_api_operations_in_a_valid_schema():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    validate_schema(schema)
    operations = {op["operationId"] for path in schema["paths"].values() for op in path.values()
                  if isinstance(op, dict) and "operationId" in op}
    assert {"study_practice_list", "study_practice_results"} <= operations
    assert "/api/studies/{slug}/practice/results/" in schema["paths"]
