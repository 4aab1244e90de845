"""MDD-Eval's pseudo-labels (Zhang et al. AAAI 2022, Sec. 3.2): the teacher's soft distribution
p = softmax(z) over (random, adversarial, relevant) for every augmented pair; a pair whose top
probability max_c p_c is below the threshold (0.7) is dropped as too uncertain; the survivors are
balanced by class (class = argmax p) by a seeded down-sampling of every class to the smallest one.
A class with no survivor cannot be balanced against: it is reported, and the others are balanced
among themselves."""
from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np

from ml.models.mdd_eval import LABELS


def class_counts(probabilities: np.ndarray, keep: Sequence[int] | None = None) -> dict[str, int]:
    labels = probabilities.argmax(-1) if keep is None else probabilities[list(keep)].argmax(-1) if len(keep) else []
    return {name: int(np.sum(np.asarray(labels) == c)) for c, name in enumerate(LABELS)}


def filter_and_balance(probabilities: np.ndarray, *, threshold: float = 0.7, balance: bool = True,
                       seed: int = 71) -> tuple[list[int], dict]:
    """Indices kept (ascending) and the counts per class: before, after the threshold, after balancing."""
    probabilities = np.asarray(probabilities, dtype=float)
    if probabilities.ndim != 2 or probabilities.shape[1] != len(LABELS):
        raise ValueError(f"probabilities must have shape (pairs, {len(LABELS)}), not {probabilities.shape}")
    confident = [int(i) for i in np.flatnonzero(probabilities.max(-1) >= threshold)]
    by_class: dict[int, list[int]] = {c: [] for c in range(len(LABELS))}
    for i in confident:
        by_class[int(probabilities[i].argmax())].append(i)
    kept = confident
    if balance:
        present = [members for members in by_class.values() if members]
        smallest = min((len(m) for m in present), default=0)
        rng = random.Random(seed)
        kept = sorted(i for members in present for i in rng.sample(members, smallest))
    counts = {"threshold": threshold, "before": class_counts(probabilities),
              "after_threshold": class_counts(probabilities, confident), "after_balance": class_counts(probabilities, kept),
              "pairs_before": len(probabilities), "pairs_after": len(kept),
              "empty_classes": [LABELS[c] for c, m in by_class.items() if not m]}
    return kept, counts
