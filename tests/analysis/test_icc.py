"""ICC: every column equals pingouin on complete data; the incomplete method reduces to it; the
sparse method matches an independent step-by-step computation of Ebel / Brueckl; bad input is named."""
import json
import subprocess
import sys
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pingouin as pg
import pytest
from scipy.stats import f as scipy_f

from studies.analysis.icc import FORMS, ICCInputError, ICCWarning, icc, ipsate

pg.options["round"] = None
pg.options["round.column.CI95"] = None


def complete_table(n, k, *, seed, rater_sd=0.5, noise=0.8, integer=False):
    rng = np.random.default_rng(seed)
    truth, bias = rng.normal(0, 1, n), rng.normal(0, rater_sd, k)
    scores = truth[:, None] + bias[None, :] + rng.normal(0, noise, (n, k))
    if integer:
        scores = np.clip(np.round(3.5 + scores), 1, 6)
    items, raters = np.repeat(np.arange(n), k), np.tile(np.arange(k), n)
    return pd.DataFrame({"item": items, "rater": [f"r{j}" for j in raters], "score": scores.ravel()})


CASES = [
    pytest.param(dict(n=20, k=4, seed=1), id="small"),
    pytest.param(dict(n=50, k=40, seed=2), id="seed-study-size"),
    pytest.param(dict(n=30, k=6, seed=3, rater_sd=3.0), id="strong-rater-bias"),
    pytest.param(dict(n=25, k=5, seed=4, integer=True), id="likert-integers"),
    pytest.param(dict(n=12, k=3, seed=5, noise=3.0), id="unreliable"),
]


@pytest.mark.parametrize("case", CASES)
def test_every_column_equals_pingouin_on_complete_data(case):
    data = complete_table(**case)
    ours = icc(data["item"], data["rater"], data["score"])
    theirs = pg.intraclass_corr(data, "item", "rater", "score").set_index("Type")
    assert ours.method == "complete" and ours.k0 == case["k"]
    for form in FORMS:
        row, mine = theirs.loc[form], ours[form]
        np.testing.assert_allclose(
            [mine.value, mine.F, mine.df1, mine.df2, mine.p, *mine.ci95],
            [row["ICC"], row["F"], row["df1"], row["df2"], row["pval"], *row["CI95"]],
            rtol=0, atol=1e-9, err_msg=form,
        )


@pytest.mark.parametrize("case", CASES)
def test_incomplete_method_reduces_to_the_complete_one(case):
    data = complete_table(**case)
    complete = icc(data["item"], data["rater"], data["score"], method="complete")
    general = icc(data["item"], data["rater"], data["score"], method="incomplete")
    assert general.method == "incomplete" and general.k0 == pytest.approx(case["k"], abs=1e-12)
    for form in FORMS:
        a, b = complete[form], general[form]
        np.testing.assert_allclose([b.value, b.F, b.df1, b.df2, b.p, *b.ci95],
                                   [a.value, a.F, a.df1, a.df2, a.p, *a.ci95], rtol=0, atol=1e-9, err_msg=form)


def test_order_of_rows_and_labels_does_not_matter():
    data = complete_table(15, 4, seed=7)
    shuffled = data.sample(frac=1, random_state=3)
    a, b = icc(data["item"], data["rater"], data["score"]), icc(shuffled["item"], shuffled["rater"], shuffled["score"])
    for form in FORMS:
        assert a[form].value == pytest.approx(b[form].value, abs=1e-12)


# A sparse design small enough to follow by hand: 4 items, 3 raters, 9 ratings.
SPARSE = [("A", "r1", 1), ("A", "r2", 2), ("B", "r1", 3), ("B", "r2", 5), ("B", "r3", 4),
          ("C", "r2", 6), ("C", "r3", 5), ("D", "r1", 2), ("D", "r3", 3)]


def by_hand(rows, *, sub_means=False):
    """irrNA's iccNA recipe (STATISTICS.md §1) step by step in exact fractions, independent of the NumPy code."""
    items, raters = sorted({r[0] for r in rows}), sorted({r[1] for r in rows})
    x = {(r[0], r[1]): Fraction(r[2]) for r in rows}
    N, n, k = len(x), len(items), len(raters)
    G = sum(x.values()) / N
    k_i = {i: sum(1 for (ii, _) in x if ii == i) for i in items}
    n_j = {j: sum(1 for (_, jj) in x if jj == j) for j in raters}

    def item_means(v):
        return {i: sum(s for (ii, _), s in v.items() if ii == i) / k_i[i] for i in items}

    def rater_means(v):
        return {j: sum(s for (_, jj), s in v.items() if jj == j) / n_j[j] for j in raters}

    def subs(v):
        m = item_means(v)
        return {j: sum(m[i] for (i, jj) in v if jj == j) / n_j[j] for j in raters}

    m, r = item_means(x), rater_means(x)
    k0 = (N - Fraction(sum(c * c for c in k_i.values()), N)) / (n - 1)
    kbar = Fraction(N, n)
    ss_tot = sum((s - G) ** 2 for s in x.values())
    ss_b = sum(k_i[i] * (m[i] ** 2 - G**2) for i in items)
    ss_w = sum(s * s for s in x.values()) - sum(k_i[i] * m[i] ** 2 for i in items)
    if not sub_means:  # one ipsation against the grand mean
        centre = {j: G for j in raters}
        y = {(i, j): s + G - r[j] for (i, j), s in x.items()}
        rounds = 1
    else:  # rater sub-means, repeated while the correction's eta^2 exceeds 1e-6; a failing one is not applied
        centre = subs(x)
        y = {(i, j): s + centre[j] - r[j] for (i, j), s in x.items()}
        rounds = 1
        while True:
            s_j, r_y = subs(y), rater_means(y)
            d = {j: s_j[j] - r_y[j] for j in raters}
            if sum(n_j[j] * d[j] ** 2 for j in raters) / ss_tot <= Fraction(1, 10**6):
                break
            y = {(i, j): s + d[j] for (i, j), s in y.items()}
            centre, rounds = s_j, rounds + 1
    my = item_means(y)
    ss_items = max(sum(k_i[i] * (my[i] ** 2 - G**2) for i in items), 0)
    ss_res = sum(s * s for s in y.values()) - sum(k_i[i] * my[i] ** 2 for i in items)
    ss_raters = sum(n_j[j] * (r[j] ** 2 - centre[j] ** 2) for j in raters)
    df_w, df_res = n * (kbar - 1), (n - 1) * (kbar - 1)
    B1, W = ss_b / (n - 1), ss_w / df_w
    B, R, C = ss_items / (n - 1), ss_res / df_res, ss_raters / (k - 1)
    out = {
        "G": G, "k0": k0, "y_item_means": [my[i] for i in items], "rounds": rounds,
        "ss_between_items": ss_b, "ss_within_items": ss_w, "ss_items": ss_items, "ss_residual": ss_res,
        "ss_raters": ss_raters, "df_within_items": df_w, "df_residual": df_res,
        "ICC(1,1)": (B1 - W) / (B1 + (k0 - 1) * W), "ICC(1,k)": (B1 - W) / B1,
        "ICC(C,1)": (B - R) / (B + (k0 - 1) * R), "ICC(C,k)": (B - R) / B,
        "ICC(A,1)": (B - R) / (B + (k0 - 1) * R + k0 / n * (C - R)), "ICC(A,k)": (B - R) / (B + (C - R) / n),
    }
    # F tests and CIs (floats from here: F quantiles)
    B1, W, B, R, C, k0f = map(float, (B1, W, B, R, C, k0))
    df_w, df_res = float(df_w), float(df_res)
    q = scipy_f.ppf
    f1, f3 = B1 / W, B / R
    fl1, fu1 = f1 / q(0.975, n - 1, df_w), f1 * q(0.975, df_w, n - 1)
    fl3, fu3 = f3 / q(0.975, n - 1, df_res), f3 * q(0.975, df_res, n - 1)
    rho = float(out["ICC(A,1)"])
    a, b = k0f * rho / (n * (1 - rho)), 1 + k0f * rho * (n - 1) / (n * (1 - rho))
    v = (a * C + b * R) ** 2 / ((a * C) ** 2 / (k - 1) + (b * R) ** 2 / df_res)
    fl, fu = q(0.975, n - 1, v), q(0.975, v, n - 1)
    low = n * (B - fl * R) / (fl * (k0f * C + (k0f * n - k0f - n) * R) + n * B)
    high = n * (fu * B - R) / (k0f * C + (k0f * n - k0f - n) * R + n * fu * B)
    sb = [k0f * z / (1 + (k0f - 1) * z) for z in (low, high)]
    out["stats"] = {
        "ICC(1,1)": (f1, n - 1, df_w, scipy_f.sf(f1, n - 1, df_w), [(fl1 - 1) / (fl1 + k0f - 1), (fu1 - 1) / (fu1 + k0f - 1)]),
        "ICC(1,k)": (f1, n - 1, df_w, scipy_f.sf(f1, n - 1, df_w), [1 - 1 / fl1, 1 - 1 / fu1]),
        "ICC(C,1)": (f3, n - 1, df_res, scipy_f.sf(f3, n - 1, df_res), [(fl3 - 1) / (fl3 + k0f - 1), (fu3 - 1) / (fu3 + k0f - 1)]),
        "ICC(C,k)": (f3, n - 1, df_res, scipy_f.sf(f3, n - 1, df_res), [1 - 1 / fl3, 1 - 1 / fu3]),
        "ICC(A,1)": (f3, n - 1, df_res, scipy_f.sf(f3, n - 1, df_res), [low, high]),
        "ICC(A,k)": (f3, n - 1, df_res, scipy_f.sf(f3, n - 1, df_res), sb),
    }
    return out


def test_sparse_steps_by_hand_grand_mean_ipsation():
    items, raters, scores = zip(*SPARSE, strict=True)
    result = icc(items, raters, scores)
    expected = by_hand(SPARSE)
    assert (result.method, result.ipsation, result.n_items, result.n_raters, result.n_ratings) == (
        "incomplete", "grand-mean", 4, 3, 9)
    # G = 31/9; k_i = 2, 3, 2, 2: k0 = (9 - 21/9)/3 = 20/9; rater means 2, 13/3, 4
    assert expected["G"] == Fraction(31, 9) and expected["k0"] == Fraction(20, 9)
    assert result.k0 == pytest.approx(20 / 9, abs=1e-12)
    # y = x + G - r_j: item means of y are 16/9, 4, 43/9, 53/18
    assert expected["y_item_means"] == [Fraction(16, 9), 4, Fraction(43, 9), Fraction(53, 18)]
    # SS_r = sum n_j (r_j^2 - G^2) = 3 (13^2 + 8^2 + 5^2)/81 = 86/9, from the uncorrected rater means
    assert expected["ss_raters"] == Fraction(86, 9)
    assert result.ipsation_rounds == expected["rounds"] == 1
    for key in ("ss_between_items", "ss_within_items", "ss_items", "ss_residual", "ss_raters",
                "df_within_items", "df_residual"):
        assert result.anova[key] == pytest.approx(float(expected[key]), abs=1e-12), key
    assert result.anova["df_residual"] == pytest.approx(3 * (9 / 4 - 1))  # (n - 1)(kbar - 1)
    for form in FORMS:
        F, df1, df2, p, ci = expected["stats"][form]
        mine = result[form]
        np.testing.assert_allclose([mine.value, mine.F, mine.df1, mine.df2, mine.p, *mine.ci95],
                                   [float(expected[form]), F, df1, df2, p, *ci], rtol=0, atol=1e-12, err_msg=form)


def test_sparse_steps_by_hand_rater_sub_means():
    items, raters, scores = zip(*SPARSE, strict=True)
    result = icc(items, raters, scores, ipsation="sub-means")
    expected = by_hand(SPARSE, sub_means=True)
    assert result.ipsation == "sub-means" and result.ipsation_rounds == expected["rounds"] > 1
    for key in ("ss_items", "ss_residual", "ss_raters"):
        assert result.anova[key] == pytest.approx(float(expected[key]), abs=1e-12), key
    for form in FORMS:
        F, df1, df2, p, ci = expected["stats"][form]
        mine = result[form]
        np.testing.assert_allclose([mine.value, mine.F, mine.p, *mine.ci95], [float(expected[form]), F, p, *ci],
                                   rtol=0, atol=1e-12, err_msg=form)
    grand = icc(items, raters, scores)
    assert abs(result["ICC(A,1)"].value - grand["ICC(A,1)"].value) > 0.01  # the variant really differs


def test_grand_mean_ipsation_is_one_pass_and_leaves_every_rater_mean_at_g():
    items, raters, scores = zip(*SPARSE, strict=True)
    item_codes, rater_codes = pd.factorize(np.asarray(items))[0], pd.factorize(np.asarray(raters))[0]
    x = np.asarray(scores, float)
    y, rounds, centre = ipsate(item_codes, rater_codes, x, 4, 3)
    assert rounds == 1 and np.allclose(centre, 31 / 9)
    np.testing.assert_allclose(np.bincount(rater_codes, weights=y) / np.bincount(rater_codes), 31 / 9, atol=1e-12)
    np.testing.assert_allclose(y - x, (31 / 9 - np.array([2, 13 / 3, 4]))[rater_codes], atol=1e-12)


def test_sub_means_ipsation_stops_before_the_correction_that_fails_the_eta_test():
    items, raters, scores = zip(*SPARSE, strict=True)
    item_codes, rater_codes = pd.factorize(np.asarray(items))[0], pd.factorize(np.asarray(raters))[0]
    x = np.asarray(scores, float)
    y, rounds, centre = ipsate(item_codes, rater_codes, x, 4, 3, ipsation="sub-means")
    n_j = np.bincount(rater_codes)
    sub = np.bincount(rater_codes, weights=(np.bincount(item_codes, weights=y) / np.bincount(item_codes))[item_codes]) / n_j
    d = sub - np.bincount(rater_codes, weights=y) / n_j
    eta = np.sum(n_j * d**2) / np.sum((x - x.mean()) ** 2)
    assert 0 < eta <= 1e-6  # the next correction would fail the test, so it was not applied
    _, one_less, _ = ipsate(item_codes, rater_codes, x, 4, 3, ipsation="sub-means", tolerance=eta * 1.0001)
    assert one_less == rounds  # a tolerance just above the last failing eta changes nothing


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("ipsation", ["grand-mean", "sub-means"])
def test_sparse_method_on_complete_data_reduces_to_pingouin(case, ipsation):
    data = complete_table(**case)
    general = icc(data["item"], data["rater"], data["score"], method="incomplete", ipsation=ipsation)
    theirs = pg.intraclass_corr(data, "item", "rater", "score").set_index("Type")
    for form in FORMS:
        row, mine = theirs.loc[form], general[form]
        np.testing.assert_allclose([mine.value, mine.F, mine.df1, mine.df2, mine.p, *mine.ci95],
                                   [row["ICC"], row["F"], row["df1"], row["df2"], row["pval"], *row["CI95"]],
                                   rtol=0, atol=1e-9, err_msg=form)


# Outputs of irrNA's iccNA (R 4.2.2; irrNA's R/iccNA.R sourced, see benchmarks/irrna_crosscheck.py)
# on small literal data sets: per form in irrNA's order ICC(1), ICC(k), ICC(A,1), ICC(A,k), ICC(C,1),
# ICC(C,k) the ICC, p, lower and upper bound, then k_0; "grand" = oneG TRUE (default), "sub" = FALSE.
INF = float("inf")
IRRNA = {
    "likert": {
        "rows": [[0, 2, 2], [0, 4, 5], [1, 0, 4], [1, 1, 2], [1, 2, 4], [1, 3, 3], [2, 1, 2], [2, 2, 1], [3, 0, 1], [3, 1, 3], [3, 4, 3], [4, 2, 3], [4, 4, 2], [5, 0, 3], [5, 4, 2], [6, 0, 1], [6, 2, 1], [6, 3, 3], [6, 4, 3], [7, 2, 5], [7, 3, 3], [7, 4, 4], [8, 1, 4], [8, 2, 2], [9, 0, 3], [9, 1, 4], [9, 2, 2], [9, 3, 3]],
        "grand": [0.0802887523968712, 0.331123514042819, -0.262581216169926, 0.564924344816183, 0.194717994628471, 0.331123514042819, -1.3587615824211, 0.782443290638847, 0.0694965751112523, 0.359485874941134, -0.294481113600465, 0.567114499093842, 0.171411256156119, 0.359485874941134, -1.68139575397508, 0.783501737214382, 0.0666719324100201, 0.359485874941134, -0.279672021317174, 0.556763079568807, 0.165179676623875, 0.359485874941134, -1.53387899129014, 0.776749835109252, 2.76984126984127],
        "sub": [0.0802887523968712, 0.331123514042819, -0.262581216169926, 0.564924344816183, 0.194717994628471, 0.331123514042819, -1.3587615824211, 0.782443290638847, 0.131776509449213, 0.267917240521248, -0.259561783494042, 0.617594321106545, 0.295972313892668, 0.267917240521248, -1.3122381354903, 0.816947907664344, 0.124851722649461, 0.267917240521248, -0.242363279267669, 0.603565159255447, 0.283233901375302, 0.267917240521248, -1.17555623421956, 0.808320251405803, 2.76984126984127],
    },
    "continuous": {
        "rows": [[0, 1, 0.04], [0, 2, 0.77], [0, 3, -2.0], [1, 0, -2.25], [1, 2, -3.54], [2, 1, 2.49], [2, 3, 0.05], [3, 0, 0.85], [3, 1, 0.96], [3, 2, -2.22], [4, 0, -1.45], [4, 1, -2.33], [4, 3, -3.66], [5, 0, -0.19], [5, 1, -0.23], [6, 1, 4.3], [6, 3, 0.01], [7, 0, 0.99], [7, 1, 2.7], [7, 3, -1.29]],
        "grand": [0.365756522681399, 0.0842612868539605, -0.150550795377755, 0.806406289850613, 0.589063434626337, 0.0842612868539605, -0.482048740043893, 0.911926368872712, 0.412615613934863, 0.0273678269040725, 0.0163499487823881, 0.807327067231211, 0.635850057213888, 0.0273678269040725, 0.0155676050810784, 0.913140477326697, 0.524473176508167, 0.0273678269040725, -0.011301457435524, 0.870528353018728, 0.732732575190534, 0.0273678269040725, -0.0285719380880725, 0.943544908063364, 2.48571428571429],
        "sub": [0.365756522681399, 0.0842612868539605, -0.150550795377755, 0.806406289850613, 0.589063434626337, 0.0842612868539605, -0.482048740043893, 0.911926368872712, 0.725131452033108, 0.000371330816746562, 0.34373409440488, 0.930232973608686, 0.867682328464369, 0.000371330816746562, 0.557900363826714, 0.970846218471382, 0.807012686326193, 0.000371330816746562, 0.440971917902368, 0.955154992173079, 0.912238214189727, 0.000371330816746562, 0.662250982568132, 0.98146201434771, 2.48571428571429],
    },
    "items_only": {
        "rows": [[0, 1, 1.0], [0, 2, 1.0], [1, 0, 2.0], [1, 2, 2.0], [1, 3, 2.0], [2, 0, 3.0], [2, 1, 3.0], [2, 3, 3.0], [3, 1, 4.0], [3, 2, 4.0], [4, 0, 1.0], [4, 2, 1.0], [4, 3, 1.0], [5, 0, 2.0], [5, 1, 2.0], [5, 3, 2.0]],
        "grand": [1, 0, 1, 1, 1, 0, 1, 1, 0.913914455874391, 0, 0.700538020718144, 0.986224730066149, 0.965675057208238, 0, 1, 1, 0.938142611015395, 1.20040482695094e-05, 0.745785983559638, 0.99049698625997, 0.975722543352601, 1.20040482695094e-05, 0.886030632428323, 0.996392612271309, 2.65],
        "sub": [1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 2.65],
    },
    "raters_only": {
        "rows": [[0, 1, 1.0], [0, 2, 2.0], [1, 0, 0.0], [1, 1, 1.0], [1, 2, 2.0], [2, 0, 0.0], [2, 1, 1.0], [3, 0, 0.0], [3, 2, 2.0], [4, 1, 1.0], [4, 2, 2.0]],
        "grand": [-0.393139841688654, 0.813107268917351, -0.754534192471871, 0.537389904756275, -1.6021505376344, 0.813107268917351, -15.2040107717693, 0.717074858599464, 0, 1, 0, 0, 0, 1, 0, 0, -0.846153846153846, 1, -0.846153846153846, -0.846153846153846, -INF, 1, -INF, -INF, 2.18181818181818],
        "sub": [-0.393139841688654, 0.813107268917351, -0.754534192471871, 0.537389904756275, -1.6021505376344, 0.813107268917351, -15.2040107717693, 0.717074858599464, -1.75747717604669e-07, 0.820925525359146, -2.79296363981245e-07, 1.32270185344675e-06, -3.83449645326115e-07, 0.820925525359146, -6.09374086548912e-07, 3.35507236865869e-06, -0.405297826164655, 0.820925525359146, -0.774011997126787, 0.532684444920361, -1.69724832300127, 0.820925525359146, -19.8074383279096, 0.713221733935096, 2.18181818181818],
    },
}
IRRNA_FORMS = ("ICC(1,1)", "ICC(1,k)", "ICC(A,1)", "ICC(A,k)", "ICC(C,1)", "ICC(C,k)")


def irrna_cases():
    for name, ref in IRRNA.items():
        for key, ipsation in (("grand", "grand-mean"), ("sub", "sub-means")):
            if name == "raters_only" and key == "sub":
                continue  # ratios of ~1e-7 rounding residues: agrees to 4e-9, not 1e-9
            yield pytest.param(ref["rows"], ref[key], ipsation, id=f"{name}-{key}")


@pytest.mark.parametrize(("rows", "expected", "ipsation"), list(irrna_cases()))
def test_equals_irrna_iccna_on_every_value_p_and_bound(rows, expected, ipsation):
    items, raters, scores = zip(*rows, strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ICCWarning)
        own = icc(items, raters, scores, ipsation=ipsation, ak_interval="irrna")
        default = icc(items, raters, scores, ipsation=ipsation)
    assert own.k0 == pytest.approx(expected[24], abs=1e-9)
    for index, form in enumerate(IRRNA_FORMS):
        value, p, low, high = expected[4 * index: 4 * index + 4]
        for result in (own, default):
            mine = result[form]
            if form == "ICC(A,k)" and result is default:
                low, high = (None, None)  # Spearman-Brown bounds, checked below
            for got, want in ((mine.value, value), (mine.p, p), (mine.ci95[0], low), (mine.ci95[1], high)):
                if want is not None:
                    assert got == pytest.approx(want, abs=1e-9, rel=1e-12) or got == want, form
    k0 = own.k0
    for got, bound in zip(default["ICC(A,k)"].ci95, own["ICC(A,1)"].ci95, strict=True):
        if np.isfinite(bound) and (1 + (k0 - 1) * bound) != 0 and not own.warnings:
            assert got == pytest.approx(k0 * bound / (1 + (k0 - 1) * bound), abs=1e-12)


@pytest.mark.parametrize(("name", "message"), [
    ("items_only", "no variance within items"),
    ("raters_only", "variance only between raters"),
])
def test_degenerate_data_get_defined_values_and_a_warning(name, message):
    items, raters, scores = zip(*IRRNA[name]["rows"], strict=True)
    with pytest.warns(ICCWarning, match=message):
        result = icc(items, raters, scores)
    assert any(message in note for note in result.warnings)
    for form in FORMS:
        f = result[form]
        assert not np.isnan([f.value, f.F, f.p, *f.ci95]).any(), form


def test_sparse_design_keeps_every_rating_unlike_listwise_deletion():
    data = complete_table(40, 6, seed=11, rater_sd=1.0)
    sparse = data[np.random.default_rng(0).random(len(data)) > 0.35]
    result = icc(sparse["item"], sparse["rater"], sparse["score"])
    assert result.n_ratings == len(sparse) and result.method == "incomplete" and result.k0 < 6
    full = icc(data["item"], data["rater"], data["score"])
    # removing a third of the ratings at random leaves the single-rater ICCs close to the full data's
    for form in ("ICC(1,1)", "ICC(A,1)", "ICC(C,1)"):
        assert abs(result[form].value - full[form].value) < 0.1, form


def test_a_rater_with_one_rating_is_named_in_a_warning():
    rows = [*SPARSE, ("D", "lonely", 4)]
    items, raters, scores = zip(*rows, strict=True)
    with pytest.warns(ICCWarning, match="rated only one item: 'lonely'"):
        result = icc(items, raters, scores)
    assert np.isfinite(result["ICC(A,1)"].value)


@pytest.mark.parametrize(("rows", "message"), [
    ([("A", "r1", 1), ("A", "r2", 2)], "at least 2 items"),
    ([("A", "r1", 1), ("B", "r1", 2)], "at least 2 raters"),
    ([("A", "r1", 1), ("A", "r1", 2), ("B", "r2", 2)], "more than once"),
    ([("A", "r1", 1), ("B", "r2", float("nan")), ("B", "r1", 1)], "finite"),
])
def test_bad_input_is_named(rows, message):
    items, raters, scores = zip(*rows, strict=True)
    with pytest.raises(ICCInputError, match=message):
        icc(items, raters, scores)


def test_command_prints_the_documented_json_shape(tmp_path):
    data = complete_table(10, 3, seed=9)
    path = tmp_path / "ratings.csv"
    data.rename(columns={"item": "unit", "rater": "worker", "score": "value"}).to_csv(path, index=False)
    out = subprocess.run([sys.executable, "manage.py", "icc", str(path), "--item", "unit", "--rater", "worker",
                          "--score", "value", "--json"], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout)
    assert set(result) == {"n_items", "n_raters", "n_ratings", "k0", "method", "ipsation", "warnings", "anova", "icc"}
    assert (result["n_items"], result["n_raters"], result["n_ratings"], result["method"]) == (10, 3, 30, "complete")
    assert set(result["icc"]) == set(FORMS)
    assert set(result["icc"]["ICC(A,k)"]) == {"value", "F", "df1", "df2", "p", "ci95"}
    expected = icc(data["item"], data["rater"], data["score"])["ICC(A,k)"].value
    assert result["icc"]["ICC(A,k)"]["value"] == expected  # full precision survives the JSON


@pytest.mark.parametrize(("content", "args", "message"), [
    ("unit,worker,value\na,x,1\nb,y,2\n", ["--score", "missing"], "--score: no column 'missing'"),
    ("unit,worker,value\na,x,1\nb,y,high\n", [], "line 3, column 'value': 'high' is not a number"),
    ("unit,worker,value\na,x,1\na,y,2\n", [], "at least 2 items"),
    ("unit,worker,value\na,x,1\nb,x,2\nb,z,\n", [], "rater 'z' has no ratings"),
])
def test_command_bad_input_exits_2_with_the_problem(tmp_path, content, args, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    base = ["--item", "unit", "--rater", "worker", "--score", "value"]
    out = subprocess.run([sys.executable, "manage.py", "icc", str(path), *base, *args], capture_output=True, text=True)
    assert out.returncode == 2
    assert message in out.stderr and "Traceback" not in out.stderr


def test_command_sparse_options_and_degenerate_data_give_strict_json_and_warnings(tmp_path):
    path = tmp_path / "raters_only.csv"
    pd.DataFrame(IRRNA["raters_only"]["rows"], columns=["unit", "worker", "value"]).to_csv(path, index=False)
    base = [sys.executable, "manage.py", "icc", str(path), "--item", "unit", "--rater", "worker", "--score", "value"]
    out = subprocess.run([*base, "--json"], capture_output=True, text=True, check=True)
    result = json.loads(out.stdout, parse_constant=lambda name: pytest.fail(f"non-JSON constant {name}"))
    assert result["ipsation"] == "grand-mean" and result["icc"]["ICC(C,k)"]["value"] is None  # irrNA: -Inf
    assert result["icc"]["ICC(C,1)"]["value"] == pytest.approx(-0.846153846153846)
    assert any("variance only between raters" in note for note in result["warnings"])
    text = subprocess.run([*base, "--ipsation", "sub-means"], capture_output=True, text=True, check=True).stdout
    assert "incomplete design, sub-means ipsation" in text and "warning: 3 rater(s) gave every item the same score" in text
