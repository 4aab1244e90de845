"""A model card warned only about the sets on the card (shared files, benchmark studies). The
human-vs-metric page and its API now also warn where the model is below an untrained baseline on the
experiment's own ratings, scored on the same targets (and show the card's warnings once everything is
scored, not only beside "Score first")."""
import numpy as np
import pytest
from scipy import stats

from metrics.models import MetricModel, MetricScore
from metrics.scoring import selectors, services
from metrics.scoring.services import metric_register
from studies.authoring.demo import demo_load
from studies.reports.selectors import ratings_frame

pytestmark = pytest.mark.django_db


def human_means(studies) -> dict[int, float]:
    """Each rated response's mean normalised rating; 0 for a shown response nobody rated (every target scored)."""
    from metrics.models import ScoringRun

    shown = {pk: 0.0 for study in studies for pk in selectors.run_responses(ScoringRun(study=study))
             .values_list("pk", flat=True)}
    return {**shown, **ratings_frame(studies).groupby("unit")["score"].mean().to_dict()}


def score(model, values: dict[int, float]) -> None:
    MetricScore.objects.bulk_create([MetricScore(metric_model=model, response_id=unit, value=value)
                                     for unit, value in values.items()])


@pytest.fixture
def rated(user):
    experiment = demo_load()
    experiment.collaborators.add(user)
    study = experiment.studies.filter(design="likert").first()
    means = human_means(experiment.studies.all())
    rng = np.random.default_rng(3)
    baseline = services.metric_model_default(key="cosine_last")
    score(baseline, {unit: mean + rng.normal(0, 0.3) for unit, mean in means.items()})  # follows the humans
    return experiment, study, means, baseline


def test_a_model_below_a_baseline_on_the_studys_own_ratings_is_warned_about(client, user, rated):
    experiment, study, means, baseline = rated
    bad = MetricModel.objects.create(name="bad-model", metric=metric_register(key="readability"), config={})
    score(bad, {unit: -mean for unit, mean in means.items()})  # the humans' order reversed
    below = [b for b in selectors.baseline_shortfalls(experiment.studies.all(), bad) if b["set"] == f"study {study.slug}"]
    assert below and {b["baseline"] for b in below} == {"cosine_last"} and all(b["clearly_below"] for b in below)
    frame = ratings_frame(experiment.studies.filter(pk=study.pk))
    base = dict(MetricScore.objects.filter(metric_model=baseline).values_list("response_id", "value"))
    for entry in below:  # Δ = ρ(model, human) − ρ(baseline, human) on the criterion's human means
        own = frame[frame["criterion"] == entry["quality"]].groupby("unit")["score"].mean()
        expected = (stats.spearmanr([-means[u] for u in own.index], own).statistic
                    - stats.spearmanr([base[u] for u in own.index], own).statistic)
        assert entry["delta"] == pytest.approx(expected) and entry["high"] < 0
    assert bad.card in (None, {})  # no card at all: the study alone warns
    client.force_login(user)
    page = client.get(f"/experiments/{experiment.slug}/metrics/{bad.name}/").content.decode()
    assert 'id="baseline-warnings"' in page and f"clearly below cosine_last on study {study.slug}" in page
    api = client.get(f"/api/experiments/{experiment.slug}/metrics/{bad.name}/").json()
    assert any(line.startswith(f"clearly below cosine_last on study {study.slug}") for line in api["warnings"])
    assert api["below_baselines"][0]["baseline"] == "cosine_last"
    page = client.get(f"/metrics/models/{bad.name}/").content.decode()  # the model's page, for this researcher
    assert 'id="study-warning"' in page and f"clearly below cosine_last on study {study.slug}" in page


def test_another_researcher_sees_no_warning_from_studies_they_cannot_see(client, other_user, rated):
    experiment, study, means, _ = rated
    bad = MetricModel.objects.create(name="bad-model", metric=metric_register(key="readability"), config={})
    score(bad, {unit: -mean for unit, mean in means.items()})
    client.force_login(other_user)
    page = client.get(f"/metrics/models/{bad.name}/").content.decode()
    assert 'id="study-warning"' not in page and study.slug not in page
    assert client.get(f"/experiments/{experiment.slug}/metrics/{bad.name}/").status_code == 404


def test_a_model_above_the_baselines_gets_no_warning_and_the_card_still_warns_once_scored(client, user, rated):
    experiment, study, means, _ = rated
    good = MetricModel.objects.create(name="good-model", metric=metric_register(key="readability"), config={})
    score(good, means)
    assert not [b for b in selectors.baseline_shortfalls(experiment.studies.all(), good)
                if b["set"] == f"study {study.slug}"]
    client.force_login(user)
    page = client.get(f"/experiments/{experiment.slug}/metrics/{good.name}/").content.decode()
    assert "Score first" not in page and f"on study {study.slug}" not in page  # every target scored
    good.card = {"status": "done", "below": [{"set": "grade/x.json", "quality": "human:overall", "baseline": "cosine_last",
                                              "delta": -0.1, "low": -0.2, "high": -0.01, "clearly_below": True}]}
    good.save(update_fields=["card"])
    page = client.get(f"/experiments/{experiment.slug}/metrics/{good.name}/").content.decode()
    assert 'id="baseline-warnings"' in page and "clearly below cosine_last on grade/x.json" in page
