"""Aggregated labels with their probabilities (studies.analysis.aggregation) equal crowd-kit called
directly on crowd-kit's own toy data sets (its tests' ``toy_answers_df``, the YSDA toy set, and
``simple_answers_df``, an imitation of Toloka answers with a fraudster and a careless worker; task and
worker ids shortened), to 1e-9; majority-vote ties never depend on the order of the rows; booleans stay
booleans. No database."""
import numpy as np
import pandas as pd
import pytest
from crowdkit.aggregation import MACE, DawidSkene, MajorityVote

from studies.analysis import aggregation

TOY = [("w1", "t1", "no"), ("w1", "t2", "yes"), ("w1", "t3", "yes"), ("w1", "t4", "yes"), ("w1", "t5", "yes"),
       ("w2", "t1", "yes"), ("w2", "t2", "yes"), ("w2", "t3", "no"), ("w2", "t4", "yes"), ("w2", "t5", "no"),
       ("w3", "t2", "yes"), ("w3", "t3", "no"), ("w3", "t4", "yes"), ("w3", "t5", "no"),
       ("w4", "t1", "yes"), ("w4", "t2", "no"), ("w4", "t3", "yes"), ("w4", "t4", "yes"), ("w4", "t5", "no"),
       ("w5", "t1", "no"), ("w5", "t2", "no"), ("w5", "t3", "no"), ("w5", "t4", "yes"), ("w5", "t5", "no")]
TOY_TRUTH = {"t1": "yes", "t2": "yes", "t3": "no", "t4": "yes", "t5": "no"}
SIMPLE = [("good1", "eec", "goose"), ("good1", "efb", "parrot"), ("good1", "f03", "goose"), ("good1", "f05", "goose"),
          ("good1", "f02", "parrot"), ("good1", "f08", "parrot"),
          ("good2", "efb", "parrot"), ("good2", "ee8", "chicken"), ("good2", "f07", "parrot"),
          ("good2", "efd", "chicken"), ("good2", "ee4", "chicken"), ("good2", "f03", "goose"),
          ("good3", "ee8", "chicken"), ("good3", "eec", "goose"), ("good3", "f05", "goose"), ("good3", "f02", "parrot"),
          ("good3", "f08", "parrot"),
          ("good4", "eec", "goose"), ("good4", "ee8", "chicken"), ("good4", "f03", "goose"), ("good4", "ee4", "chicken"),
          ("fraud", "eec", "parrot"), ("fraud", "efb", "parrot"), ("fraud", "f07", "parrot"), ("fraud", "efd", "parrot"),
          ("fraud", "ee4", "parrot"), ("fraud", "f05", "parrot"),
          ("careless", "efb", "parrot"), ("careless", "ee8", "goose"), ("careless", "f02", "parrot"),
          ("careless", "f08", "parrot"), ("careless", "f07", "parrot"), ("careless", "efd", "goose")]
SIMPLE_TRUTH = {"eec": "goose", "f03": "goose", "f05": "goose", "efb": "parrot", "f02": "parrot", "f08": "parrot",
                "f07": "parrot", "ee8": "chicken", "efd": "chicken", "ee4": "chicken"}
SETS = {"toy": TOY, "simple": SIMPLE}


def crowdkit_model(method):
    return {"majority_vote": MajorityVote(), "dawid_skene": DawidSkene(n_iter=100),
            "mace": MACE(n_restarts=aggregation.MACE_RESTARTS, n_iter=50, random_state=aggregation.SEED)}[method]


@pytest.mark.parametrize("dataset", sorted(SETS))
@pytest.mark.parametrize("method", sorted(aggregation.METHODS))
def test_aggregated_probabilities_equal_crowdkit_on_its_toy_data_sets(method, dataset):
    frame = aggregation.answers_frame(SETS[dataset])
    ours = aggregation.aggregate(frame, method)
    model = crowdkit_model(method)
    model.fit(frame)
    probas = model.probas_
    assert set(ours.probabilities) == set(probas.index)
    for task, row in probas.iterrows():
        for label, p in row.items():
            assert ours.probabilities[task].get(label, 0.0) == pytest.approx(p, abs=1e-9)
        assert ours.confidence(task) == pytest.approx(row.max(), abs=1e-9)
    untied = [t for t, row in probas.iterrows() if (row == row.max()).sum() == 1]
    assert untied and all(ours.labels[t] == model.labels_[t] for t in untied)  # labels equal wherever not tied


@pytest.mark.parametrize("method", ["dawid_skene", "mace"])
def test_aggregated_labels_of_the_model_methods_recover_crowdkits_ground_truth_on_the_toy_set(method):
    ours = aggregation.aggregate(aggregation.answers_frame(TOY), method)
    assert ours.labels == TOY_TRUTH


def test_aggregated_competence_singles_out_the_fraudster_on_crowdkits_simple_set():
    ours = aggregation.aggregate(aggregation.answers_frame(SIMPLE), "dawid_skene")
    assert min(ours.competence, key=ours.competence.get) in {"fraud", "careless"}
    assert aggregation.accuracy(ours.labels, SIMPLE_TRUTH)["accuracy"] >= 0.9


@pytest.mark.parametrize("method", sorted(aggregation.METHODS))
def test_aggregated_majority_ties_do_not_depend_on_row_order(method):
    """t1 of the toy set is a 2–2 tie for majority vote; 20 shuffles give one winner, the label the
    criterion lists first ("yes" here), for every method."""
    frame = aggregation.answers_frame(TOY)
    winners = set()
    for seed in range(20):
        shuffled = frame.sample(frac=1, random_state=seed).reset_index(drop=True)
        winners.add(tuple(sorted(aggregation.aggregate(shuffled, method, ["yes", "no"]).labels.items())))
    assert len(winners) == 1


def test_aggregated_majority_tie_goes_to_the_label_listed_first_then_by_text():
    frame = aggregation.answers_frame([("a", "t", "unsafe"), ("b", "t", "safe"), ("c", "u", "x"), ("d", "u", "w")])
    assert aggregation.aggregate(frame, "majority_vote", ["unsafe", "safe"]).labels == {"t": "unsafe", "u": "w"}
    assert aggregation.aggregate(frame, "majority_vote", ["safe", "unsafe"]).labels["t"] == "safe"
    crowd = MajorityVote().fit_predict(frame.iloc[::-1])  # crowd-kit's own winner follows the rows
    assert set(crowd.to_dict()) == {"t", "u"}
    assert aggregation.aggregate(frame, "majority_vote").confidence("t") == 0.5


@pytest.mark.parametrize("method", sorted(aggregation.METHODS))
def test_aggregated_boolean_labels_stay_boolean(method):
    rows = [(w, t, label == "yes") for w, t, label in TOY]
    ours = aggregation.aggregate(aggregation.answers_frame(rows), method, [True, False])
    assert {type(label) for label in ours.labels.values()} == {bool}
    assert all(isinstance(k, bool) for probs in ours.probabilities.values() for k in probs)
    as_text = aggregation.aggregate(aggregation.answers_frame(TOY), method, ["yes", "no"])
    assert {t: ("yes" if v else "no") for t, v in ours.labels.items()} == as_text.labels


def test_aggregated_probabilities_sum_to_one_for_every_target():
    rng = np.random.default_rng(2)
    rows = [(f"w{w}", t, ["a", "b", "c"][rng.integers(3)]) for w in range(5) for t in range(30)]
    frame = aggregation.answers_frame(rows)
    for method in aggregation.METHODS:
        ours = aggregation.aggregate(frame, method)
        sums = pd.Series({t: sum(p.values()) for t, p in ours.probabilities.items()})
        assert np.allclose(sums, 1.0, atol=1e-9)
