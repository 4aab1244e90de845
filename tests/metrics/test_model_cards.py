"""A model card puts a trained model beside every untrained baseline on every human-judgment set (shared files
and benchmark studies), with paired-bootstrap intervals; the page, the API and the scoring form warn where the
model is below a baseline."""
import io
from pathlib import Path

import numpy as np
import pytest
from django.urls import reverse
from scipy import stats

from metrics.benchmarking.model_cards import model_card_build, shared_sets, study_sets
from metrics.models import MetricModel, ScoringRun
from metrics.scoring.services import metric_register
from studies.analysis.correlation import correlation_difference
from studies.corpora import services as corpora_services
from tests.ml.toy import toy_ddpp, toy_grade

pytestmark = pytest.mark.django_db


@pytest.fixture
def deployment(settings, tmp_path):
    (tmp_path / "grade").mkdir()
    toy_grade(tmp_path / "grade" / "dailydialog_EVAL.json", 40, seed=4)
    (tmp_path / "dailydialog_pp").mkdir()
    toy_ddpp(tmp_path / "dailydialog_pp" / "test.json", 160, seed=2)  # 10 contexts after the 150 that validate
    toy_ddpp(tmp_path / "dailydialog_pp" / "dev.json", 5, seed=1)  # training data: not on the card
    settings.SHARED_DATA_DIR = tmp_path
    grade = (tmp_path / "grade" / "dailydialog_EVAL.json").read_bytes()
    corpora_services.dialogues_import(stream=io.BytesIO(grade), source_name="grade.json", corpus_slug="grade-db")
    # a "model": the coherence heuristic registered as a model of its own, so the card has something to compare
    return MetricModel.objects.create(name="heuristic-model", metric=metric_register(key="coherence"), config={})


def test_the_card_compares_the_model_with_each_baseline_on_every_set(deployment):
    names = [s.name for s in shared_sets()] + [s.name for s in study_sets()]
    assert names[:2] == ["dailydialog_pp/test.json (contexts 150–)", "grade/dailydialog_EVAL.json"]
    assert any(n.startswith("study grade-db") for n in names)
    lines = []
    card = model_card_build(model=deployment, resamples=200, log=lines.append).card
    assert card["status"] == "done"
    # every scoring pass reports its progress (at least its end), the model's and each baseline's
    assert "  grade/dailydialog_EVAL.json: the model 40/40 items scored" in lines
    assert "  grade/dailydialog_EVAL.json: cosine_last 40/40 items scored" in lines
    grade = next(r for r in card["rows"] if r["set"] == "grade/dailydialog_EVAL.json")
    assert grade["quality"] == "human:coherence" and set(grade["baselines"]) == {
        "coherence_turns", "cosine_context", "cosine_last", "cosine_turns"}
    from django.conf import settings

    from metrics import registry
    from metrics.benchmarking.judgments import read_set

    items = read_set(Path(settings.SHARED_DATA_DIR) / "grade" / "dailydialog_EVAL.json").items
    human = np.array([i.human["human:coherence"] for i in items])
    from metrics.implementations.base import ScoringInput

    inputs = [ScoringInput(i.turns, i.response) for i in items]
    model = np.array(registry.implementation("coherence").score(inputs))
    base = np.array(registry.implementation("cosine_last").score(inputs))
    assert grade["model"] == pytest.approx(stats.spearmanr(model, human).statistic, abs=1e-9)
    assert grade["baselines"]["cosine_last"] == pytest.approx(stats.spearmanr(base, human).statistic, abs=1e-9)
    comparison = next(c for c in grade["comparisons"] if c["baseline"] == "cosine_last")
    delta, low, high = correlation_difference(model, base, human, resamples=200)
    assert (comparison["delta"], comparison["low"], comparison["high"]) == pytest.approx((delta, low, high))
    assert comparison["below"] == (delta < 0)
    ranking = next(r for r in card["rows"] if r["quality"] == "ranking accuracy")
    assert ranking["items"] == 10 * 15 and 0 <= ranking["model"] <= 1
    study_rows = [r for r in card["rows"] if r["set"].startswith("study ")]
    assert study_rows and study_rows[0]["quality"] == "human:coherence"


def test_page_api_and_scoring_form_warn_where_the_model_is_below_a_baseline(client, deployment, make_study, user):
    deployment.card = {"status": "done", "built_at": "2026-11-25T00:00", "seconds": 1, "resamples": 200,
                       "rows": [{"set": "grade/x.json", "kind": "grade", "level": "turn", "items": 30,
                                 "quality": "human:coherence", "model": 0.1, "baselines": {"cosine_last": 0.2},
                                 "comparisons": [{"baseline": "cosine_last", "delta": -0.1, "low": -0.2, "high": -0.01,
                                                  "below": True, "clearly_below": True}]}],
                       "below": [{"set": "grade/x.json", "quality": "human:coherence", "baseline": "cosine_last",
                                  "delta": -0.1, "low": -0.2, "high": -0.01, "below": True, "clearly_below": True}]}
    deployment.save()
    client.force_login(user)
    page = client.get(reverse("metrics:model_detail", args=[deployment.name]))
    assert page.status_code == 200 and b"clearly below cosine_last on grade/x.json" in page.content
    api = client.get(f"/api/metrics/models/{deployment.name}/").json()
    assert api["card"]["below"][0]["baseline"] == "cosine_last" and api["card_warnings"]
    study = make_study("likert")
    refused = client.post(reverse("metrics:run_start"), {"study": study.slug, "metric_model": deployment.name})
    assert refused.status_code == 302 and not ScoringRun.objects.exists()  # warned, nothing queued
    client.post(reverse("metrics:run_start"), {"study": study.slug, "metric_model": deployment.name,
                                               "card_acknowledged": "on"})
    assert ScoringRun.objects.count() == 1


def test_card_progress_is_throttled_to_one_line_every_ten_seconds():
    from metrics.benchmarking.model_cards import _every

    now, lines = [0.0], []
    report = _every(lines.append, "set: the model", 1000, clock=lambda: now[0])
    for done, at in ((256, 1.0), (512, 11.0), (768, 12.0), (1000, 13.0)):
        now[0] = at
        report(done)
    assert lines == ["set: the model 512/1000 items scored", "set: the model 1000/1000 items scored"]
