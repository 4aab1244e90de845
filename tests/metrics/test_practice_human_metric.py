"""Practice answers (studies.onboarding) never reach the human-vs-metric page: its correlations are the
same after the practice answers are deleted, and no practice response is among its points."""
import pytest

from metrics.scoring import selectors, services
from studies.models import PracticeAnswer, PracticeItem, Response, Study
from tests.studies.test_onboarding_exclusion import PRACTICE_TEXTS, rated_study  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db


def test_practice_answers_reach_no_human_vs_metric_report(rated_study, client, user):  # noqa: F811
    model = services.metric_model_default(key="readability")
    services.scoring_run_execute(run=services.scoring_run_create(metric_model=model, study=rated_study, enqueue=False))
    studies = Study.objects.filter(pk=rated_study.pk)
    before = selectors.compute_human_metric_report(studies, model, bootstrap=0)
    practice_responses = set(Response.objects.filter(text__in=PRACTICE_TEXTS).values_list("pk", flat=True))
    assert len(practice_responses) == 2 * PracticeItem.objects.count()
    points = [p for cell in before["cells"] for p in cell.get("points", [])]
    assert points and all(p["unit"] not in practice_responses for p in points)  # the unit: a response id
    assert sum(cell["n_responses"] for cell in before["cells"]) == len(points)
    client.force_login(user)
    page = client.get(f"/experiments/{rated_study.experiment.slug}/metrics/{model.name}/")
    assert page.status_code == 200 and "PRACTICE-ONLY" not in page.content.decode()
    PracticeAnswer.objects.all().delete()
    after = selectors.compute_human_metric_report(studies, model, bootstrap=0)
    assert after == before
