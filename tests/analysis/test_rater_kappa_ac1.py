"""The label raters' flag (studies.analysis.rater_quality): Gwet's AC1 with the others' majority, not
Cohen's κ, because a prevalent label breaks κ. A seeded simulation of raters of known accuracy on a
skewed label distribution: the random rater, and only it, is flagged; the old κ would have flagged a
careful rater who met only the prevalent label. No database."""

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from studies.analysis import rater_quality

LABELS = ["fine", "rude", "unsafe"]
SKEW = [0.85, 0.10, 0.05]
THRESHOLD = 0.2  # settings.RATER_FLAGS["min_ac1"] and the old "min_kappa"


def ac1_by_gwets_counts(a, b, categories):
    """AC1 from Gwet's (2008) multi-rater formula (rater counts r_ik per subject, r = 2), written apart
    from the project's two-rater form: p_a = mean_i Σ_k r_ik (r_ik − 1) / (r (r − 1)),
    π_k = mean_i r_ik / r, p_e = Σ_k π_k (1 − π_k) / (q − 1)."""
    counts = np.array([[(x == k) + (y == k) for k in categories] for x, y in zip(a, b, strict=True)], dtype=float)
    r = 2
    p_a = (counts * (counts - 1)).sum(axis=1).mean() / (r * (r - 1))
    pi = counts.mean(axis=0) / r
    p_e = (pi * (1 - pi)).sum() / (len(categories) - 1)
    return (p_a - p_e) / (1 - p_e)


def simulate(seed=3, tasks=240, careful=5, noise=0.10):
    """Known truth drawn from a skewed distribution; careful raters right with probability 1 − noise
    (else another label, uniformly), one random rater (uniform), and one careful rater who met only a
    batch of targets whose truth is the prevalent label."""
    rng = np.random.default_rng(seed)
    truth = {t: LABELS[rng.choice(3, p=SKEW)] for t in range(tasks)}
    rows = []

    def careful_label(k):
        if rng.random() >= noise:
            return k
        return [x for x in LABELS if x != k][rng.integers(2)]

    for w in range(careful):
        rows.extend((f"careful{w}", t, careful_label(k)) for t, k in truth.items())
    rows.extend(("random", t, LABELS[rng.integers(3)]) for t in truth)
    prevalent = [t for t, k in truth.items() if k == "fine"][:40]
    rows.extend(("batch", t, "fine") for t in prevalent)
    return rows, truth


@pytest.fixture(scope="module")
def simulated():
    rows, _ = simulate()
    return rater_quality.label_agreement_loo(rows, LABELS)


def test_kappa_flag_replaced_by_ac1_flags_the_random_rater_and_only_it(simulated):
    flagged = {rater for rater, found in simulated.items() if found["ac1"] < THRESHOLD}
    assert flagged == {"random"}
    assert simulated["random"]["agreement"] < 0.5 < min(f["agreement"] for r, f in simulated.items() if r != "random")


def test_kappa_would_have_flagged_the_careful_rater_who_met_only_the_prevalent_label(simulated):
    batch = simulated["batch"]
    assert batch["agreement"] >= 0.95 and batch["n"] == 40
    assert batch["kappa"] is None or batch["kappa"] < THRESHOLD  # the old flag: κ = 0 (or undefined) at 95%+
    assert batch["ac1"] > 0.9  # AC1 stays near the raw agreement


def test_kappa_flagged_careful_raters_on_a_seeded_simulation_over_many_seeds():
    """Over 10 seeds the AC1 flag singles out the random rater every time."""
    for seed in range(10):
        rows, _ = simulate(seed=seed, tasks=150)
        found = rater_quality.label_agreement_loo(rows, LABELS)
        assert {r for r, f in found.items() if f["ac1"] < THRESHOLD} == {"random"}, seed


def test_agreement_ac1_equals_gwets_multi_rater_formula_and_kappa_equals_scikit_learn():
    rng = np.random.default_rng(8)
    a = [LABELS[i] for i in rng.choice(3, size=50, p=SKEW)]
    b = [x if rng.random() < 0.8 else LABELS[rng.integers(3)] for x in a]
    assert rater_quality.gwet_ac1(a, b, LABELS) == pytest.approx(ac1_by_gwets_counts(a, b, LABELS), abs=1e-12)
    assert rater_quality._kappa(a, b) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)


def test_agreement_ac1_of_the_high_agreement_low_kappa_paradox():
    """Feinstein & Cicchetti's (1990) paradox: 2 × 2 table with 97 % agreement on a prevalent label,
    κ near 0 (here exactly 0: one rater gives only the common label) while AC1 is near 0.97."""
    a = ["yes"] * 100
    b = ["yes"] * 97 + ["no"] * 3
    assert rater_quality._kappa(a, b) == pytest.approx(0.0, abs=1e-12)
    # π_yes = (1 + .97) / 2 = .985, p_e = 2 · .985 · .015 / 1 = .02955, AC1 = (.97 − .02955) / (1 − .02955)
    expected = (0.97 - 2 * 0.985 * 0.015) / (1 - 2 * 0.985 * 0.015)
    assert rater_quality.gwet_ac1(a, b, ["yes", "no"]) == pytest.approx(expected, abs=1e-12)
    assert rater_quality.gwet_ac1(a, b, ["yes", "no"]) == pytest.approx(ac1_by_gwets_counts(a, b, ["yes", "no"]))


def test_agreement_ac1_categories_count_unused_labels_and_empty_is_none():
    a, b = ["x", "x", "y"], ["x", "y", "y"]
    two, three = rater_quality.gwet_ac1(a, b, ["x", "y"]), rater_quality.gwet_ac1(a, b, ["x", "y", "z"])
    assert three == pytest.approx(ac1_by_gwets_counts(a, b, ["x", "y", "z"]), abs=1e-12)
    assert two == pytest.approx(ac1_by_gwets_counts(a, b, ["x", "y"]), abs=1e-12) and two != three
    assert rater_quality.gwet_ac1([], [], ["x"]) is None
    found = rater_quality.label_agreement_loo([("r1", 1, "x"), ("r2", 1, "x"), ("r1", 2, "y"), ("r2", 2, "x")])
    assert found["r1"]["agreement"] == 0.5 and set(found) == {"r1", "r2"}
