"""Agreement, BWS, correlations, ANOVA and normalisation against trusted implementations and
published values."""
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from studies.analysis.agreement import krippendorff_alpha, raters_needed
from studies.analysis.anova import tukey, two_way_anova
from studies.analysis.bws import balanced_tuples, counting_scores, pair_counts, split_half_reliability
from studies.analysis.correlation import correlate, correlate_all
from studies.analysis.icc import icc
from studies.analysis.normalise import per_rater_z

# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", the 4 coders x 12 units example.
CANONICAL = [[1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None], [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
             [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None], [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]]


@pytest.mark.parametrize(("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849),
                                                  ("ratio", 0.797)])
def test_krippendorff_alpha_reproduces_the_canonical_example_from_a_long_table(level, published):
    rows = [(unit, f"coder{c}", v) for c, row in enumerate(CANONICAL) for unit, v in enumerate(row) if v is not None]
    units, coders, values = zip(*rows, strict=True)
    assert round(krippendorff_alpha(units, coders, values, level=level), 3) == published


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
@pytest.mark.parametrize("kind", ["likert", "continuous", "magnitudes"])
def test_krippendorff_alpha_equals_the_krippendorff_package_on_random_sparse_data(level, kind):
    import krippendorff

    from studies.analysis.agreement import reliability_matrix

    rng = np.random.default_rng(sum(map(ord, level + kind)))
    for _ in range(25):
        cells = [(u, r) for u in range(int(rng.integers(2, 30))) for r in range(int(rng.integers(2, 8)))
                 if rng.random() < 0.6]
        units, raters = (np.array(c) for c in zip(*cells, strict=True))
        values = {"likert": lambda n: rng.integers(1, 6, n).astype(float), "continuous": lambda n: rng.normal(size=n),
                  "magnitudes": lambda n: rng.gamma(2, 10, n).round(1)}[kind](len(cells))
        values[rng.random(len(cells)) < 0.05] = np.nan  # missing values are skipped
        expected = krippendorff.alpha(reliability_data=reliability_matrix(units, raters, values),
                                      level_of_measurement=level)
        if np.isfinite(expected):
            assert krippendorff_alpha(units, raters, values, level=level) == pytest.approx(expected, abs=1e-9)


def test_krippendorff_alpha_of_continuous_scores_needs_no_values_by_values_tensor():
    """1,440 distinct normalised scores (a magnitude condition): the package's units × values × values
    tensor takes tens of seconds and gigabytes here; the closed form equals the explicit sum over pairs."""
    rng = np.random.default_rng(0)
    units, raters = rng.integers(0, 120, 1440), rng.integers(0, 200, 1440)
    values = rng.normal(size=1440) + units / 60
    alpha = krippendorff_alpha(units, raters, values, level="interval")
    # interval alpha = 1 − (n−1)·D_o/D_e computed here from explicit pairs, without the closed form
    frame = pd.DataFrame({"u": units, "r": raters, "v": values}).drop_duplicates(["u", "r"], keep="last")
    frame = frame[frame.groupby("u")["u"].transform("size") >= 2]
    observed = sum(((g["v"].to_numpy()[:, None] - g["v"].to_numpy()[None, :]) ** 2).sum() / (len(g) - 1)
                   for _, g in frame.groupby("u"))
    v = frame["v"].to_numpy()
    expected = ((v[:, None] - v[None, :]) ** 2).sum()
    assert alpha == pytest.approx(1 - (len(v) - 1) * observed / expected, abs=1e-12)


def test_raters_needed_is_spearman_brown_inverted():
    m = raters_needed(0.3, 0.9)
    assert m == pytest.approx(0.9 * 0.7 / (0.3 * 0.1))
    assert m * 0.3 / (1 + (m - 1) * 0.3) == pytest.approx(0.9)  # forward Spearman-Brown reaches the target
    assert raters_needed(0.95, 0.9) == 1.0
    assert raters_needed(0.0, 0.9) == float("inf")


def test_spearman_brown_agrees_with_icc_average_forms():
    rng = np.random.default_rng(3)
    n, k = 40, 8
    scores = rng.normal(0, 1, (n, 1)) + rng.normal(0, 1, (n, k))
    result = icc(np.repeat(np.arange(n), k), np.tile(np.arange(k), n), scores.ravel())
    rho1, rhok = result["ICC(C,1)"].value, result["ICC(C,k)"].value
    assert raters_needed(rho1, rhok) == pytest.approx(k)


def test_counting_scores_are_best_minus_worst_over_appearances():
    # two annotations of tuple t1 (items a,b,c,d) and one of t2 (a,b,c,e)
    rows = [("a", 1, "x-t1"), ("b", 2, "x-t1"), ("c", 3, "x-t1"), ("d", 4, "x-t1"),
            ("a", 4, "y-t1"), ("b", 1, "y-t1"), ("c", 2, "y-t1"), ("d", 3, "y-t1"),
            ("a", 1, "x-t2"), ("b", 3, "x-t2"), ("c", 2, "x-t2"), ("e", 4, "x-t2")]
    items, ranks, annotations = zip(*rows, strict=True)
    table = counting_scores(items, ranks, annotations)
    assert table.loc["a"].tolist() == [3, 2, 1, pytest.approx(1 / 3)]
    assert table.loc["b", "score"] == pytest.approx(1 / 3)
    assert table.loc["c", "score"] == 0
    assert table.loc["d", "score"] == pytest.approx(-1 / 2)
    assert table.loc["e", "score"] == -1


def test_balanced_tuples_place_every_item_equally_and_spread_pairs():
    tuples = balanced_tuples(40, size=4, factor=2, seed=1)
    assert tuples.shape == (80, 4)  # 2N tuples
    assert (np.sort(tuples, axis=1)[:, 1:] != np.sort(tuples, axis=1)[:, :-1]).all()  # distinct within a tuple
    assert set(np.bincount(tuples.ravel(), minlength=40)) == {8}  # every item 8 times
    one_shuffle = balanced_tuples(40, size=4, factor=2, tries=1, seed=1)
    assert pair_counts(tuples, 40).std() <= pair_counts(one_shuffle, 40).std()


def test_split_half_reliability_is_high_for_consistent_annotators_and_low_for_random_ones():
    rng = np.random.default_rng(0)
    n_items = 40
    quality = np.linspace(-2, 2, n_items)
    tuples = balanced_tuples(n_items, seed=2)

    def annotate(noise):
        rows = []
        for t, members in enumerate(tuples):
            for a in range(6):
                seen = quality[members] + rng.normal(0, noise, 4)
                ranks = stats.rankdata(-seen)
                rows += [(m, r, t, f"{t}-{a}") for m, r in zip(members, ranks, strict=True)]
        return zip(*rows, strict=True)

    good = split_half_reliability(*annotate(0.3), trials=20)
    noise = split_half_reliability(*annotate(50.0), trials=20)
    assert good.spearman_mean > 0.8 and good.spearman_brown > good.spearman_mean
    assert abs(noise.spearman_mean) < 0.35
    assert good.trials == 20 and good.spearman_sd >= 0


def test_correlations_equal_scipy_and_bca_intervals_cover_r():
    rng = np.random.default_rng(5)
    x = rng.normal(size=60)
    y = 0.6 * x + rng.normal(size=60)
    results = correlate_all(x, y, bootstrap=400)
    reference = {"pearson": stats.pearsonr(x, y), "spearman": stats.spearmanr(x, y),
                 "kendall": stats.kendalltau(x, y, variant="b")}
    for method, result in results.items():
        assert result.r == pytest.approx(reference[method].statistic, abs=1e-12)
        assert result.p == pytest.approx(reference[method].pvalue, abs=1e-12)
        assert result.ci95[0] < result.r < result.ci95[1]
    assert correlate([1, 2, 3], [5, 5, 5]).r != correlate([1, 2, 3], [5, 5, 5]).r  # NaN when undefined


def test_two_way_anova_matches_a_hand_computed_balanced_design():
    rng = np.random.default_rng(1)
    rows = [(c, s, rng.normal({"likert": 0, "rme": 0.5}[c] + {"a": 0, "b": 1, "c": 2}[s], 1))
            for c in ("likert", "rme") for s in ("a", "b", "c") for _ in range(10)]
    frame = pd.DataFrame(rows, columns=["condition", "system", "z"])
    table = two_way_anova(frame)
    grand = frame.z.mean()
    ss_condition = sum(len(g) * (g.z.mean() - grand) ** 2 for _, g in frame.groupby("condition"))
    assert table.loc["C(condition)", "sum_sq"] == pytest.approx(ss_condition)
    assert table.loc["C(system)", "PR(>F)"] < 1e-3
    assert table["eta_sq"].sum() == pytest.approx(1.0)


def test_tukey_p_values_equal_scipy():
    rng = np.random.default_rng(2)
    groups = {g: rng.normal(mu, 1, 25) for g, mu in (("bme", 0), ("likert", 0.8), ("rme", 0.1))}
    frame = pd.DataFrame([(g, v) for g, values in groups.items() for v in values], columns=["condition", "z"])
    table = tukey(frame)
    reference = stats.tukey_hsd(groups["bme"], groups["likert"], groups["rme"])
    index = {"bme": 0, "likert": 1, "rme": 2}
    for _, row in table.iterrows():
        assert row["p-adj"] == pytest.approx(reference.pvalue[index[row["group1"]], index[row["group2"]]], abs=1e-6)


def test_per_rater_z_centres_and_scales_each_rater():
    values = np.array([1, 2, 3, 10, 20, 30, 5, 5], dtype=float)
    raters = np.array(["a", "a", "a", "b", "b", "b", "c", "c"])
    z = per_rater_z(values, raters)
    np.testing.assert_allclose(z[:3], [-1, 0, 1])
    np.testing.assert_allclose(z[3:6], [-1, 0, 1])
    assert (z[6:] == 0).all()  # a rater without variation gets 0, not NaN


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
def test_vectorised_bootstrap_statistics_equal_scipy_on_every_resample(method):
    from studies.analysis.correlation import _statistic, _vectorised

    rng = np.random.default_rng(7)
    x = rng.integers(1, 6, size=(20, 30)).astype(float)  # Likert-like: many ties
    y = x + rng.integers(-2, 3, size=(20, 30))
    together = _vectorised(method)(x, y, axis=-1)
    one_by_one = [_statistic(method, a, b).statistic for a, b in zip(x, y, strict=True)]
    np.testing.assert_allclose(together, one_by_one, atol=1e-12)
