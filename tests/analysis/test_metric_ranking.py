"""studies.analysis.metric_ranking: the paired bootstrap of correlation gaps against scipy.stats.bootstrap
called directly (1e-12), and on synthetic metrics of known quality the best is found, a clearly worse one
is told apart and an equally good one is not."""
import numpy as np
import pytest
from scipy import stats

from studies.analysis.metric_ranking import rank_metrics, ranking_sentence


def _synthetic(seed=0, n=400):
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=n)
    human = np.rint(np.clip(3 + truth + 0.5 * rng.normal(size=n), 1, 5))
    return human, {"good": truth + 0.6 * rng.normal(size=n), "twin": truth + 0.6 * rng.normal(size=n),
                   "weak": truth + 3.0 * rng.normal(size=n)}


def test_metric_ranking_gap_interval_equals_scipy_bootstrap():
    human, metrics = _synthetic()
    got = rank_metrics(human, metrics, resamples=500, seed=3)
    best = got["best"]
    weak = next(row for row in got["rows"] if row["metric"] == "weak")
    direct = stats.bootstrap((human, metrics[best], metrics["weak"]),
                             lambda h, b, m: stats.spearmanr(h, b).statistic - stats.spearmanr(h, m).statistic,
                             paired=True, vectorized=False, n_resamples=500, method="percentile",
                             random_state=np.random.default_rng(3))
    assert (weak["delta_low"], weak["delta_high"]) == pytest.approx(
        (direct.confidence_interval.low, direct.confidence_interval.high), abs=1e-12)
    assert weak["r"] == pytest.approx(stats.spearmanr(human, metrics["weak"]).statistic, abs=1e-12)


def test_metric_ranking_finds_the_best_and_what_cannot_be_told_apart():
    human, metrics = _synthetic(seed=1)
    got = rank_metrics(human, metrics, resamples=1000)
    assert got["best"] in {"good", "twin"} and got["n"] == 400
    assert [row["metric"] for row in got["rows"]][-1] == "weak"
    assert got["tied"] == [{"good", "twin"}.difference({got["best"]}).pop()]  # the twin is level with the best
    weak = next(row for row in got["rows"] if row["metric"] == "weak")
    assert weak["delta_low"] > 0 and not weak["tied_with_best"]
    assert "cannot be told apart" in ranking_sentence(got)


def test_metric_ranking_on_common_items_only_and_problems():
    human, metrics = _synthetic(seed=2, n=50)
    metrics["good"] = [None if i % 5 == 0 else v for i, v in enumerate(metrics["good"])]  # missing judge answers
    got = rank_metrics(list(human), metrics, method="pearson", resamples=200)
    assert got["n"] == 40
    assert rank_metrics([1, 2, 3], {"a": [1, 2, 3]})["problem"].startswith("3 items")
    flat = rank_metrics([1, 2, 3, 4, 5, 6], {"a": [1, 2, 3, 4, 5, 6], "b": [2] * 6})
    assert flat["best"] == "a" and flat["rows"][-1]["note"] == "constant on these items"
    with pytest.raises(ValueError, match="method"):
        rank_metrics(list(human), metrics, method="cosine")
