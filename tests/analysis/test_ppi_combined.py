"""Several metrics combined with cross-fitted weights (studies.analysis.ppi_combined): coverage in seeded,
vectorised simulations, the verdict when the combination is not worth it, and the folds never using a
labelled unit's own label for its correction."""
import numpy as np
import pytest

from studies.analysis import ppi
from studies.analysis.ppi_combined import combined_metrics_estimate, crossfit_core


def _world(seed, draws, n, big_n, k=5):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(2, draws, n + big_n))
    y = 3 + a + b + 0.8 * rng.normal(size=a.shape)
    columns = [a + 0.5 * rng.normal(size=a.shape), 0.2 * b + 0.1 * rng.normal(size=a.shape),
               a + b + 2 * rng.normal(size=a.shape), rng.normal(size=a.shape), a + rng.normal(size=a.shape)]
    metrics = np.stack(columns[:k], -1)
    return y[..., :n], metrics[..., :n, :], metrics[..., n:, :]


@pytest.mark.parametrize(("n", "big_n", "k"), [(12, 138, 5), (50, 550, 2), (50, 550, 5)])
def test_ppi_crossfit_combination_coverage(n, big_n, k):
    y, f, fu = _world(20261201 + n + k, 1000, n, big_n, k)
    core = crossfit_core(y, f, fu)
    assert np.mean((core["low"] <= 3.0) & (core["high"] >= 3.0)) >= 0.93


def test_ppi_crossfit_combination_narrower_than_either_metric_with_enough_labels():
    y, f, fu = _world(5, 300, 60, 600, 2)
    core = crossfit_core(y, f, fu)
    singles = [np.mean([ppi.mean_estimate(y[d], f[d, :, j], fu[d, :, j]).se for d in range(300)]) for j in range(2)]
    assert np.mean(core["se"]) < min(singles) - 0.01


def test_ppi_crossfit_correction_never_uses_its_own_label():
    y, f, fu = _world(8, 1, 20, 100, 2)
    y, f, fu = y[0], f[0], fu[0]
    base = crossfit_core(y, f, fu, seed=1)
    changed = y.copy()
    changed[0] += 10.0
    moved = crossfit_core(changed, f, fu, seed=1)
    predicted_before, predicted_after = y - base["rectifier"], changed - moved["rectifier"]
    fold = np.random.default_rng(1).permutation(20) % 5
    same_fold = fold == fold[0]
    # the units of unit 0's fold are predicted by weights fitted without it: unchanged
    assert predicted_after[same_fold] == pytest.approx(predicted_before[same_fold], abs=1e-12)
    # every other unit's weights were fitted with it: they move
    assert not np.allclose(predicted_after[~same_fold], predicted_before[~same_fold])
    assert moved["df"] == 19


def test_ppi_combination_says_when_not_worth_it():
    rng = np.random.default_rng(2)
    n, big_n = 12, 138
    truth = rng.normal(size=n + big_n)
    y = 3 + truth + 0.5 * rng.normal(size=n + big_n)
    good = truth + 0.3 * rng.normal(size=n + big_n)
    noise = rng.normal(size=(n + big_n, 4))  # four metrics that say nothing
    metrics = np.column_stack([good, noise])
    got = combined_metrics_estimate(y[:n], metrics[:n], metrics[n:], names=["good", "n1", "n2", "n3", "n4"])
    assert got["best_single"] == "good" and not got["worth_it"]
    assert got["verdict"].startswith("not worth it") and "use good alone" in got["verdict"]
    assert got["n"] == 12 and got["ci_low"] < got["estimate"] < got["ci_high"] and set(got["weights"]) == {
        "good", "n1", "n2", "n3", "n4"}
    y2, f2, fu2 = _world(4, 1, 80, 600, 2)
    worth = combined_metrics_estimate(y2[0], f2[0], fu2[0], names=["a", "b"])
    assert worth["worth_it"] and worth["verdict"].startswith("worth it")
    assert combined_metrics_estimate(y[:3], metrics[:3], metrics[n:], names=list("abcde")) is None
