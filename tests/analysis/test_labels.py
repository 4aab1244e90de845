"""Label statistics (studies.analysis.labels) against trusted libraries: Wilson intervals against
statsmodels, nominal alpha against krippendorff, Fleiss' kappa against statsmodels, chi-square and
Fisher against SciPy, point-biserial against SciPy and AUC against scikit-learn."""
import math

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss
from statsmodels.stats.proportion import proportion_confint

from studies.analysis import labels as L

LABELS = ["safe", "unsafe", "unsure"]


def simulated(seed=0, units=40, raters=5, missing=0.2):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, units)
    rows = []
    for u in range(units):
        for r in range(raters):
            if rng.random() < missing:
                continue
            code = truth[u] if rng.random() < 0.7 else rng.integers(0, 3)
            rows.append({"unit": u, "rater": r, "label": LABELS[code], "system": f"s{u % 3}"})
    return pd.DataFrame(rows)


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (10, 10), (17, 40), (1, 1)])
def test_categorical_wilson_interval_equals_statsmodels(k, n):
    assert L.wilson_interval(k, n) == pytest.approx(proportion_confint(k, n, alpha=0.05, method="wilson"), abs=1e-9)


def test_categorical_label_shares_count_answers_per_system():
    frame = simulated()
    rows = L.label_shares(frame, LABELS)
    assert [r["system"] for r in rows] == ["s0", "s1", "s2"]
    for row in rows:
        group = frame[frame["system"] == row["system"]]
        assert row["n"] == len(group)
        assert [e["count"] for e in row["labels"]] == [int((group["label"] == x).sum()) for x in LABELS]
        assert sum(e["share"] for e in row["labels"]) == pytest.approx(1.0)
        for e in row["labels"]:
            assert e["ci95"] == pytest.approx(list(proportion_confint(e["count"], row["n"], method="wilson")), abs=1e-9)


def test_multilabel_label_shares_count_answers_not_labels():
    frame = pd.DataFrame({"system": ["a", "a", "a", "b"], "answer": [1, 1, 2, 3],
                          "label": ["repetition", "off-topic", "repetition", "off-topic"]})
    a = L.label_shares(frame, ["repetition", "off-topic"])[0]
    assert a["n"] == 2 and [e["share"] for e in a["labels"]] == [1.0, 0.5]


def matrix(frame, values):
    table = frame.assign(v=values).pivot_table(index="rater", columns="unit", values="v", aggfunc="last")
    return table.to_numpy(dtype=float)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_categorical_nominal_alpha_equals_krippendorff_and_kappa_equals_statsmodels(seed):
    frame = simulated(seed)
    result = L.categorical_agreement(frame, LABELS)
    codes = frame["label"].map({x: i for i, x in enumerate(LABELS)})
    expected = krippendorff.alpha(reliability_data=matrix(frame, codes), level_of_measurement="nominal")
    assert result["alpha"] == pytest.approx(expected, abs=1e-9)
    sizes = frame.groupby("unit").size()
    m = int(sizes[sizes >= 2].mode().max())
    kept = frame[frame["unit"].isin(sizes[sizes == m].index)]
    table = pd.crosstab(kept["unit"], kept["label"]).reindex(columns=LABELS, fill_value=0).to_numpy()
    assert result["kappa"] == pytest.approx(sm_fleiss(table, method="fleiss"), abs=1e-9)
    assert result["kappa_units"] == table.shape[0]


def test_categorical_perfect_agreement_is_one_and_no_pairs_is_nan():
    frame = pd.DataFrame({"unit": [1, 1, 2, 2, 3, 3], "rater": [1, 2] * 3,
                          "label": ["safe", "safe", "unsafe", "unsafe", "unsure", "unsure"]})
    result = L.categorical_agreement(frame, LABELS)
    assert result["alpha"] == pytest.approx(1.0) and result["kappa"] == pytest.approx(1.0)
    lone = L.categorical_agreement(frame.drop_duplicates("unit"), LABELS)
    assert math.isnan(lone["alpha"]) and math.isnan(lone["kappa"])


def test_multilabel_one_binary_agreement_per_label_equals_krippendorff():
    rng = np.random.default_rng(4)
    names = ["repetition", "contradiction", "off-topic"]
    rows = [{"unit": u, "rater": r, "labels": [x for x in names if rng.random() < 0.4]}
            for u in range(30) for r in range(4)]
    frame = pd.DataFrame(rows)
    result = L.multilabel_agreement(frame, names)
    assert [r["label"] for r in result] == names
    for entry in result:
        present = frame["labels"].map(lambda chosen, x=entry["label"]: x in chosen).astype(float)
        expected = krippendorff.alpha(reliability_data=matrix(frame, present), level_of_measurement="nominal")
        assert entry["alpha"] == pytest.approx(expected, abs=1e-9)
        table = np.column_stack([4 - frame.assign(p=present).groupby("unit")["p"].sum(),
                                 frame.assign(p=present).groupby("unit")["p"].sum()])
        assert entry["kappa"] == pytest.approx(sm_fleiss(table), abs=1e-9)


def test_categorical_system_association_equals_scipy_chi2_and_fisher():
    table = np.array([[30, 10, 5], [12, 25, 8], [0, 0, 0]])
    result = L.system_association(table)
    chi2, p, df, _ = stats.chi2_contingency(table[:2], correction=False)
    assert (result["chi2"], result["p"], result["df"]) == (pytest.approx(chi2, abs=1e-9), pytest.approx(p, abs=1e-12), df)
    assert result["cramers_v"] == pytest.approx(math.sqrt(chi2 / (table.sum() * 1)), abs=1e-12)
    assert result["fisher_p"] is None
    two = L.system_association(np.array([[8, 2], [1, 5]]))
    assert two["fisher_p"] == pytest.approx(stats.fisher_exact([[8, 2], [1, 5]])[1], abs=1e-12)
    assert "expected counts" in two["note"]
    assert math.isnan(L.system_association(np.array([[3, 0], [4, 0]]))["chi2"])


@pytest.mark.parametrize("seed", [0, 1])
def test_categorical_label_against_metric_point_biserial_scipy_and_auc_sklearn(seed):
    rng = np.random.default_rng(seed)
    y = rng.random(200) < 0.3
    x = np.round(rng.normal(size=200) + 0.8 * y, 1)  # rounded: ties, which AUC counts as ½
    result = L.label_metric_association(y, x)
    r, p = stats.pointbiserialr(y, x)
    assert result["r_pb"] == pytest.approx(r, abs=1e-9) and result["p"] == pytest.approx(p, abs=1e-9)
    assert result["auc"] == pytest.approx(roc_auc_score(y, x), abs=1e-9)
    assert (result["n"], result["positives"]) == (200, int(y.sum()))
    assert math.isnan(L.label_metric_association([True, True], [0.1, 0.2])["auc"])
