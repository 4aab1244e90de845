"""The penalised Bradley–Terry fit (studies.analysis.bradley_terry) and a bootstrap that keeps every resample:
the posterior mode checked against SciPy's optimiser and, with a flat prior, statsmodels' logistic
regression; intervals that do not end at the estimate when a system wins nearly everything; coverage of a
known truth by seeded simulation."""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import optimize

from studies.analysis import bradley_terry as bt
from studies.analysis import pairwise as pw
from tests.analysis.test_pairwise import THETA, simulate


def counts(frame):
    data = pw.canonical(frame)
    systems = sorted(set(data["system_a"]) | set(data["system_b"]))
    wins, n = pw._counts(data, systems)
    return systems, wins, n


def log_posterior(theta, wins, n, sd):
    diff = theta[:, None] - theta[None, :]
    return float((wins * -np.logaddexp(0, -diff)).sum() - (theta ** 2).sum() / (2 * sd ** 2))


def test_bradley_terry_map_solves_its_posterior_equations_and_equals_scipys_optimiser():
    _, wins, n = counts(simulate(seed=3, raters=6, per_rater=10))
    theta = bt.map_fit(wins, n)
    assert np.abs(bt.map_gradient(wins, n, theta)).max() < 1e-9
    assert theta.sum() == pytest.approx(0, abs=1e-12)
    found = optimize.minimize(lambda t: -log_posterior(t, wins, n, bt.PRIOR_SD), np.zeros(len(theta)),
                              method="BFGS", options={"gtol": 1e-11})
    assert theta == pytest.approx(found.x - found.x.mean(), abs=1e-6)
    assert log_posterior(theta, wins, n, bt.PRIOR_SD) >= -found.fun - 1e-12


def test_bradley_terry_map_with_a_flat_prior_is_the_maximum_likelihood_fit_of_statsmodels():
    frame = simulate(seed=5)
    systems, wins, n = counts(frame)
    flat = bt.map_fit(wins, n, prior_sd=1e6)
    logit = pw.bradley_terry_logit(frame)
    assert flat == pytest.approx([logit[s] for s in systems], abs=1e-9)


def test_bradley_terry_map_is_finite_where_a_system_won_everything_and_ranks_it_first():
    frame = pd.DataFrame({"criterion": "c", "item": range(9), "rater": range(9),
                          "left_system": ["a", "a", "a", "b", "b", "b", "a", "b", "c"],
                          "right_system": ["b", "c", "b", "c", "c", "a", "c", "c", "a"],
                          "choice": ["left", "left", "left", "left", "right", "right", "left", "left", "right"]})
    with pytest.raises(pw.BTError):
        pw.bradley_terry_mm(frame)
    systems, wins, n = counts(frame)
    theta = dict(zip(systems, bt.map_fit(wins, n), strict=True))
    assert all(math.isfinite(v) for v in theta.values()) and theta["a"] > theta["b"] > theta["c"]
    assert np.abs(bt.map_gradient(wins, n, np.array([theta[s] for s in systems]))).max() < 1e-9


def test_bradley_terry_stacked_fits_equal_single_fits():
    rng = np.random.default_rng(2)
    stack = rng.integers(0, 6, size=(40, 4, 4)).astype(float) * (1 - np.eye(4))
    stack[3, 0, :] = 0  # a system that never won
    together = bt.map_fit(stack, stack + stack.transpose(0, 2, 1))
    for wins, fit in zip(stack, together, strict=True):
        assert fit == pytest.approx(bt.map_fit(wins, wins + wins.T), abs=1e-12)


def test_bradley_terry_interval_does_not_end_at_the_estimate_when_a_system_wins_nearly_everything():
    """The case the dropped resamples broke: a dominant system beaten once, by a single rater; resampling
    raters leaves that loss out in many resamples, where its MLE is infinite. Those are kept, so the
    upper bound lies beyond the estimate instead of on it."""
    rows = []
    for rater in range(8):
        for k, (left, right) in enumerate([("star", "b"), ("star", "c"), ("b", "c"), ("c", "star"), ("b", "star")]):
            choice = "left" if left == "star" else "right" if right == "star" else ["left", "right"][(rater + k) % 2]
            rows.append({"criterion": "c", "item": k, "rater": rater, "left_system": left, "right_system": right,
                         "choice": choice})
    rows[0]["choice"] = "right"  # rater 0 once prefers b to the star
    result = pw.bradley_terry_bootstrap(pd.DataFrame(rows), resamples=1000, seed=0)
    star = next(s for s in result["strengths"] if s["system"] == "star")
    assert result["degenerate"] > 200 and result["dropped"] == 0 and result["mle_exists"]
    assert star["ci_low"] < star["theta"] < star["ci_high"]
    assert star["ci_high"] - star["theta"] > 0.1
    assert "prior" in result["estimator"] and result["prior_sd"] == bt.PRIOR_SD


def test_bradley_terry_bootstrap_covers_a_known_truth_in_seeded_simulation():
    """100 simulated studies of 12 raters × 20 judgments over four systems of known strength, without ties (a
    tie counted as half a win each is not the model's own outcome, and pulls strengths together): each true
    log-strength lies inside its 95 % interval in about 95 % of them (over raters, percentile)."""
    truth = np.array([THETA[s] for s in sorted(THETA)])
    truth = truth - truth.mean()
    covered = np.zeros(len(truth))
    runs = 100
    for seed in range(runs):
        result = pw.bradley_terry_bootstrap(simulate(seed=1000 + seed, raters=12, per_rater=20, tie_rate=0.0), resamples=400,
                                            seed=seed)
        rows = {r["system"]: r for r in result["strengths"]}
        for k, system in enumerate(sorted(THETA)):
            covered[k] += rows[system]["ci_low"] <= truth[k] <= rows[system]["ci_high"]
    assert (covered / runs >= 0.88).all(), covered / runs
    assert (covered / runs).mean() >= 0.91


def test_bradley_terry_needs_two_connected_systems():
    lone = pd.DataFrame({"criterion": "c", "item": [1, 2], "rater": [1, 2], "left_system": ["a", "c"],
                         "right_system": ["b", "d"], "choice": ["left", "right"]})
    with pytest.raises(pw.BTError, match="never compared"):
        pw.bradley_terry_bootstrap(lone, resamples=10)
    assert bt.connected(np.array([[0, 1], [1, 0]])) and not bt.connected(np.zeros((2, 2)))
