"""The best-judge ranking through the API, as on the human-vs-metric page (``metrics.scoring.selectors.judges_ranking``):
every metric scored on the experiment ranked per condition and criterion with the paired gap to the best;
``models`` chooses them, names refused when unscored, one model refused; another researcher's experiment a 404."""
import pytest

from metrics.scoring import selectors, services
from studies.authoring.demo import demo_load
from tests.api.test_convention import client_of
from tests.problems import problem_fields

pytestmark = pytest.mark.django_db


@pytest.fixture
def scored(user):
    experiment = demo_load()
    experiment.collaborators.add(user)
    models = [services.metric_model_default(key=k) for k in ("readability", "cosine_last")]
    study = experiment.studies.order_by("pk").first()
    for model in models:
        services.scoring_run_execute(run=services.scoring_run_create(metric_model=model, study=study, enqueue=False))
    return experiment, study, models


def test_judge_ranking_api_equals_the_pages_selector(api, scored):
    experiment, study, models = scored
    response = api.get(f"/api/experiments/{experiment.slug}/judges/ranking/", {"study": study.slug})
    assert response.status_code == 200, response.content[:500]
    body = response.json()
    expected = selectors.judges_ranking(experiment.studies.filter(pk=study.pk), models)
    assert set(body["models"]) == {"readability", "cosine_last"} and len(body["rankings"]) == len(expected) > 0
    for got, want in zip(body["rankings"], expected, strict=True):
        assert (got["condition"], got["criterion"], got["best"], got["n"]) == \
               (want["condition"], want["criterion"], want["best"], want["n"])
        assert [r["metric"] for r in got["rows"]] == [r["metric"] for r in want["rows"]]
        assert got["rows"][0]["r"] == pytest.approx(want["rows"][0]["r"], abs=1e-12)
        assert got["rows"][1]["delta_low"] == pytest.approx(want["rows"][1]["delta_low"], abs=1e-12)


def test_judge_ranking_api_refuses_unscored_or_single_models_by_name(api, scored):
    experiment, study, _ = scored
    url = f"/api/experiments/{experiment.slug}/judges/ranking/"
    for params in ({"models": "readability,nosuchmodel"}, {"models": "readability"}):
        response = api.get(url, {"study": study.slug, **params})
        assert response.status_code == 400 and "models" in problem_fields(response), params
    unknown = api.get(url, {"colour": "red"})
    assert unknown.status_code == 400 and "colour" in problem_fields(unknown)


def test_judge_ranking_api_of_another_researchers_experiment_is_404(scored, other_user):
    experiment, _, _ = scored
    assert client_of(other_user).get(f"/api/experiments/{experiment.slug}/judges/ranking/").status_code == 404
