"""Label aggregation for categorical and multi-label criteria: one label per rated target from many
raters' labels, and each rater's competence, through crowd-kit (Ustalov et al. 2024, Toloka).

Methods (``METHODS``):

- ``majority_vote``: the most frequent label per target; its probability is the label's share of the
  target's answers (as crowd-kit's ``MajorityVote.probas_``). Ties are broken by a fixed rule, never by
  the order of the rows (crowd-kit's winner of a tie changes when the same answers are shuffled): the
  label that comes first in ``order`` (the criterion's own label order; for a multi-label option's
  yes/no, "no": an option is given only when more than half the raters ticked it), then the label that
  sorts first. A rater's competence is the share of their labels equal to the majority label.
- ``dawid_skene``: Dawid & Skene (1979), "Maximum likelihood estimation of observer error-rates using
  the EM algorithm", Applied Statistics 28(1). Each rater j has a confusion matrix π_j[k, l] =
  P(label l | true class k); EM alternates the posterior of each target's class with the priors and
  matrices. Competence = Σ_k p_k π_j[k, k], the probability that rater j gives the true label.
- ``mace``: MACE, Hovy et al. (2013), "Learning whom to trust with MACE", NAACL-HLT 1120–1130. A rater
  gives the true label unless spamming (probability 1 − θ_j), then draws from their own distribution;
  variational Bayes with Beta(0.5, 0.5) priors, one seeded restart. Competence = θ_j. Like majority vote,
  it is started from the raters agreeing, so a bloc of raters giving one label throughout looks competent
  to it; Dawid–Skene's confusion matrices see that such a rater's label says nothing about the truth.

Each target's label comes with its posterior probability (``Aggregation.probabilities``: crowd-kit's
``probas_``, the E-step posterior for Dawid–Skene and MACE, the vote share for majority vote); the same
tie rule applies where two labels are equally probable. Boolean labels stay boolean (``answers_frame``).

Multi-label criteria are read as one yes/no question per (target, option) (Zhang & Zhou 2014's
binary relevance): each option a target could have is aggregated on its own.

No Django here; crowd-kit (which pulls pandas) is imported inside the functions.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

METHODS = {
    "majority_vote": "Majority vote",
    "dawid_skene": "Dawid–Skene (1979)",
    "mace": "MACE (Hovy et al. 2013)",
}
DEFAULT_METHOD = "dawid_skene"
SEED = 0  # MACE's random restarts are seeded: the report is the same on every reload
MACE_RESTARTS = 1  # Hovy et al. use 10; crowd-kit's implementation takes seconds per restart (the report caches it)


@dataclass
class Aggregation:
    """One method's result: ``labels`` (task -> label), ``probabilities`` (task -> label -> posterior
    probability), ``competence`` (worker -> [0, 1])."""

    method: str
    labels: dict[Any, Any] = field(default_factory=dict)
    competence: dict[Any, float] = field(default_factory=dict)
    probabilities: dict[Any, dict[Any, float]] = field(default_factory=dict)

    def confidence(self, task: Any) -> float | None:
        """The probability of the label given to ``task`` (None for a task without one)."""
        if task not in self.labels:
            return None
        return self.probabilities.get(task, {}).get(self.labels[task])

    @property
    def title(self) -> str:
        return METHODS[self.method]


def answers_frame(rows: Iterable[tuple[Any, Any, Any]]):
    """crowd-kit's input: a DataFrame with columns worker, task, label from (worker, task, label) rows;
    rows whose label is None or "" are left out. Labels become strings, but booleans stay booleans."""
    import pandas as pd

    kept = [(w, t, label if isinstance(label, bool) else str(label)) for w, t, label in rows
            if label is not None and label != ""]
    return pd.DataFrame(kept, columns=["worker", "task", "label"])


def multilabel_rows(rows: Iterable[tuple[Any, Any, Iterable[str] | None]],
                    options: Iterable[str]) -> list[tuple[Any, Any, str]]:
    """(worker, (task, option), "yes"/"no") per option for multi-label answers (binary relevance):
    a rater who ticked nothing said "no" to every option; an answer of None is no answer."""
    options = list(options)
    out: list[tuple[Any, Any, str]] = []
    for worker, task, labels in rows:
        if labels is None:
            continue
        ticked = set(labels)
        out.extend((worker, (task, option), "yes" if option in ticked else "no") for option in options)
    return out


def _model(method: str):
    from crowdkit.aggregation import MACE, DawidSkene, MajorityVote

    if method == "majority_vote":
        return MajorityVote()
    if method == "dawid_skene":
        return DawidSkene(n_iter=100)
    if method == "mace":  # one seeded restart: crowd-kit's MACE costs seconds per restart on a few thousand answers
        return MACE(n_restarts=MACE_RESTARTS, n_iter=50, random_state=SEED)
    raise ValueError(f"unknown aggregation method {method!r}; one of {', '.join(METHODS)}")


TIE = 1e-12  # two labels whose probabilities differ by less than this are tied


def _tie_rank(order: Sequence[Any]):
    """Sort key of labels by the tie rule: first in ``order``, then by their text."""
    first = {label: i for i, label in enumerate(order)}
    return lambda label: (first.get(label, len(first)), str(label))


def pick(probabilities: Mapping[Any, float], order: Sequence[Any] = ()) -> Any:
    """The most probable label, ties (within ``TIE``) broken by ``_tie_rank``."""
    top = max(probabilities.values())
    return min((label for label, p in probabilities.items() if top - p < TIE), key=_tie_rank(order))


def _vote_shares(frame) -> dict[Any, dict[Any, float]]:
    counts: dict[Any, dict[Any, int]] = {}
    for task, label in zip(frame["task"], frame["label"], strict=True):
        counts.setdefault(task, {}).setdefault(label, 0)
        counts[task][label] += 1
    labels = list(dict.fromkeys(frame["label"]))
    return {task: {label: given.get(label, 0) / sum(given.values()) for label in labels}
            for task, given in counts.items()}


def aggregate(frame, method: str = DEFAULT_METHOD, order: Sequence[Any] = ()) -> Aggregation:
    """Labels, their probabilities and competences of ``frame`` (``answers_frame``) by ``method``
    (``METHODS``); ties broken by ``order`` (the criterion's label order), then by text."""
    model = _model(method)
    result = Aggregation(method=method)
    if frame is None or not len(frame):
        return result
    if method == "majority_vote":  # crowd-kit's probas_, computed here so that a tie does not follow row order
        result.probabilities = _vote_shares(frame)
    else:
        model.fit(frame)
        result.probabilities = {task: {label: float(p) for label, p in row.items()}
                                for task, row in model.probas_.to_dict(orient="index").items()}
    result.labels = {task: pick(probs, order) for task, probs in result.probabilities.items()}
    if method == "majority_vote":
        winners = frame["task"].map(result.labels)
        agree = frame.assign(hit=frame["label"].to_numpy() == winners.to_numpy())
        skill = agree.groupby("worker")["hit"].mean()
    elif method == "dawid_skene":
        # errors_: index (worker, given label), columns the true label; P(correct) = Σ_k p_k π_j[k, k]
        # (read by the labels' text: crowd-kit renames boolean priors to "True"/"False", and a boolean
        # label cannot index .loc)
        priors = {str(k): float(v) for k, v in model.priors_.items()}
        cells = {(worker, str(given), str(true)): float(value)
                 for (worker, given), row in model.errors_.iterrows() for true, value in row.items()}
        skill = {worker: sum(p * cells[(worker, k, k)] for k, p in priors.items() if (worker, k, k) in cells)
                 for worker in model.errors_.index.get_level_values(0).unique()}
    else:  # spamming_[j] = (P(spam), P(knowing)) per worker, in order of first appearance (pd.factorize)
        import pandas as pd

        skill = dict(zip(pd.unique(frame["worker"]), model.spamming_[:, 1], strict=True))
    result.competence = {worker: float(value) for worker, value in skill.items()}
    return result


def accuracy(labels: Mapping[Any, Any], truth: Mapping[Any, Any]) -> dict[str, Any]:
    """How many of the targets with a known label (gold or check items) got it: correct, n and
    correct / n (None without any)."""
    known = [task for task in truth if task in labels]
    correct = sum(str(labels[task]) == str(truth[task]) for task in known)
    return {"correct": correct, "n": len(known), "accuracy": correct / len(known) if known else None}


def compare_methods(frame, truth: Mapping[Any, Any]) -> list[dict[str, Any]]:
    """Every method on ``frame``, each with its accuracy on ``truth`` (task -> known label)."""
    rows = []
    for method in METHODS:
        result = aggregate(frame, method)
        rows.append({"method": method, "title": METHODS[method], "aggregation": result,
                     **accuracy(result.labels, truth)})
    return rows
