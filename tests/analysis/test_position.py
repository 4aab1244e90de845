"""Position effects (studies.analysis.position) against direct pandas and SciPy computations."""
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from studies.analysis.normalise import per_rater_z
from studies.analysis.position import position_effects


def _frame(bias: float, seed: int = 5) -> pd.DataFrame:
    """Twelve raters × 20 screens × 4 responses in a random order; the response shown first gets +bias."""
    rng = np.random.default_rng(seed)
    rows = []
    for rater in range(12):
        leniency = rng.normal(0, 1)
        for _screen in range(20):
            for position in rng.permutation(4) + 1:
                score = 3 + leniency + rng.normal(0, 1) + (bias if position == 1 else 0.0)
                rows.append(("s", "coherence", rater, score, position))
    return pd.DataFrame(rows, columns=["study", "criterion", "rater", "score", "shown_position"])


def test_means_per_position_and_kruskal_wallis_equal_direct_computation():
    frame = _frame(bias=0.8)
    (entry,) = position_effects(frame)
    z = per_rater_z(frame["score"].to_numpy(), (frame["rater"].astype(str) + "\x1fcoherence").to_numpy())
    groups = [z[frame["shown_position"].to_numpy() == p] for p in (1, 2, 3, 4)]
    assert [p["position"] for p in entry["positions"]] == [1, 2, 3, 4]
    assert [p["letter"] for p in entry["positions"]] == ["A", "B", "C", "D"]
    for row, group in zip(entry["positions"], groups, strict=True):
        assert row["n"] == group.size and row["mean_z"] == pytest.approx(group.mean(), abs=1e-12)
        half = stats.t.ppf(0.975, group.size - 1) * group.std(ddof=1) / np.sqrt(group.size)
        assert (row["low"], row["high"]) == (pytest.approx(group.mean() - half, abs=1e-12),
                                             pytest.approx(group.mean() + half, abs=1e-12))
    expected = stats.kruskal(*groups)
    assert entry["H"] == pytest.approx(expected.statistic, abs=1e-9) and entry["p"] == pytest.approx(expected.pvalue, abs=1e-9)
    assert entry["df"] == 3 and entry["p"] < 1e-6  # the planted bias is found
    assert entry["positions"][0]["mean_z"] > 0.3 > max(p["mean_z"] for p in entry["positions"][1:])


def test_one_position_or_no_rating_has_no_test():
    frame = _frame(bias=0.0)
    single = frame[frame["shown_position"] == 2]
    (entry,) = position_effects(single)
    assert entry["H"] is None and "two screen positions" in entry["note"] and len(entry["positions"]) == 1
    assert position_effects(frame.iloc[:0]) == []
    assert position_effects(frame.assign(shown_position=np.nan)) == []
