"""Which system is better (studies.analysis.system_scores), checked against SciPy, statsmodels and pingouin:
t intervals, paired t and Wilcoxon on per-item means, Welch where systems never share a screen, Wilson
intervals for choices, Holm over the pairs."""
import numpy as np
import pandas as pd
import pingouin as pg
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from studies.analysis import pairwise as pw
from studies.analysis import system_scores as ss

TRUE = {"alpha": 4.0, "beta": 3.4, "gamma": 3.3}


def likert(seed=0, items=12, raters=5, systems=TRUE, shared=True):
    """A single-condition Likert study: each item (screen) shows one response per system (``shared``) or
    one response of one system (a dialogue per screen); each rater rates every response on it."""
    rng = np.random.default_rng(seed)
    rows = []
    for item in range(items):
        shown = list(systems) if shared else [list(systems)[item % len(systems)]]
        context = rng.normal(0, 0.5)  # an item's context makes all its responses better or worse: pairing helps
        for system in shown:
            unit = f"{item}-{system}"
            for rater in range(raters):
                value = float(np.clip(np.round(systems[system] + context + rng.normal(0, 0.8)), 1, 5))
                rows.append({"study": "s", "criterion": "overall", "system": system, "unit": unit, "item": item,
                             "rater": rater, "score": value})
    return pd.DataFrame(rows)


def test_system_scores_are_unit_means_with_a_t_interval_equal_to_scipys():
    frame = likert()
    (block,) = ss.scale_scores(frame)
    for row in block["systems"]:
        units = frame[frame.system == row["system"]].groupby("unit")["score"].mean().to_numpy()
        low, high = stats.t.interval(0.95, len(units) - 1, loc=units.mean(), scale=stats.sem(units))
        assert row["n"] == len(units) == 12
        assert row["score"] == pytest.approx(units.mean(), abs=1e-12)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high), abs=1e-9)
        assert row["n_raters"] == 5 and row["n_ratings"] == 60
    assert [r["system"] for r in block["systems"]][0] == "alpha"
    assert (block["n_raters"], block["n_items"], block["n_units"], block["n_ratings"]) == (5, 12, 36, 180)


def test_system_scores_pairs_on_shared_items_with_a_paired_t_equal_to_pingouins():
    frame = likert(seed=3)
    (block,) = ss.scale_scores(frame)
    assert block["paired"] and len(block["pairs"]) == 3
    wide = frame.groupby(["item", "system"])["score"].mean().unstack()
    for pair in block["pairs"]:
        a, b = wide[pair["system_a"]], wide[pair["system_b"]]
        ref = pg.ttest(a, b, paired=True)
        assert pair["test"].startswith("paired t") and pair["n"] == 12
        assert pair["p"] == pytest.approx(float(ref["p_val"].iloc[0]), abs=1e-9)
        assert pair["statistic"] == pytest.approx(float(ref["T"].iloc[0]), abs=1e-9)
        low, high = ref["CI95"].iloc[0]
        assert (pair["ci_low"], pair["ci_high"]) == pytest.approx((low, high), abs=1e-2)  # pingouin rounds to 2 places
        d = (a - b).to_numpy()
        exact = stats.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
        assert (pair["ci_low"], pair["ci_high"]) == pytest.approx(exact, abs=1e-9)
        assert pair["diff"] == pytest.approx(d.mean(), abs=1e-12)
        assert pair["wilcoxon_p"] == pytest.approx(stats.wilcoxon(d).pvalue, abs=1e-9)


def test_system_scores_holm_adjusts_over_the_pairs_of_one_criterion_as_statsmodels():
    (block,) = ss.scale_scores(likert(seed=5, items=20))
    raw = [p["p"] for p in block["pairs"]]
    expected = multipletests(raw, method="holm")[1]
    assert [p["p_holm"] for p in block["pairs"]] == pytest.approx(list(expected), abs=1e-12)
    assert ss.holm([0.01, 0.04, 0.03]) == pytest.approx(list(multipletests([0.01, 0.04, 0.03], method="holm")[1]))
    assert ss.holm([]) == []


def test_system_scores_name_the_better_system_only_when_the_adjusted_p_is_below_5_percent():
    (block,) = ss.scale_scores(likert(seed=1, items=40, systems={"good": 4.5, "bad": 2.0, "also_bad": 2.05}))
    by_pair = {(p["system_a"], p["system_b"]): p for p in block["pairs"]}
    assert by_pair[("bad", "good")]["better"] == "good" and by_pair[("also_bad", "good")]["better"] == "good"
    assert by_pair[("also_bad", "bad")]["better"] is None and by_pair[("also_bad", "bad")]["p_holm"] >= 0.05


def test_system_scores_fall_back_to_welch_where_systems_never_share_a_screen():
    frame = likert(seed=2, items=18, shared=False)
    (block,) = ss.scale_scores(frame)
    assert not block["paired"]
    units = frame.groupby(["system", "unit"])["score"].mean()
    for pair in block["pairs"]:
        a, b = units.loc[pair["system_a"]].to_numpy(), units.loc[pair["system_b"]].to_numpy()
        ref = stats.ttest_ind(a, b, equal_var=False)
        assert pair["test"].startswith("Welch") and pair["n"] == len(a) + len(b) == 12
        assert pair["p"] == pytest.approx(ref.pvalue, abs=1e-9)
        assert pair["statistic"] == pytest.approx(ref.statistic, abs=1e-9)
        welch = pg.ttest(a, b, correction=True)
        assert pair["df"] == pytest.approx(float(welch["dof"].iloc[0]), abs=1e-9)
        low, high = ref.confidence_interval(0.95)
        assert (pair["ci_low"], pair["ci_high"]) == pytest.approx((low, high), abs=1e-9)


def test_system_scores_of_one_rated_unit_give_the_score_without_an_interval():
    frame = likert(items=1, raters=3)
    (block,) = ss.scale_scores(frame)
    assert all(r["n"] == 1 and r["ci_low"] is None and r["score"] is not None for r in block["systems"])
    assert all(p["p"] is None and p["better"] is None for p in block["pairs"])  # one paired item: no test


def test_system_scores_with_identical_differences_do_not_divide_by_zero():
    frame = pd.DataFrame({"study": "s", "criterion": "c", "system": ["a", "b"] * 4, "unit": list("ABCDEFGH"),
                          "item": [1, 1, 2, 2, 3, 3, 4, 4], "rater": 1, "score": [3.0, 3.0] * 4})
    (block,) = ss.scale_scores(frame)
    (pair,) = block["pairs"]
    assert pair["diff"] == 0 and pair["p"] == 1.0 and pair["wilcoxon_p"] is None and pair["better"] is None


def test_system_scores_keep_conditions_and_criteria_apart():
    one = likert(seed=1)
    two = likert(seed=2).assign(study="t", criterion="fluency")
    blocks = ss.scale_scores(pd.concat([one, two], ignore_index=True))
    assert [(b["condition"], b["criterion"]) for b in blocks] == [("s", "overall"), ("t", "fluency")]
    assert ss.scale_scores(one.iloc[:0]) == []


def test_system_scores_t_interval_covers_the_true_mean_at_small_n():
    """At n = 5 units a normal (z) interval would cover about 88 %; the t interval holds 95 %."""
    rng = np.random.default_rng(11)
    covered = 0
    for _ in range(2000):
        values = rng.normal(3.0, 1.0, size=5)
        _, low, high = ss.t_interval(values)
        covered += low <= 3.0 <= high
    assert 0.935 <= covered / 2000 <= 0.965


def test_system_scores_for_choices_use_wilson_equal_to_statsmodels():
    from tests.analysis.test_pairwise import simulate

    frame = simulate(seed=9, raters=8, per_rater=30)
    rates = pw.win_rates(frame)
    block = ss.choice_block(rates)
    data = pw.canonical(frame)
    for row in block["systems"]:
        mine = data[(data.system_a == row["system"]) | (data.system_b == row["system"])]
        decisive = mine[mine.outcome != "tie"]
        won = int(((decisive.system_a == row["system"]) & (decisive.outcome == "a")).sum()
                  + ((decisive.system_b == row["system"]) & (decisive.outcome == "b")).sum())
        low, high = proportion_confint(won, len(decisive), alpha=0.05, method="wilson")
        assert (row["n"], row["wins"]) == (len(decisive), won)
        assert row["score"] == pytest.approx(won / len(decisive), abs=1e-12)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high), abs=1e-9)
        assert row["n_judgments"] == len(mine)
    for pair, rate in zip(block["pairs"], rates, strict=True):
        assert pair["p"] == pytest.approx(stats.binomtest(rate["wins_a"], rate["wins_a"] + rate["wins_b"]).pvalue,
                                          abs=1e-12)
        assert pair["p_holm"] == rate["p_holm"] and pair["test"].startswith("exact binomial")
    assert [r["system"] for r in block["systems"]][0] == "alpha"  # the strongest simulated system


def test_system_scores_wilson_matches_statsmodels_at_the_edges():
    for wins, n in [(0, 1), (1, 1), (0, 7), (7, 7), (3, 10), (50, 100)]:
        assert ss.wilson(wins, n) == pytest.approx(proportion_confint(wins, n, alpha=0.05, method="wilson"), abs=1e-12)
    assert ss.wilson(0, 0) == (None, None)


def test_wilcoxon_p_equals_scipy_with_ties_zeros_and_without():
    """The sign-flip enumeration (ties or zeros, n <= 13) and the cases left to SciPy give SciPy's p."""
    from scipy import stats

    from studies.analysis.system_scores import wilcoxon_p

    rng = np.random.default_rng(5)
    cases = [np.array([0.5, -0.5, 1.0, 1.0, 0.0, 2.0]), np.array([1.0, 2.0, 3.0]), np.array([0.0, 0.0, 1.0]),
             rng.normal(0.4, 1, 30).round(1), rng.normal(0.2, 1, 9)]  # ties+zeros, exact, a lone non-zero, big, no ties
    cases += [(rng.normal(rng.normal(0, 0.5), 1, n) * 2).round() / 2 for n in rng.integers(4, 14, size=12)]
    for diff in cases:
        if np.count_nonzero(diff):
            assert wilcoxon_p(diff) == pytest.approx(stats.wilcoxon(diff, zero_method="wilcox").pvalue, abs=1e-12), diff
