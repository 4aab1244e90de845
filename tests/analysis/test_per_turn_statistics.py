"""Per-turn behaviour statistics against trusted libraries: Wilson intervals (statsmodels), the test between
systems (scipy), nominal α per behaviour (krippendorff) with raw agreement counted pair by pair, and the
dialogue bootstrap's behaviour on clustered data."""
import itertools
import math

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from studies.analysis.per_turn import (
    behaviour_agreement,
    behaviour_rates,
    cluster_bootstrap_interval,
    has_label,
    turns_frame,
)

LABELS = ["redundant", "ignore", "irrelevant"]


def random_frame(seed: int, n_dialogues: int = 12, turns: int = 4, raters: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(n_dialogues):
        system = "botA" if d % 2 == 0 else "botB"
        for t in range(1, 2 * turns, 2):
            for r in range(raters):
                if rng.random() < 0.15:
                    continue  # a missing answer: α's units have 2 or 3 answers
                chance = 0.2 if system == "botA" else 0.45
                rows.append((d, system, f"r{r}", t, [label for label in LABELS if rng.random() < chance]))
    return pd.DataFrame(rows, columns=["unit", "system", "rater", "turn", "answer"])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_per_turn_rates_wilson_equal_statsmodels_and_tests_equal_scipy(seed):
    frame = random_frame(seed)
    for entry in behaviour_rates(frame, LABELS):
        table = []
        for row in entry["systems"]:
            part = frame[frame["system"] == row["system"]]
            k = int(part["answer"].map(lambda a, label=entry["label"]: label in a).sum())
            assert (row["count"], row["n"]) == (k, len(part))
            assert row["rate"] == pytest.approx(k / len(part), abs=1e-12)
            low, high = proportion_confint(k, len(part), alpha=0.05, method="wilson")
            assert row["ci95"] == pytest.approx([low, high], abs=1e-9)
            table.append([k, len(part) - k])
        chi2, p, df, _ = stats.chi2_contingency(np.array(table), correction=False)
        assert entry["test"]["chi2"] == pytest.approx(chi2, abs=1e-9) and entry["test"]["p"] == pytest.approx(p, abs=1e-9)
        assert entry["test"]["fisher_p"] == pytest.approx(stats.fisher_exact(np.array(table))[1], abs=1e-9)


@pytest.mark.parametrize("seed", [3, 4])
def test_per_turn_alpha_per_behaviour_equals_krippendorff_and_raw_agreement_counts_pairs(seed):
    frame = random_frame(seed)
    result = behaviour_agreement(frame, LABELS)
    units = sorted(set(zip(frame["unit"], frame["turn"], strict=True)))
    raters = sorted(frame["rater"].unique())
    for entry in result["per_label"]:
        matrix = np.full((len(raters), len(units)), np.nan)
        for row in frame.itertuples():
            matrix[raters.index(row.rater), units.index((row.unit, row.turn))] = float(entry["label"] in row.answer)
        expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
        assert entry["alpha"] == pytest.approx(expected, abs=1e-9)
        agree = pairs = 0
        for column in matrix.T:
            given = column[~np.isnan(column)]
            for a, b in itertools.combinations(given, 2):
                pairs += 1
                agree += a == b
        assert entry["pairs"] == pairs and entry["raw_agreement"] == pytest.approx(agree / pairs, abs=1e-12)
    assert result["units"] == int(
        (frame.groupby(["unit", "turn"]).size() >= 2).sum())


def test_per_turn_categorical_alpha_over_labels_equals_krippendorff():
    rng = np.random.default_rng(5)
    labels = ["good", "odd", "bad"]
    rows = [(d, "botA", f"r{r}", t, labels[int(rng.integers(0, 3)) if rng.random() < 0.5 else d % 3])
            for d in range(10) for t in (1, 3) for r in range(3)]
    frame = pd.DataFrame(rows, columns=["unit", "system", "rater", "turn", "answer"])
    result = behaviour_agreement(frame, labels, categorical=True)
    units = sorted(set(zip(frame["unit"], frame["turn"], strict=True)))
    matrix = np.full((3, len(units)), np.nan)
    for row in frame.itertuples():
        matrix[int(row.rater[1]), units.index((row.unit, row.turn))] = labels.index(row.answer)
    assert result["alpha"] == pytest.approx(krippendorff.alpha(reliability_data=matrix,
                                                                level_of_measurement="nominal"), abs=1e-9)
    assert has_label(frame["answer"], "good").sum() == (frame["answer"] == "good").sum()


def test_per_turn_dialogue_bootstrap_is_wider_than_wilson_when_behaviours_cluster_in_dialogues():
    # 20 dialogues of 10 turns: a behaviour in every turn of 6 dialogues and in none of the others.
    k = [10] * 6 + [0] * 14
    n = [10] * 20
    low, high = cluster_bootstrap_interval(k, n, seed=1)
    w_low, w_high = proportion_confint(60, 200, alpha=0.05, method="wilson")
    assert low < 0.3 < high
    assert (high - low) > 1.5 * (w_high - w_low)
    assert cluster_bootstrap_interval(k, n, seed=1) == (low, high)  # seeded: the same interval every time
    assert all(math.isnan(x) for x in cluster_bootstrap_interval([3], [10]))


def test_per_turn_turns_frame_one_row_per_rater_and_turn():
    frame = turns_frame([(7, "botA", "r1", {"1": ["redundant"], "3": []}), (7, "botA", "r2", None)])
    assert frame.to_dict("records") == [
        {"unit": 7, "system": "botA", "rater": "r1", "turn": 1, "answer": ["redundant"]},
        {"unit": 7, "system": "botA", "rater": "r1", "turn": 3, "answer": []}]
