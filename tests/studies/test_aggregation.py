"""Label aggregation (studies.analysis.aggregation) against crowd-kit called directly, on a seeded
simulation with known truth; and the leave-one-out rater figures (studies.analysis.rater_quality)
against scikit-learn and SciPy. No database."""
import numpy as np
import pandas as pd
import pytest
from crowdkit.aggregation import MACE, DawidSkene, MajorityVote

from studies.analysis import aggregation, rater_quality

CLASSES = ["safe", "unsafe", "unsure"]


def simulate(seed=11, tasks=100, honest=3, spammers=4, accuracy=0.75, random_spam=False):
    """Known truth; honest raters right with probability ``accuracy`` (else a uniform label), spammers
    who always answer "safe" (a bloc majority vote cannot outvote) or, ``random_spam``, a uniform label."""
    rng = np.random.default_rng(seed)
    truth = {t: CLASSES[rng.integers(3)] for t in range(tasks)}
    rows = []
    for w in range(honest):
        for t, k in truth.items():
            rows.append((f"honest{w}", t, k if rng.random() < accuracy else CLASSES[rng.integers(3)]))
    for w in range(spammers):
        rows.extend((f"spam{w}", t, CLASSES[rng.integers(3)] if random_spam else "safe") for t in truth)
    return aggregation.answers_frame(rows), truth


@pytest.fixture(scope="module")
def simulated():
    return simulate()


def test_dawid_skene_through_the_project_equals_crowdkit_called_directly(simulated):
    frame, _ = simulated
    ours = aggregation.aggregate(frame, "dawid_skene")
    model = DawidSkene(n_iter=100)
    labels = model.fit_predict(frame)
    assert ours.labels == labels.to_dict()
    for worker in frame["worker"].unique():  # P(correct) = Σ_k p_k π[k, k] from crowd-kit's own matrices
        expected = sum(model.priors_[k] * model.errors_.loc[(worker, k), k] for k in model.priors_.index
                       if (worker, k) in model.errors_.index)
        assert ours.competence[worker] == pytest.approx(expected, abs=1e-9)


def test_mace_through_the_project_equals_crowdkit_called_directly():
    frame, _ = simulate(tasks=25, spammers=2, random_spam=True)
    ours = aggregation.aggregate(frame, "mace")
    model = MACE(n_restarts=aggregation.MACE_RESTARTS, n_iter=50, random_state=aggregation.SEED)
    assert ours.labels == model.fit_predict(frame).to_dict()
    workers = pd.unique(frame["worker"])
    for index, worker in enumerate(workers):
        assert ours.competence[worker] == pytest.approx(model.spamming_[index, 1], abs=1e-9)


def test_majority_vote_aggregation_equals_crowdkit_and_competence_is_agreement_with_it(simulated):
    frame, _ = simulated
    ours = aggregation.aggregate(frame, "majority_vote")
    labels = MajorityVote().fit_predict(frame)
    assert ours.labels == labels.to_dict()
    hits = frame["label"] == frame["task"].map(labels)
    for worker, share in hits.groupby(frame["worker"]).mean().items():
        assert ours.competence[worker] == pytest.approx(share, abs=1e-12)


def test_dawid_skene_recovers_the_truth_where_majority_vote_fails_with_a_few_spammers(simulated):
    frame, truth = simulated
    results = {m: aggregation.aggregate(frame, m) for m in ("majority_vote", "dawid_skene")}
    vote, ds = (aggregation.accuracy(results[m].labels, truth)["accuracy"] for m in ("majority_vote", "dawid_skene"))
    by_hand = np.mean([results["majority_vote"].labels[t] == k for t, k in truth.items()])
    assert vote == pytest.approx(by_hand)
    assert vote < 0.5  # the spammers' "safe" outvotes the honest raters wherever the truth is not "safe"
    assert ds >= 0.7 and ds > vote + 0.3
    competence = results["dawid_skene"].competence
    assert max(competence[f"spam{w}"] for w in range(3)) < min(competence[f"honest{w}"] for w in range(3))


def test_mace_gives_random_spammers_the_lowest_competence_and_compare_methods_runs_all_three():
    frame, truth = simulate(tasks=40, honest=4, spammers=2, random_spam=True, accuracy=0.8)
    rows = {row["method"]: row for row in aggregation.compare_methods(frame, truth)}
    assert set(rows) == set(aggregation.METHODS)
    result = rows["mace"]["aggregation"]
    assert max(result.competence[f"spam{w}"] for w in range(2)) < min(result.competence[f"honest{w}"] for w in range(4))
    assert rows["mace"]["accuracy"] == aggregation.accuracy(result.labels, truth)["accuracy"] > 0.8


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_dawid_skene_beats_majority_vote_on_other_seeds_too(seed):
    frame, truth = simulate(seed=seed)
    ds = aggregation.accuracy(aggregation.aggregate(frame, "dawid_skene").labels, truth)["accuracy"]
    vote = aggregation.accuracy(aggregation.aggregate(frame, "majority_vote").labels, truth)["accuracy"]
    assert ds > vote + 0.3


def test_aggregation_accuracy_counts_only_targets_with_a_known_label():
    found = aggregation.accuracy({"a": "x", "b": "y", "c": "z"}, {"a": "x", "b": "x", "d": "x"})
    assert found == {"correct": 1, "n": 2, "accuracy": 0.5}
    assert aggregation.accuracy({"a": "x"}, {})["accuracy"] is None


def test_aggregation_multilabel_rows_are_one_yes_no_question_per_option():
    rows = aggregation.multilabel_rows([("w1", "t1", ["a"]), ("w2", "t1", []), ("w3", "t1", None)], ["a", "b"])
    assert sorted(rows) == [("w1", ("t1", "a"), "yes"), ("w1", ("t1", "b"), "no"),
                            ("w2", ("t1", "a"), "no"), ("w2", ("t1", "b"), "no")]


def test_aggregation_of_nothing_and_an_unknown_method():
    empty = aggregation.answers_frame([("w", "t", None), ("w", "t2", "")])
    assert len(empty) == 0 and aggregation.aggregate(empty, "dawid_skene").labels == {}
    with pytest.raises(ValueError, match="unknown aggregation method 'glad'"):
        aggregation.aggregate(empty, "glad")


def test_rater_evidence_kappa_with_the_others_majority_equals_scikit_learn():
    from sklearn.metrics import cohen_kappa_score

    frame, _ = simulate(seed=5, tasks=60, spammers=1)  # crowd answers only: nothing to fit
    rows = list(frame.itertuples(index=False, name=None))
    found = rater_quality.label_agreement_loo(rows)
    for worker in ("honest0", "spam0"):
        mine, theirs = [], []
        for _task, part in frame.groupby("task"):
            others = part[part["worker"] != worker]["label"].value_counts()
            top = others[others == others.max()].index.sort_values()[0]
            mine.append(part[part["worker"] == worker]["label"].iloc[0])
            theirs.append(top)
        expected = cohen_kappa_score(mine, theirs)
        assert found[worker]["kappa"] == pytest.approx(expected, abs=1e-9)
        assert found[worker]["n"] == 60
    assert found["spam0"]["kappa"] < 0.2 < found["honest0"]["kappa"]


def test_rater_evidence_position_habit_is_scipy_binomtest():
    from scipy import stats

    first, counted, chance = rater_quality.top_first(
        [[(0, 5), (1, 3), (2, 1)]] * 9 + [[(0, 1), (1, 5), (2, 2)]] + [[(0, 4), (1, 4), (2, 1)]])
    assert (first, counted, chance) == (9, 10, pytest.approx(1 / 3))  # the tied screen does not count
    found = rater_quality.position_habit(first, counted, chance)
    assert found["p"] == pytest.approx(stats.binomtest(9, 10, 1 / 3).pvalue, abs=1e-12)
    assert rater_quality.position_habit(0, 0, 0.5)["p"] is None


def test_rater_evidence_order_agreement_counts_decisive_choices_for_the_stronger_system():
    strengths = {"a": 1.0, "b": 0.0, "c": -1.0}
    choices = [("a", "b", "left"), ("b", "a", "left"), ("c", "a", "right"), ("a", "c", "tie"), ("x", "a", "left")]
    assert rater_quality.order_agreement(choices, strengths) == {"agree": 2, "n": 3, "share": 2 / 3}
