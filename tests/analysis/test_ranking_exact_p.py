"""System-level correlations from few systems: the exact permutation p (all n! pairings) against
scipy.stats.permutation_test and SciPy's exact Kendall test, and SciPy's asymptotic p kept above n = 8."""
import numpy as np
import pytest
from scipy import stats

from studies.analysis.correlation import EXACT_MAX_N, correlate, exact_permutation_p

STATISTICS = {"spearman": lambda a, b: stats.spearmanr(a, b).statistic,
              "pearson": lambda a, b: stats.pearsonr(a, b).statistic,
              "kendall": lambda a, b: stats.kendalltau(a, b).statistic}


def scipy_exact_p(x, y, method):
    """SciPy's exact permutation p as its documentation computes a correlation's: only x's order is
    permuted (n! pairings), y held fixed."""
    return stats.permutation_test((x,), lambda u: STATISTICS[method](u, y), permutation_type="pairings",
                                  n_resamples=np.inf).pvalue


def test_ranking_four_systems_in_order_is_not_p_zero():
    got = correlate([0.2, 0.4, 0.5, 0.9], [2.1, 2.5, 3.0, 3.2], "spearman")
    assert got.r == pytest.approx(1.0)
    assert stats.spearmanr([0.2, 0.4, 0.5, 0.9], [2.1, 2.5, 3.0, 3.2]).pvalue == 0.0  # what was shown before
    assert got.p == pytest.approx(2 / 24, abs=1e-12)  # 2 of the 4! orderings reach |rho| = 1
    assert got.p_method == "exact permutation" and got.n == 4
    assert got.as_dict()["p_method"] == "exact permutation"


@pytest.mark.parametrize("method", ["spearman", "pearson", "kendall"])
@pytest.mark.parametrize("n", [3, 5, 6])
def test_ranking_exact_p_equals_scipy_permutation_test(method, n):
    rng = np.random.default_rng(n)
    x = rng.normal(size=n)
    y = x + rng.normal(size=n)
    expected = scipy_exact_p(x, y, method)
    assert exact_permutation_p(x, y, method) == pytest.approx(expected, abs=1e-9)
    assert correlate(x, y, method).p == pytest.approx(expected, abs=1e-9)


def test_ranking_exact_kendall_equals_scipy_exact_method():
    x, y = [1, 2, 3, 4, 5, 6], [2, 1, 4, 3, 6, 5]
    assert exact_permutation_p(x, y, "kendall") == pytest.approx(stats.kendalltau(x, y, method="exact").pvalue,
                                                                 abs=1e-9)


def test_ranking_above_eight_pairs_keeps_scipy_asymptotic_p():
    rng = np.random.default_rng(9)
    x, y = rng.normal(size=EXACT_MAX_N + 1), rng.normal(size=EXACT_MAX_N + 1)
    got = correlate(x, y, "spearman")
    assert got.p == pytest.approx(stats.spearmanr(x, y).pvalue, abs=1e-12) and got.p_method == "asymptotic"
    with pytest.raises(ValueError, match="at most 8"):
        exact_permutation_p(x, y)
