"""Prediction-powered means at small n (studies.analysis.ppi_small_n): the point estimate and ppi_py's
standard error equal ppi_py's to 1e-9, the human-only interval equals SciPy's one-sample t, and seeded
simulations (vectorised, 1,000 draws) cover at least .93 at 12 labelled units per system, where ppi_py's
normal interval does not."""
import numpy as np
import ppi_py
import pytest
from scipy import stats

from studies.analysis import ppi
from studies.analysis.ppi_small_n import COVERAGE_MEASURED_FROM_N, ppi_mean_small_n, small_n_warning

TOL = 1e-9
Z = stats.norm.ppf(0.975)


def _draws(seed, *, draws=1000, n=12, big_n=138, rho=0.6, likert=False):
    rng = np.random.default_rng(seed)
    e = rng.normal(size=(draws, n + big_n))
    f = rho * e + np.sqrt(1 - rho**2) * rng.normal(size=e.shape) + 0.4  # a biased metric
    if likert:  # the mean of 3 ratings on 1-5: the truth is its population mean, computed once on a big sample
        def score(latent, noise):
            return np.clip(np.rint(3 + 0.9 * latent[..., None] + 0.6 * noise), 1, 5).mean(-1)
        y = score(e, rng.normal(size=(*e.shape, 3)))
        big = rng.normal(size=400_000)
        truth = score(big, rng.normal(size=(400_000, 3))).mean()
    else:
        y, truth = 3.0 + e, 3.0
    return y[:, :n], f[:, :n], f[:, n:], truth


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ppi_small_n_point_estimate_and_se_equal_ppi_py(seed):
    y, f, fu, _ = _draws(seed, draws=1)
    y, f, fu = y[0], f[0], fu[0]
    lam = float(ppi_py.ppi._calc_lam_glm(y.reshape(-1, 1), f.reshape(-1, 1), fu.reshape(-1, 1), np.eye(1), clip=False))
    core = ppi_mean_small_n(y, f, fu)  # lambda by its own vectorised formula
    assert float(core["lam"]) == pytest.approx(lam, abs=TOL)
    assert float(core["estimate"]) == pytest.approx(ppi_py.ppi_mean_pointestimate(y, f, fu, lam=lam)[0], abs=TOL)
    low, high = ppi_py.ppi_mean_ci(y, f, fu, alpha=0.05, lam=lam)
    assert float(core["se_asymptotic"]) == pytest.approx((high[0] - low[0]) / (2 * Z), abs=TOL)
    human = stats.ttest_1samp(y, 0).confidence_interval(0.95)
    assert (float(core["human_low"]), float(core["human_high"])) == pytest.approx((human.low, human.high), abs=TOL)


def test_ppi_small_n_regression_variance_by_hand():
    y = np.array([3.0, 4.0, 2.0, 5.0, 4.0, 3.0, 3.5, 4.5])
    f = np.array([0.4, 0.6, 0.3, 0.9, 0.5, 0.5, 0.4, 0.8])
    fu = np.array([0.5, 0.7, 0.2, 0.6, 0.55])
    core = ppi_mean_small_n(y, f, fu, lam=2.0)
    r = y - 2.0 * f
    s_r2 = np.sum((r - r.mean()) ** 2) / 6
    s_ff = np.sum((f - f.mean()) ** 2)
    se = np.sqrt(s_r2 * (1 / 8 + (fu.mean() - f.mean()) ** 2 / s_ff) + 4.0 * np.var(fu, ddof=1) / 5)
    assert float(core["se"]) == pytest.approx(se, abs=TOL)
    assert float(core["high"] - core["estimate"]) == pytest.approx(stats.t.ppf(0.975, 6) * se, abs=TOL)


@pytest.mark.parametrize(("rho", "likert"), [(0.6, False), (0.3, True), (0.9, True)])
def test_ppi_small_n_coverage_at_12_per_system(rho, likert):
    y, f, fu, truth = _draws(20261201, rho=rho, likert=likert)
    core = ppi_mean_small_n(y, f, fu)
    covered = np.mean((core["low"] <= truth) & (truth <= core["high"]))
    asymptotic = np.mean(np.abs(core["estimate"] - truth) <= Z * core["se_asymptotic"])
    human = np.mean((core["human_low"] <= truth) & (truth <= core["human_high"]))
    assert covered >= 0.93 and human >= 0.93
    assert asymptotic < 0.93  # what ppi_py's normal interval gave here
    assert np.mean(core["high"] - core["low"]) < np.mean(core["human_high"] - core["human_low"]) or rho < 0.5


def test_ppi_small_n_coverage_holds_down_to_the_measured_n():
    y, f, fu, truth = _draws(7, n=COVERAGE_MEASURED_FROM_N, rho=0.6)
    core = ppi_mean_small_n(y, f, fu)
    assert np.mean((core["low"] <= truth) & (truth <= core["high"])) >= 0.93


def test_ppi_small_n_mean_estimate_says_n_method_and_warns_below_measured_n():
    y, f, fu, _ = _draws(3, draws=1, n=COVERAGE_MEASURED_FROM_N - 1)
    few = ppi.mean_estimate(y[0], f[0], fu[0])
    assert few.n == COVERAGE_MEASURED_FROM_N - 1 and "may cover less" in few.warning
    assert few.as_dict()["df"] == COVERAGE_MEASURED_FROM_N - 3 and "Student t" in few.as_dict()["method"]
    y, f, fu, _ = _draws(3, draws=1, n=12)
    assert ppi.mean_estimate(y[0], f[0], fu[0]).warning == "" and small_n_warning(12) == ""
    two = ppi.mean_estimate([1.0, 2.0], [0.1, 0.3], [0.2, 0.4, 0.5])
    assert two.lam == 0.0 and "too few" in two.note
