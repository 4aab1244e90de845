"""ICC: every column equals pingouin on complete data; the incomplete method reduces to it; the
sparse method matches an independent step-by-step computation of Ebel / Brueckl; bad input is named."""
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pingouin as pg
import pytest

from studies.analysis.icc import FORMS, ICCInputError, icc, ipsate

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


def by_hand(rows):
    """Ebel's and Brueckl's recipes step by step with plain Python, independent of the NumPy code."""
    items = sorted({r[0] for r in rows})
    raters = sorted({r[1] for r in rows})
    N, n, k = len(rows), len(items), len(raters)
    grand = sum(r[2] for r in rows) / N
    k_i = {i: sum(1 for r in rows if r[0] == i) for i in items}
    mean_i = {i: sum(r[2] for r in rows if r[0] == i) / k_i[i] for i in items}
    k0 = (N - sum(v * v for v in k_i.values()) / N) / (n - 1)
    ssb = sum(k_i[i] * (mean_i[i] - grand) ** 2 for i in items)
    sst = sum((r[2] - grand) ** 2 for r in rows)
    msb, msw = ssb / (n - 1), (sst - ssb) / (N - n)
    n_j = {j: sum(1 for r in rows if r[1] == j) for j in raters}
    mean_j = {j: sum(r[2] for r in rows if r[1] == j) / n_j[j] for j in raters}
    msc = sum(n_j[j] * (mean_j[j] - grand) ** 2 for j in raters) / (k - 1)
    y = {(r[0], r[1]): float(r[2]) for r in rows}
    rounds = 0
    while True:  # ipsation until the correction explains <= 1e-6 of the total SS
        g = sum(y.values()) / N
        total = sum((v - g) ** 2 for v in y.values())
        item_mean = {i: sum(v for (ii, _), v in y.items() if ii == i) / k_i[i] for i in items}
        corr = {j: -sum(v - item_mean[i] for (i, jj), v in y.items() if jj == j) / n_j[j] for j in raters}
        if sum(n_j[j] * corr[j] ** 2 for j in raters) / total <= 1e-6:
            break
        y = {(i, j): v + corr[j] for (i, j), v in y.items()}
        rounds += 1
    g = sum(y.values()) / N
    ym_i = {i: sum(v for (ii, _), v in y.items() if ii == i) / k_i[i] for i in items}
    ssr = sum(k_i[i] * (ym_i[i] - g) ** 2 for i in items)
    sse = sum((v - g) ** 2 for v in y.values()) - ssr
    msr, mse = ssr / (n - 1), sse / ((n - 1) * (N / n - 1))
    return {
        "k0": k0,
        "ICC(1,1)": (msb - msw) / (msb + (k0 - 1) * msw), "ICC(1,k)": (msb - msw) / msb,
        "ICC(C,1)": (msr - mse) / (msr + (k0 - 1) * mse), "ICC(C,k)": (msr - mse) / msr,
        "ICC(A,1)": (msr - mse) / (msr + (k0 - 1) * mse + k0 * (msc - mse) / n),
        "ICC(A,k)": (msr - mse) / (msr + (msc - mse) / n),
        "F1": msb / msw, "df_e": (n - 1) * (N / n - 1), "rounds": rounds,
    }


def test_sparse_design_matches_the_step_by_step_computation():
    items, raters, scores = zip(*SPARSE, strict=True)
    result = icc(items, raters, scores)
    expected = by_hand(SPARSE)
    assert (result.method, result.n_items, result.n_raters, result.n_ratings) == ("incomplete", 4, 3, 9)
    # k_i = 2, 3, 2, 2: k0 = (9 - 21/9)/3 = 20/9
    assert result.k0 == pytest.approx(20 / 9, abs=1e-12) == pytest.approx(expected["k0"])
    for form in FORMS:
        assert result[form].value == pytest.approx(expected[form], abs=1e-9), form
    assert pytest.approx(expected["F1"], abs=1e-9) == result["ICC(1,1)"].F
    assert (result["ICC(1,1)"].df1, result["ICC(1,1)"].df2) == (3, 5)
    assert result["ICC(C,1)"].df2 == pytest.approx(expected["df_e"]) == pytest.approx(3 * (9 / 4 - 1))
    assert result.ipsation_rounds == expected["rounds"] > 1
    for form in FORMS:
        low, high = result[form].ci95
        assert low < result[form].value < high, form


def test_sparse_design_keeps_every_rating_unlike_listwise_deletion():
    data = complete_table(40, 6, seed=11, rater_sd=1.0)
    rng = np.random.default_rng(0)
    sparse = data[rng.random(len(data)) > 0.35]
    result = icc(sparse["item"], sparse["rater"], sparse["score"])
    assert result.n_ratings == len(sparse) and result.method == "incomplete"
    full = icc(data["item"], data["rater"], data["score"])
    # removing a third of the ratings at random should leave the single-rater ICCs close to the full data's
    for form in ("ICC(1,1)", "ICC(A,1)", "ICC(C,1)"):
        assert abs(result[form].value - full[form].value) < 0.1, form
    assert result.k0 < 6


def test_ipsation_leaves_no_rater_bias_relative_to_the_items_rated():
    items, raters, scores = zip(*SPARSE, strict=True)
    item_codes, rater_codes = pd.factorize(np.asarray(items))[0], pd.factorize(np.asarray(raters))[0]
    corrected, rounds = ipsate(item_codes, rater_codes, np.asarray(scores, float), 4, 3)
    residual = corrected - (np.bincount(item_codes, weights=corrected) / np.bincount(item_codes))[item_codes]
    bias = np.bincount(rater_codes, weights=residual) / np.bincount(rater_codes)
    assert rounds > 1  # one pass is not enough on an incomplete design
    assert np.abs(bias).max() < 1e-2
    assert corrected.mean() == pytest.approx(np.mean(scores))  # corrections keep the grand mean


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
    assert set(result) == {"n_items", "n_raters", "n_ratings", "k0", "method", "icc"}
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
