"""Raw agreement beside every chance-corrected coefficient (studies.analysis.labels.pairwise_agreement):
the labels report's α and Fleiss' κ, the multi-label per-label figures and ACUTE/pairwise α. Checked
against Fleiss' P̄ computed from statsmodels' own rating table, and against counts by hand."""
import itertools

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.inter_rater import aggregate_raters

from studies.analysis import labels as L
from studies.analysis import pairwise as pw
from tests.analysis.test_labels import LABELS, simulated


def pairs_by_hand(frame, column):
    agree = total = 0
    for _, part in frame.groupby("unit"):
        for x, y in itertools.combinations(part[column].tolist(), 2):
            total += 1
            agree += x == y
    return agree / total, total


@pytest.mark.parametrize("seed", [0, 1])
def test_agreement_raw_beside_alpha_and_kappa_is_the_share_of_agreeing_pairs(seed):
    frame = simulated(seed)
    result = L.categorical_agreement(frame, LABELS)
    share, pairs = pairs_by_hand(frame, "label")
    assert result["raw_agreement"] == pytest.approx(share, abs=1e-12) and result["pairs"] == pairs


def test_agreement_raw_equals_fleiss_p_bar_where_every_unit_has_m_answers():
    frame = simulated(3, missing=0.0)  # 5 answers on every unit: pooled pairs = the mean of Fleiss' P_i
    table, _ = aggregate_raters(frame.pivot(index="unit", columns="rater", values="label").to_numpy())
    m = table.sum(axis=1)[0]
    p_bar = (((table ** 2).sum(axis=1) - m) / (m * (m - 1))).mean()
    assert L.categorical_agreement(frame, LABELS)["raw_agreement"] == pytest.approx(p_bar, abs=1e-12)


def test_agreement_raw_high_where_alpha_is_near_zero_on_a_prevalent_label():
    rng = np.random.default_rng(1)
    rows = [{"unit": u, "rater": r, "label": "safe" if rng.random() < 0.97 else "unsafe"}
            for u in range(60) for r in range(3)]
    result = L.categorical_agreement(pd.DataFrame(rows), LABELS)
    assert result["raw_agreement"] > 0.9 and abs(result["alpha"]) < 0.2


def test_agreement_raw_per_label_of_a_multilabel_criterion():
    frame = pd.DataFrame({"unit": [1, 1, 1, 2, 2], "rater": [1, 2, 3, 1, 2],
                          "labels": [["a"], ["a", "b"], [], ["b"], ["b"]]})
    rows = {r["label"]: r for r in L.multilabel_agreement(frame, ["a", "b"])}
    # a: unit 1 present/present/absent -> 1 of 3 pairs; unit 2 absent/absent -> 1 of 1
    assert rows["a"]["raw_agreement"] == pytest.approx(2 / 4) and rows["a"]["pairs"] == 4
    assert rows["b"]["raw_agreement"] == pytest.approx(2 / 4)


def test_agreement_raw_beside_acute_alpha_counts_pairs_by_chosen_system():
    same = pd.DataFrame({"criterion": "c", "item": [1, 1, 1, 2, 2], "rater": [1, 2, 3, 1, 2],
                         "left_system": ["a", "b", "a", "a", "c"], "right_system": ["b", "a", "b", "c", "a"],
                         "choice": ["left", "right", "right", "left", "left"]})
    result = pw.agreement(same)
    # item 1: a, a, b -> 1 of 3 pairs agree; item 2: a, c -> 0 of 1
    assert result["raw_agreement"] == pytest.approx(1 / 4) and result["pairs"] == 4
    lone = pw.agreement(same.drop_duplicates("item"))
    assert lone["raw_agreement"] is None and lone["pairs"] == 0
