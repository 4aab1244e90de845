"""Pairwise statistics (studies.analysis.pairwise) checked against independent computations: Bradley–Terry
MM against a statsmodels logistic regression and closed forms, Wilson and binomial against formulas,
Krippendorff's alpha against a hand-written coincidence-matrix computation."""
import math
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from studies.analysis import pairwise as pw

THETA = {"alpha": 0.9, "beta": 0.3, "gamma": -0.2, "delta": -1.0}


def simulate(seed=0, raters=20, per_rater=30, tie_rate=0.15, left_bias=0.0, theta=THETA):
    rng = np.random.default_rng(seed)
    systems = list(theta)
    rows = []
    for rater in range(raters):
        for k in range(per_rater):
            i, j = rng.choice(len(systems), 2, replace=False)
            s, t = systems[i], systems[j]
            p_left = 1 / (1 + math.exp(-(theta[s] - theta[t] + left_bias)))
            choice = "tie" if rng.random() < tie_rate else ("left" if rng.random() < p_left else "right")
            rows.append({"criterion": "overall", "item": f"{k % 10}-{min(s, t)}-{max(s, t)}", "rater": rater,
                         "left_system": s, "right_system": t, "choice": choice})
    return pd.DataFrame(rows)


def test_mm_and_logistic_regression_agree_with_ties_as_half_wins():
    frame = simulate()
    mm, logit = pw.bradley_terry_mm(frame), pw.bradley_terry_logit(frame)
    assert set(mm) == set(THETA)
    for system in THETA:
        assert mm[system] == pytest.approx(logit[system], abs=1e-9)
    assert sum(mm.values()) == pytest.approx(0, abs=1e-12)
    assert sorted(mm, key=mm.get, reverse=True) == ["alpha", "beta", "gamma", "delta"]


def test_two_systems_have_the_closed_form_log_odds():
    # a beats b 7 times, loses 2, 2 ties -> W_a = 8, W_b = 3; θa − θb = log(8/3).
    choices = ["left"] * 7 + ["right"] * 2 + ["tie"] * 2
    frame = pd.DataFrame({"criterion": "c", "item": range(11), "rater": 1, "left_system": "a", "right_system": "b",
                          "choice": choices})
    theta = pw.bradley_terry_mm(frame)
    assert theta["a"] - theta["b"] == pytest.approx(math.log(8 / 3), abs=1e-10)


def test_the_mm_fit_solves_the_likelihood_equations():
    """At the MLE each system's expected wins equal its observed wins (Zermelo's equations)."""
    frame = pw.canonical(simulate(seed=3))
    theta = pw.bradley_terry_mm(frame)
    for system in THETA:
        as_a = frame[frame.system_a == system]
        as_b = frame[frame.system_b == system]
        observed = as_a.score_a.sum() + (1 - as_b.score_a).sum()
        expected = sum(1 / (1 + math.exp(theta[r.system_b] - theta[system])) for r in as_a.itertuples()) \
            + sum(1 / (1 + math.exp(theta[r.system_a] - theta[system])) for r in as_b.itertuples())
        assert observed == pytest.approx(expected, abs=1e-8)


def test_a_system_that_never_loses_has_no_finite_strength():
    frame = pd.DataFrame({"criterion": "c", "item": [1, 2, 3], "rater": 1, "left_system": ["a", "b", "c"],
                          "right_system": ["b", "c", "a"], "choice": ["left", "left", "right"]})
    with pytest.raises(pw.BTError, match="never lost: a"):
        pw.bradley_terry_mm(frame)
    report = pw.pairwise_report(frame, resamples=20)  # the report's penalised fit stays finite and says why
    bt = report[0]["bt"]
    assert report[0]["bt_error"] is None and not bt["mle_exists"] and "never lost: a" in bt["note"]
    assert all(s["theta_mle"] is None and math.isfinite(s["theta"]) for s in bt["strengths"])


def test_win_rates_match_the_wilson_formula_and_an_exact_binomial_test():
    frame = simulate(seed=5)
    rows = pw.win_rates(frame)
    assert len(rows) == len(list(combinations(THETA, 2)))
    data = pw.canonical(frame)
    z = stats.norm.ppf(0.975)
    for row in rows:
        pair = data[(data.system_a == row["system_a"]) & (data.system_b == row["system_b"])]
        k, n = int((pair.score_a == 1).sum()), int((pair.score_a != 0.5).sum())
        assert (row["wins_a"], row["wins_a"] + row["wins_b"], row["ties"]) == (k, n, int((pair.score_a == 0.5).sum()))
        p_hat = k / n
        centre = (p_hat + z * z / (2 * n)) / (1 + z * z / n)
        half = z / (1 + z * z / n) * math.sqrt(p_hat * (1 - p_hat) / n + z * z / (4 * n * n))
        assert (row["ci_low"], row["ci_high"]) == (pytest.approx(centre - half, abs=1e-9), pytest.approx(centre + half, abs=1e-9))
        exact = min(1.0, 2 * min(stats.binom.cdf(k, n, 0.5), stats.binom.sf(k - 1, n, 0.5)))
        assert row["p"] == pytest.approx(exact, abs=1e-9)
        assert row["score_a"] == pytest.approx(pair.score_a.mean(), abs=1e-12)
    # Holm: sorted p times (m − rank), made monotone, capped at 1
    ps = sorted(r["p"] for r in rows)
    m = len(ps)
    holm = np.minimum(1, np.maximum.accumulate([p * (m - i) for i, p in enumerate(ps)]))
    assert sorted(r["p_holm"] for r in rows) == pytest.approx(list(holm), abs=1e-12)


def test_system_order_does_not_depend_on_the_side_shown():
    frame = simulate(seed=7)
    flipped = frame.assign(left_system=frame.right_system, right_system=frame.left_system,
                           choice=frame.choice.map({"left": "right", "right": "left", "tie": "tie"}))
    assert pw.win_rates(frame) == pw.win_rates(flipped)
    bias, flipped_bias = pw.position_bias(frame), pw.position_bias(flipped)
    assert bias["left_wins"] + flipped_bias["left_wins"] == bias["decisive"]


def test_position_bias_is_found_when_raters_prefer_the_left_side():
    unbiased, biased = pw.position_bias(simulate(seed=2)), pw.position_bias(simulate(seed=2, left_bias=1.0))
    assert biased["left_share"] > 0.6 and biased["p"] < 1e-6
    assert unbiased["p"] > 0.01
    test = stats.binomtest(biased["left_wins"], biased["decisive"], 0.5)
    assert biased["p"] == pytest.approx(test.pvalue, abs=1e-12)


def nominal_alpha(units: dict) -> float:
    """Krippendorff's nominal alpha by the coincidence matrix (Krippendorff 2011, 'Computing
    Krippendorff's alpha-reliability'), written independently of the package."""
    categories = sorted({v for values in units.values() for v in values})
    index = {c: k for k, c in enumerate(categories)}
    o = np.zeros((len(categories), len(categories)))
    for values in units.values():
        m = len(values)
        if m < 2:
            continue
        for i, a in enumerate(values):
            for j, b in enumerate(values):
                if i != j:
                    o[index[a], index[b]] += 1 / (m - 1)
    n_c = o.sum(axis=1)
    n = n_c.sum()
    observed = o.sum() - np.trace(o)
    expected = (n * n - (n_c ** 2).sum()) / (n - 1)
    return 1 - observed / expected


def test_alpha_is_nominal_over_the_chosen_system_not_the_side():
    frame = simulate(seed=11, raters=12, per_rater=40).drop_duplicates(["rater", "item"])  # one judgment each, as stored
    data = pw.canonical(frame)
    units = data.groupby("item")["outcome"].apply(list).to_dict()
    result = pw.agreement(frame)
    assert result["alpha"] == pytest.approx(nominal_alpha(units), abs=1e-9)
    # The textbook example (Krippendorff 2011, nominal, missing values): alpha = 0.743.
    reliability = {1: [1, 1, 1], 2: [2, 2, 3, 2], 3: [3, 3, 3, 3], 4: [3, 3, 3, 3], 5: [2, 2, 2, 2], 6: [1, 2, 3, 4],
                   7: [4, 4, 4, 4], 8: [1, 1, 2, 1], 9: [2, 2, 2, 2], 10: [5, 5, 5], 11: [1, 1], 12: [3]}
    assert nominal_alpha(reliability) == pytest.approx(0.743, abs=5e-4)
    # Two raters who saw a pair in opposite orders and chose the same system agree.
    same = pd.DataFrame({"criterion": "c", "item": [1, 1, 2, 2, 3, 3], "rater": [1, 2, 1, 2, 1, 2],
                         "left_system": ["a", "b", "a", "c", "b", "c"], "right_system": ["b", "a", "c", "a", "c", "b"],
                         "choice": ["left", "right", "right", "left", "tie", "tie"]})
    assert pw.agreement(same)["alpha"] == pytest.approx(1.0)


def test_bootstrap_is_seeded_and_its_intervals_cover_the_estimate():
    frame = simulate(seed=13)
    one = pw.bradley_terry_bootstrap(frame, resamples=200, seed=4)
    again = pw.bradley_terry_bootstrap(frame, resamples=200, seed=4)
    other = pw.bradley_terry_bootstrap(frame, resamples=200, seed=5, over="item")
    assert one == again and one != other and other["over"] == "item"
    mm = pw.bradley_terry_mm(frame)
    for row in one["strengths"]:  # 600 judgments: the weak prior moves the estimate by well under its interval
        assert row["theta_mle"] == pytest.approx(mm[row["system"]], abs=1e-9)
        assert row["theta"] == pytest.approx(mm[row["system"]], abs=0.02)
        assert row["ci_low"] < row["theta"] < row["ci_high"]
    assert [r["system"] for r in one["strengths"]] == ["alpha", "beta", "gamma", "delta"]


def test_bradley_terry_resamples_without_a_finite_mle_are_kept_and_counted():
    # Rater 1 alone makes a beat b; without rater 1 in a resample, a never won.
    frame = pd.DataFrame({"criterion": "c", "item": [1, 2, 3, 4], "rater": [1, 2, 3, 4],
                          "left_system": "a", "right_system": "b", "choice": ["left", "right", "right", "tie"]})
    result = pw.bradley_terry_bootstrap(frame, resamples=300, seed=1)
    assert 0 < result["degenerate"] < 300 and result["dropped"] == 0


def test_bad_input_names_the_problem():
    frame = simulate(seed=1).assign(choice="maybe")
    with pytest.raises(ValueError, match="choice must be one of left, right, tie"):
        pw.win_rates(frame)
    with pytest.raises(ValueError, match="missing column"):
        pw.pairwise_report(simulate(seed=1).drop(columns="rater"))
    assert pw.pairwise_report(simulate(seed=1).iloc[:0]) == []


def test_metric_agreement_counts_pairs_by_the_human_majority_and_leaves_ties_out():
    judgments = [  # item, rater, left unit, right unit, left system, right system, choice
        (1, 1, 10, 11, "a", "b", "left"), (1, 2, 11, 10, "b", "a", "right"), (1, 3, 10, 11, "a", "b", "right"),  # a wins 2-1
        (2, 1, 20, 21, "a", "c", "right"), (2, 2, 21, 20, "c", "a", "left"),  # c wins 2-0
        (3, 1, 30, 31, "b", "c", "tie"), (3, 2, 30, 31, "b", "c", "left"), (3, 3, 31, 30, "c", "b", "tie"),  # human tie
        (4, 1, 40, 41, "a", "b", "left"), (4, 2, 41, 40, "b", "a", "left"),  # level 1-1: human tie
        (5, 1, 50, 51, "a", "b", "left"),  # a; the metric scores both equal
        (6, 1, 60, 61, "a", "b", "right"),  # b; 61 unscored
    ]
    frame = pd.DataFrame(judgments, columns=["item", "rater", "left", "right", "left_system", "right_system", "choice"])
    frame["criterion"] = "overall"
    scores = {10: 0.9, 11: 0.1, 20: 0.8, 21: 0.3, 30: 0.5, 31: 0.2, 40: 1, 41: 2, 50: 0.4, 51: 0.4, 60: 0.1}
    (row,) = pw.metric_pair_agreement(frame, scores)
    # item 1: metric prefers 10 (a) = human a -> agree; item 2: metric prefers 20 (a), humans c -> disagree
    assert (row["pairs"], row["counted"], row["agree"], row["share"]) == (6, 2, 1, 0.5)
    assert (row["human_ties"], row["metric_ties"], row["missing_scores"]) == (2, 1, 1)
    # Human ceiling (leave one rater out): item 1 (a, a, b): the two a's face a level {a, b}, skipped; b faces
    # {a, a}: disagrees. Item 2 (c, c): both agree. Item 3 (tie, b, tie): b faces {tie, tie}, skipped. Item 4
    # (a, b): each disagrees with the other. So 2 of 5.
    assert (row["human_n"], row["human_share"]) == (5, pytest.approx(2 / 5))
    assert row["p"] == pytest.approx(1.0)


def test_raters_with_a_side_habit_are_named_and_the_model_check_is_reported():
    honest = simulate(seed=21, raters=6, per_rater=60)
    clicker = simulate(seed=22, raters=1, per_rater=60, tie_rate=0.0, left_bias=6.0).assign(rater="clicker")
    rows = {r["rater"]: r for r in pw.rater_sides(pd.concat([honest, clicker], ignore_index=True))}
    assert rows["clicker"]["side_preference"] and rows["clicker"]["left_share"] > 0.9
    assert not any(r["side_preference"] for name, r in rows.items() if name != "clicker")
    # Holm: the smallest of m = 7 p values is multiplied by 7
    assert min(r["p"] for r in rows.values()) == rows["clicker"]["p"]
    assert rows["clicker"]["p_holm"] == pytest.approx(min(1.0, 7 * rows["clicker"]["p"]), rel=1e-9)
    (entry,) = pw.pairwise_report(honest, resamples=50)
    assert entry["raters_with_side_preference"] == 0
    theta = {r["system"]: r["theta"] for r in entry["bt"]["strengths"]}  # the report's penalised fit
    mm = pw.bradley_terry_mm(honest)
    assert all(abs(theta[s] - mm[s]) < 0.01 for s in mm)  # 360 judgments: the weak prior barely moves it
    for row in entry["win_rates"]:
        assert row["bt_expected_a"] == pytest.approx(1 / (1 + math.exp(theta[row["system_b"]] - theta[row["system_a"]])))
        assert abs(row["bt_expected_a"] - row["score_a"]) < 0.15  # the simulated data follow the model


def test_the_bootstraps_newton_fit_is_the_mm_fit():
    frame = pw.canonical(simulate(seed=17))
    systems = sorted(THETA)
    wins, n = pw._counts(frame, systems)
    mm = pw._mm(wins, n, tol=1e-13, max_iter=100000)
    assert pw._newton(wins, n, np.zeros(len(systems))) == pytest.approx(mm, abs=1e-9)
    rng = np.random.default_rng(0)
    for _ in range(20):  # perturbed counts, started from the unperturbed estimate, as in the bootstrap
        scaled = wins * rng.uniform(0.5, 1.5, size=wins.shape)
        expected = pw._mm(scaled, scaled + scaled.T, tol=1e-13, max_iter=100000)
        assert pw._newton(scaled, scaled + scaled.T, mm) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize(("seed", "raters", "per_rater"), [(31, 20, 25), (31, 5, 6)])  # 5 x 6: resamples without an MLE
def test_the_batched_bradley_terry_bootstrap_fits_each_resample_as_a_loop_of_single_fits_would(seed, raters, per_rater):
    """All resamples are fitted in one stack; the reference draws the same clusters in the same order and
    fits them one by one, keeping every one, and counts those without an MLE."""
    from studies.analysis.bradley_terry import map_fit

    frame = simulate(seed=seed, raters=raters, per_rater=per_rater)
    result = pw.bradley_terry_bootstrap(frame, resamples=300, seed=7)
    data = pw.canonical(frame)
    systems = sorted(set(data["system_a"]) | set(data["system_b"]))
    codes, _ = pd.factorize(data["rater"], sort=True)
    clusters = [pw._counts(data[codes == c], systems)[0] for c in range(codes.max() + 1)]
    rng = np.random.default_rng(7)
    fits, degenerate = [], 0
    for _ in range(300):
        sample = sum(clusters[c] for c in rng.integers(0, len(clusters), size=len(clusters)))
        try:
            pw._check_exists(sample, sample + sample.T, systems)
        except pw.BTError:
            degenerate += 1
        fits.append(map_fit(sample, sample + sample.T))
    assert result["degenerate"] == degenerate and (degenerate > 0) == (raters == 5) and result["dropped"] == 0
    bounds = np.quantile(np.array(fits), [0.025, 0.975], axis=0)
    by_system = {r["system"]: r for r in result["strengths"]}
    for k, system in enumerate(systems):
        assert [by_system[system]["ci_low"], by_system[system]["ci_high"]] == pytest.approx(bounds[:, k], abs=1e-9)


def test_the_vectorised_binomial_test_equals_scipys_binomtest():
    for n in [*range(40), 99, 100, 299, 300]:
        k = np.arange(n + 1)
        ours = pw._binomial_p_half(k, np.full_like(k, n))
        if n == 0:
            assert np.isnan(ours).all()
            continue
        expected = [stats.binomtest(int(x), n, 0.5).pvalue for x in k]
        assert ours == pytest.approx(expected, rel=1e-12, abs=1e-300)


def test_holm_equals_statsmodels():
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(3)
    for m in (1, 2, 7, 50):
        p = rng.uniform(0, 0.2, m) ** 2
        p[: m // 3] = p[0]  # ties
        assert pw.holm(p) == pytest.approx(multipletests(p, method="holm")[1], abs=1e-15)


def test_side_balance_counts_where_each_system_was_shown():
    frame = pd.DataFrame({"criterion": "c", "item": range(4), "rater": 1, "left_system": ["a", "a", "b", "c"],
                          "right_system": ["b", "c", "a", "a"], "choice": "tie"})
    balance = pw.side_balance(frame)
    assert {r["system"]: (r["shown"], r["left_share"]) for r in balance["systems"]} == {
        "a": (4, 0.5), "b": (2, 0.5), "c": (2, 0.5)}
    assert (balance["min_left_share"], balance["max_left_share"]) == (0.5, 0.5)
