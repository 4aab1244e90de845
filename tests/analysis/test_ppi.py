"""studies.analysis.ppi against ppi_py called directly on the same arrays (1e-9), and a seeded simulation
of coverage and width (prediction-powered vs human-only)."""
import numpy as np
import pandas as pd
import ppi_py
import pytest
from scipy import stats

from studies.analysis import ppi

TOL = 1e-9
Z = stats.norm.ppf(0.975)


def _sample(seed, n=120, big_n=900, rho=0.6, mean=3.0):
    rng = np.random.default_rng(seed)
    e = rng.normal(size=n + big_n)
    f = rho * e + np.sqrt(1 - rho**2) * rng.normal(size=n + big_n) + 0.4  # a biased metric
    y = mean + e
    return y[:n], f[:n], f[n:]


@pytest.mark.parametrize(("seed", "rho"), [(0, 0.6), (1, 0.2), (2, 0.9), (3, -0.4)])
def test_ppi_mean_estimate_matches_ppi_py(seed, rho):
    y, f, fu = _sample(seed, rho=rho)
    got = ppi.mean_estimate(y, f, fu, alpha=0.05, null=3.0)
    lam = _unclipped_lambda(y, f, fu)
    assert got.lam == pytest.approx(lam, abs=TOL)
    low, high = ppi_py.ppi_mean_ci(y, f, fu, alpha=0.05, lam=lam)
    assert got.se_asymptotic == pytest.approx(float(high[0] - low[0]) / (2 * Z), abs=TOL)  # ppi_py's standard error
    assert got.estimate == pytest.approx(float(ppi_py.ppi_mean_pointestimate(y, f, fu, lam=lam)[0]), abs=TOL)
    assert (got.ci_low, got.ci_high) == pytest.approx(
        (got.estimate - stats.t.ppf(0.975, got.df) * got.se, got.estimate + stats.t.ppf(0.975, got.df) * got.se), abs=TOL)
    assert got.df == len(y) - 2 and got.se > got.se_asymptotic  # the small-sample interval is the wider one
    assert got.p == pytest.approx(2 * stats.t.sf(abs(got.estimate - 3.0) / got.se, got.df), abs=TOL)
    human = stats.ttest_1samp(y, 3.0)
    assert (got.human_ci_low, got.human_ci_high) == pytest.approx(tuple(human.confidence_interval(0.95)), abs=TOL)
    assert got.human_p == pytest.approx(human.pvalue, abs=TOL)
    assert got.human_estimate == pytest.approx(y.mean(), abs=TOL)
    assert got.n_effective == pytest.approx(len(y) * (got.human_width / got.width) ** 2, rel=TOL)
    assert np.sign(got.lam) == np.sign(rho)  # a reversed metric gets a negative lambda, and helps
    assert got.width < got.human_width
    clipped = ppi.mean_estimate(y, f, fu, alpha=0.05, clip=True)  # ppi_py's own default choice
    auto_low, auto_high = ppi_py.ppi_mean_ci(y, f, fu, alpha=0.05)
    assert clipped.estimate == pytest.approx((auto_low[0] + auto_high[0]) / 2, abs=TOL)
    assert clipped.se_asymptotic == pytest.approx((auto_high[0] - auto_low[0]) / (2 * Z), abs=TOL)
    assert 0.0 <= clipped.lam <= 1.0


def _unclipped_lambda(y, f, fu):
    """PPI++'s lambda by its formula, cov(Y, f) / ((1 + n/N) var(f)), var over all n + N metric scores."""
    n, big_n = len(y), len(fu)
    cov = np.mean((y - y.mean()) * (f - f.mean()))
    return cov / ((1 + n / big_n) * np.var(np.r_[f, fu], ddof=1))


def test_prediction_powered_lambda_is_ppi_py_power_tuning():
    y, f, fu = _sample(7, rho=0.5)
    lam = ppi.power_tuning(y, f, fu, clip=True)
    tuned = ppi_py.ppi_mean_ci(y, f, fu, alpha=0.1, lam=lam)
    auto = ppi_py.ppi_mean_ci(y, f, fu, alpha=0.1)
    assert np.allclose(np.ravel(tuned), np.ravel(auto), atol=TOL, rtol=0)
    # and it is not the plain PPI (lambda = 1) nor the classical interval
    assert not np.allclose(np.ravel(ppi_py.ppi_mean_ci(y, f, fu, alpha=0.1, lam=1.0)), np.ravel(auto))
    assert 0.05 < lam < 0.95


def test_ppi_paired_difference_matches_ppi_py_on_differences():
    ya, fa, fua = _sample(11)
    yb, fb, fub = _sample(12, rho=0.4)
    got = ppi.paired_difference(ya, yb, fa, fb, fua, fub, alpha=0.05)
    low, high = ppi_py.ppi_mean_ci(ya - yb, fa - fb, fua - fub, alpha=0.05, lam=got.lam)
    assert got.se_asymptotic == pytest.approx(float(high[0] - low[0]) / (2 * Z), abs=TOL)
    assert got.estimate == pytest.approx(ppi_py.ppi_mean_pointestimate(ya - yb, fa - fb, fua - fub, lam=got.lam)[0],
                                         abs=TOL)
    assert got.p == pytest.approx(2 * stats.t.sf(abs(got.estimate) / got.se, got.df), abs=TOL)


def test_ppi_unpaired_difference_matches_ppi_ols():
    ya, fa, fua = _sample(21, n=80, big_n=500)
    yb, fb, fub = _sample(22, n=60, big_n=400, mean=2.5)
    got = ppi.unpaired_difference(ya, fa, fua, yb, fb, fub, alpha=0.05)
    x = np.column_stack([np.ones(140), np.r_[np.ones(80), np.zeros(60)]])
    xu = np.column_stack([np.ones(900), np.r_[np.ones(500), np.zeros(400)]])
    low, high = ppi_py.ppi_ols_ci(x, np.r_[ya, yb], np.r_[fa, fb], xu, np.r_[fua, fub], alpha=0.05, coord=1)
    widen = stats.t.ppf(0.975, 137) / Z * np.sqrt(140 / 137)  # the normal interval on t with n - 3 df
    assert got.estimate == pytest.approx((low[1] + high[1]) / 2, abs=TOL)
    assert got.width == pytest.approx((high[1] - low[1]) * widen, abs=TOL)
    human_low, human_high = ppi_py.classical_ols_ci(x, np.r_[ya, yb], alpha=0.05)
    assert got.human_width == pytest.approx((human_high[1] - human_low[1]) * stats.t.ppf(0.975, 138) / Z
                                            * np.sqrt(140 / 138), abs=TOL)
    assert got.human_estimate == pytest.approx(ya.mean() - yb.mean(), abs=TOL)
    assert 0 <= got.p <= 1 and got.p < 0.05  # a true difference of 0.5 sd with 140 units


def test_ppi_bradley_terry_matches_ppi_logistic():
    rng = np.random.default_rng(5)
    systems = ["a", "b", "c"]
    strength = {"a": 0.0, "b": 0.8, "c": -0.5}

    def draw(n):
        pairs = [tuple(rng.choice(systems, 2, replace=False)) for _ in range(n)]
        p = np.array([1 / (1 + np.exp(-(strength[a] - strength[b]))) for a, b in pairs])
        won = (rng.random(n) < p).astype(float)
        predicted = np.where(rng.random(n) < 0.75, won, 1 - won)  # a metric right 3 times in 4
        return pairs, won, predicted

    pairs, won, predicted = draw(150)
    pairs_u, _, predicted_u = draw(1200)
    got = ppi.bradley_terry(systems, pairs, won, predicted, pairs_u, predicted_u, alpha=0.05)

    def design(rows):
        x = np.zeros((len(rows), 3))
        for r, (a, b) in enumerate(rows):
            x[r, systems.index(a)], x[r, systems.index(b)] = 1, -1
        return x[:, 1:]

    low, high = ppi_py.ppi_logistic_ci(design(pairs), won, predicted, design(pairs_u), predicted_u, alpha=0.05)
    human_low, human_high = ppi_py.classical_logistic_ci(design(pairs), won, alpha=0.05)
    rows = {r["system"]: r for r in got["strengths"]}
    for j, name in enumerate(["b", "c"]):
        assert (rows[name]["ci_low"], rows[name]["ci_high"]) == pytest.approx((low[j], high[j]), abs=TOL)
        assert (rows[name]["human_ci_low"], rows[name]["human_ci_high"]) == pytest.approx(
            (human_low[j], human_high[j]), abs=TOL)
    assert rows["a"]["reference"] and rows["b"]["strength"] > rows["c"]["strength"]


def test_ppi_plan_matches_ppi_mean_power():
    y, f, _ = _sample(31, n=60, rho=0.7)
    width = 0.3
    got = ppi.plan(y, f, target_width=width, n_now=60, frame_size=5000, alpha=0.05)
    n0 = (2 * 1.959963984540054 * y.std() / width) ** 2
    assert got["needed_without_metric"] == int(np.ceil(n0))
    power = ppi_py.ppi_mean_power(y, f, cost_Y=1.0, cost_Yhat=ppi.METRIC_COST_SHARE, effective_n=n0, n_max=5000)
    assert got["needed_with_metric"] == power["n"]
    assert got["needed_with_metric"] < got["needed_without_metric"]
    assert got["more_with_metric"] == power["n"] - 60 and got["reachable"]
    # The interval a study of that size gets is (about) the target: check by simulation of one draw of the plan.
    tight = ppi.plan(y, f, target_width=width / 20, n_now=60, frame_size=5000)
    assert not tight["reachable"] and tight["needed_without_metric"] > 5000


def test_ppi_plan_uncorrelated_metric_saves_nothing():
    rng = np.random.default_rng(3)
    y, f = rng.normal(size=80), rng.normal(size=80)
    f = f - np.corrcoef(y, f)[0, 1] * (y - y.mean()) / y.std() * f.std() * 1.5  # make the correlation negative
    got = ppi.plan(y, f, target_width=0.4, n_now=80, frame_size=10_000)
    assert got["needed_with_metric"] == got["needed_without_metric"]


@pytest.mark.parametrize("metric", ["constant", "noise"])
def test_ppi_plan_for_a_target_the_pilot_already_meets_asks_for_two_units(metric):
    """ppi_py's pair for effective n below 1/2 rounds to (0, 0) and divides by zero (a report page once
    answered 500): the plan floors the effective size at the two units every plan asks for."""
    rng = np.random.default_rng(12)
    y = rng.normal(3.0, 0.2, size=12)
    f = np.full(12, 0.5) if metric == "constant" else rng.normal(size=12)
    n0 = (2 * 1.959963984540054 * y.std() / 2.0) ** 2
    assert n0 < 0.5  # the case that crashed
    got = ppi.plan(y, f, target_width=2.0, n_now=12, frame_size=40)
    assert got["needed_without_metric"] == 2 and got["needed_with_metric"] == 2
    assert got["more_without_metric"] == 0 and got["more_with_metric"] == 0


def test_ppi_without_unlabelled_units_is_the_human_estimate():
    y, f, _ = _sample(41)
    got = ppi.mean_estimate(y, f, [], alpha=0.05)
    assert (got.ci_low, got.ci_high) == pytest.approx(tuple(stats.ttest_1samp(y, 0).confidence_interval(0.95)), abs=TOL)
    assert got.note and got.lam == 0.0
    assert ppi.mean_estimate([1.0], [1.0], [1.0, 2.0]) is None


def test_ppi_rater_noise_against_pandas():
    rng = np.random.default_rng(8)
    units = np.repeat(np.arange(40), rng.integers(1, 5, size=40))
    truth = rng.normal(size=40)
    scores = truth[units] + rng.normal(0, 0.7, size=len(units))
    got = ppi.rater_noise(units, scores)
    frame = pd.DataFrame({"u": units, "s": scores})
    groups = frame.groupby("u")["s"]
    k, var = groups.count(), groups.var(ddof=1).fillna(0)
    pooled = ((k - 1) * var).sum() / (k - 1).sum()
    assert got["within_unit_variance"] == pytest.approx(pooled, rel=TOL)
    assert got["between_unit_variance"] == pytest.approx(groups.mean().var(ddof=1), rel=TOL)
    assert got["noise_share"] == pytest.approx((pooled / k).mean() / groups.mean().var(ddof=1), rel=TOL)
    assert 0.1 < got["noise_share"] < 0.6  # rating noise 0.49 per rating, item variance ~1


def test_ppi_rank_places():
    systems = ["x", "y", "z"]
    clear = ppi.rank_places(systems, [3.0, 2.0, 1.0], {("x", "y"): 1e-6, ("x", "z"): 1e-8, ("y", "z"): 1e-5})
    assert [(r["system"], r["best"], r["worst"], r["sure"]) for r in clear] == [
        ("x", 1, 1, True), ("y", 2, 2, True), ("z", 3, 3, True)]
    # y and z cannot be told apart: they share places 2-3; x is surely first
    close = ppi.rank_places(systems, [3.0, 1.1, 1.0], {("x", "y"): 1e-6, ("x", "z"): 1e-8, ("y", "z"): 0.4})
    assert [(r["system"], r["best"], r["worst"]) for r in close] == [("x", 1, 1), ("y", 2, 3), ("z", 2, 3)]
    # Holm: 0.03 alone is significant, but not as the largest of three tests with 0.02 before it
    holm = ppi.rank_places(systems, [3.0, 2.0, 1.0], {("x", "y"): 0.03, ("x", "z"): 0.02, ("y", "z"): 0.4})
    assert holm[0]["best"] == 1 and holm[0]["worst"] == 3


def _simulate(rho, draws=1000, n=100, big_n=1000, mean=3.0, seed=2023):
    """Coverage of the true mean and width ratio (prediction-powered / human-only) over seeded draws of
    synthetic human scores (mean ``mean``) and metric scores correlated ``rho`` with them."""
    rng = np.random.default_rng(seed)
    covered = human_covered = 0
    ratios = []
    for _ in range(draws):
        e = rng.normal(size=n + big_n)
        y = mean + e
        f = rho * e + np.sqrt(1 - rho**2) * rng.normal(size=n + big_n) - 1.0  # biased metric, other scale
        est = ppi.mean_estimate(y[:n], f[:n], f[n:], alpha=0.05)
        covered += est.ci_low <= mean <= est.ci_high
        human_covered += est.human_ci_low <= mean <= est.human_ci_high
        ratios.append(est.width / est.human_width)
    return covered / draws, human_covered / draws, np.array(ratios)


def test_prediction_powered_simulation_informative_metric():
    coverage, human_coverage, ratios = _simulate(0.5)
    assert coverage >= 0.93 and human_coverage >= 0.93
    assert ratios.mean() < 0.93  # theory: sqrt(1 - rho^2 N/(N+n)) = 0.88
    assert (ratios < 1).mean() > 0.99


def test_prediction_powered_simulation_uninformative_metric():
    coverage, _, ratios = _simulate(0.0, seed=7)
    assert coverage >= 0.93
    # about as wide (lambda ~ 0): the small-sample interval pays for fitting lambda (one df, the slope's
    # own variance), about 1 % at n = 100
    assert ratios.mean() <= 1.0 + 1e-2
    assert ratios.max() < 1.1  # a draw whose unrated units sit far from the rated ones (the slope's leverage)


def _likert_sample(rng, n_total, rho):
    """A unit's human score: the mean of 3 ratings on a 1-5 scale; the metric: a cosine-like score in
    [0, 1] correlated about ``rho`` with it (a narrower scale than the humans', so lambda* > 1)."""
    latent = rng.normal(size=n_total)
    ratings = np.clip(np.rint(3 + 0.9 * latent[:, None] + 0.6 * rng.normal(size=(n_total, 3))), 1, 5)
    y = ratings.mean(axis=1)
    z = (y - y.mean()) / y.std()
    f = 0.5 + 0.1 * (rho * z + np.sqrt(1 - rho**2) * rng.normal(size=n_total))
    return y, f


def test_ppi_unclipped_lambda_coverage_and_width_at_50_of_600():
    """The held-out shape (50 human-rated units of 600, a metric on a narrower scale, rho about .5):
    unclipped power tuning keeps coverage and reaches the single-metric width sqrt(1 - rho^2 N/(n+N));
    ppi_py's clipped lambda (stuck at 1) does not."""
    rng = np.random.default_rng(20261127)
    n, total, draws = 50, 600, 1000
    covered = covered_clipped = 0
    ratios, clipped_ratios, lams, rhos = [], [], [], []
    for _ in range(draws):
        y, f = _likert_sample(rng, total, 0.5)
        truth = y.mean()  # the frame's mean: what the study wants to know
        pick = rng.permutation(total)
        lab, unl = pick[:n], pick[n:]
        est = ppi.mean_estimate(y[lab], f[lab], f[unl], alpha=0.05)
        clipped = ppi.mean_estimate(y[lab], f[lab], f[unl], alpha=0.05, clip=True)
        covered += est.ci_low <= truth <= est.ci_high
        covered_clipped += clipped.ci_low <= truth <= clipped.ci_high
        ratios.append(est.width / est.human_width)
        clipped_ratios.append(clipped.width / clipped.human_width)
        lams.append(est.lam)
        rhos.append(np.corrcoef(y, f)[0, 1])
    # the frame is finite (600 units) and the truth is its mean: the human-only interval over-covers a
    # little; prediction-powered must stay at or above .93
    assert covered / draws >= 0.93
    assert np.median(lams) > 1.5  # the narrow metric needs lambda > 1: clipping at 1 binds
    theory = np.sqrt(1 - np.mean(rhos) ** 2 * (total - n) / total)
    assert np.mean(ratios) <= theory + 0.03  # + the small-sample terms (t on n - 2 df, the slope's variance)
    assert np.mean(ratios) < np.mean(clipped_ratios) - 0.005
    assert covered_clipped / draws >= 0.93


def test_ppi_combined_one_metric_is_the_unclipped_estimate():
    y, f, fu = _sample(21, rho=0.5)
    single = ppi.mean_estimate(y, f, fu, alpha=0.05, null=3.0)
    combined, w = ppi.combined_estimate(y, f[:, None], fu[:, None], alpha=0.05, null=3.0)
    assert w[0] == pytest.approx(single.lam, abs=TOL)
    for key in ("estimate", "ci_low", "ci_high", "human_ci_low", "human_ci_high", "p", "human_p"):
        assert getattr(combined, key) == pytest.approx(getattr(single, key), abs=TOL)


def test_ppi_combined_weights_solve_the_control_variate_normal_equations():
    rng = np.random.default_rng(5)
    n, big_n = 80, 700
    e = rng.normal(size=n + big_n)
    f1 = 0.5 * e + rng.normal(size=n + big_n)
    f2 = 0.5 * e + rng.normal(size=n + big_n) + 0.3 * f1
    constant = np.full(n + big_n, 2.0)
    metrics = np.column_stack([f1, f2, constant])
    y = 3 + e
    w = ppi.combination_weights(y[:n], metrics[:n], metrics[n:])
    sigma = np.cov(metrics[:, :2].T)
    cov_fy = np.array([np.mean((y[:n] - y[:n].mean()) * (m - m.mean())) for m in metrics[:n, :2].T])
    assert w[:2] == pytest.approx(np.linalg.solve(sigma, cov_fy) / (1 + n / big_n), abs=TOL)
    assert w[2] == 0.0  # a constant metric says nothing
    got, _ = ppi.combined_estimate(y[:n], metrics[:n], metrics[n:], alpha=0.05)
    low, high = ppi_py.ppi_mean_ci(y[:n], metrics[:n] @ w, metrics[n:] @ w, alpha=0.05, lam=1.0)
    assert got.se_asymptotic == pytest.approx((high[0] - low[0]) / (2 * Z), abs=TOL)
    assert got.estimate == pytest.approx(ppi_py.ppi_mean_pointestimate(y[:n], metrics[:n] @ w, metrics[n:] @ w,
                                                                       lam=1.0)[0], abs=TOL)


def test_ppi_combined_two_metrics_narrower_than_either_and_covers():
    """Two metrics that see different parts of the human score: combined, the interval is narrower than
    with either alone, at coverage >= .93 over 1,000 seeded draws."""
    rng = np.random.default_rng(11)
    n, big_n, draws = 60, 600, 1000
    covered = 0
    ratio_both, ratio_one, ratio_two = [], [], []
    for _ in range(draws):
        a, b = rng.normal(size=(2, n + big_n))
        y = 3 + a + b + 0.8 * rng.normal(size=n + big_n)
        m1 = a + 0.5 * rng.normal(size=n + big_n)
        m2 = 0.2 * b + 0.1 * rng.normal(size=n + big_n)
        both, _ = ppi.combined_estimate(y[:n], np.column_stack([m1, m2])[:n], np.column_stack([m1, m2])[n:])
        covered += both.ci_low <= 3.0 <= both.ci_high
        ratio_both.append(both.width / both.human_width)
        ratio_one.append(ppi.mean_estimate(y[:n], m1[:n], m1[n:]).width / both.human_width)
        ratio_two.append(ppi.mean_estimate(y[:n], m2[:n], m2[n:]).width / both.human_width)
    assert covered / draws >= 0.93
    assert np.mean(ratio_both) < min(np.mean(ratio_one), np.mean(ratio_two)) - 0.05


def test_ppi_plan_reversed_metric_helps_as_much_as_a_direct_one():
    y, f, _ = _sample(3, rho=0.6)
    direct = ppi.plan(y, f, target_width=0.3, n_now=len(y), frame_size=20_000)
    reversed_ = ppi.plan(y, -f, target_width=0.3, n_now=len(y), frame_size=20_000)
    assert reversed_["needed_with_metric"] == direct["needed_with_metric"] < direct["needed_without_metric"]


@pytest.mark.parametrize(("spread", "low", "high"), [(0.0, 0.8, 1.0), (1.0, 0.05, 0.35), (3.0, 0.0, 0.06)])
def test_ppi_rater_noise_share_tracks_the_true_share(spread, low, high):
    """3 ratings per unit with noise sd 0.8 around unit values of sd ``spread``: the true share of Var(Y)
    is (0.64/3) / (spread^2 + 0.64/3); equal units (spread 0) give about 1, and that is right."""
    rng = np.random.default_rng(12)
    units = np.repeat(np.arange(200), 3)
    scores = (spread * rng.normal(size=200))[units] + rng.normal(0, 0.8, size=600)
    got = ppi.rater_noise(units, scores)
    truth = (0.64 / 3) / (spread**2 + 0.64 / 3)
    assert low <= got["noise_share"] <= high and abs(got["noise_share"] - truth) < 0.12
