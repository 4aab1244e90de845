"""Best-worst scaling (Kiritchenko & Mohammad 2016, 2017).

- Counting score of an item: (#best − #worst) / #appearances, in [−1, 1] (as %best − %worst).
- Balanced 4-tuples for many items: about ``factor``·N tuples, every item appearing equally often
  (factor·k times for tuple size k), pairs co-occurring as evenly as possible — the best of several
  random shuffles by the SD of pair co-occurrence counts.
- Split-half reliability: split the annotations of every tuple at random into two halves, score
  items from each half, correlate (Spearman and Pearson), average over trials; the Spearman-Brown
  correction 2r/(1+r) gives the reliability of the full set.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy.stats import pearsonr, spearmanr


def counting_scores(items: ArrayLike, ranks: ArrayLike, tuple_ids: ArrayLike) -> pd.DataFrame:
    """Per item: appearances, best, worst and score = (best − worst)/appearances.

    Each row is one item's rank within one annotation of a tuple (``tuple_ids`` identifies the
    annotation: rater × tuple); rank 1 is best, the largest rank in the annotation is worst."""
    frame = pd.DataFrame({"item": np.asarray(items), "rank": np.asarray(ranks, dtype=float),
                          "annotation": np.asarray(tuple_ids)})
    worst_rank = frame.groupby("annotation")["rank"].transform("max")
    frame["best"] = (frame["rank"] == 1).astype(int)
    frame["worst"] = (frame["rank"] == worst_rank).astype(int)
    table = frame.groupby("item").agg(appearances=("rank", "size"), best=("best", "sum"), worst=("worst", "sum"))
    table["score"] = (table["best"] - table["worst"]) / table["appearances"]
    return table


def pair_counts(tuples: np.ndarray, n_items: int) -> np.ndarray:
    """Co-occurrence counts of every item pair (upper triangle, i < j) over a set of tuples."""
    size = tuples.shape[1]
    left, right = np.triu_indices(size, k=1)
    a, b = np.minimum(tuples[:, left], tuples[:, right]).ravel(), np.maximum(tuples[:, left], tuples[:, right]).ravel()
    counts = np.bincount(a * n_items + b, minlength=n_items * n_items).reshape(n_items, n_items)
    return counts[np.triu_indices(n_items, k=1)]


def balanced_tuples(n_items: int, *, size: int = 4, factor: int = 2, tries: int = 20, seed: int = 0) -> np.ndarray:
    """About factor·n_items tuples of ``size`` distinct items, each item in exactly factor·size of
    them (when size divides n_items), keeping the shuffle whose pair counts have the smallest SD."""
    if n_items < size:
        raise ValueError(f"need at least {size} items for tuples of {size}, got {n_items}")
    rng = np.random.default_rng(seed)
    best, best_sd = None, np.inf
    for _ in range(tries):
        rows = []
        for _ in range(factor * size):  # each pass puts every item in one tuple
            order = rng.permutation(n_items)
            usable = n_items - n_items % size
            rows.append(order[:usable].reshape(-1, size))
            if usable < n_items:  # fill the last tuple with leftovers plus random others
                rest = order[usable:]
                others = rng.choice(np.setdiff1d(np.arange(n_items), rest), size - rest.size, replace=False)
                rows.append(np.concatenate([rest, others])[None, :])
        tuples = np.concatenate(rows)
        sd = pair_counts(tuples, n_items).std()
        if sd < best_sd:
            best, best_sd = tuples, sd
    return best


@dataclass(frozen=True)
class SplitHalf:
    spearman_mean: float
    spearman_sd: float
    pearson_mean: float
    pearson_sd: float
    spearman_brown: float  # 2r/(1+r) of the mean Spearman
    trials: int


def split_half_reliability(items: ArrayLike, ranks: ArrayLike, tuple_ids: ArrayLike, annotation_ids: ArrayLike,
                           *, trials: int = 100, seed: int = 0) -> SplitHalf:
    """Split the annotations of every tuple into two random halves, score items in each half by
    counting, and correlate the two sets of scores; mean and SD over ``trials``."""
    frame = pd.DataFrame({"item": np.asarray(items), "rank": np.asarray(ranks, dtype=float),
                          "tuple": np.asarray(tuple_ids), "annotation": np.asarray(annotation_ids)})
    annotations = frame.drop_duplicates("annotation")[["annotation", "tuple"]].reset_index(drop=True)
    rng = np.random.default_rng(seed)
    rs, ps = [], []
    for _ in range(trials):
        key = rng.random(len(annotations))
        order = annotations.assign(key=key).sort_values(["tuple", "key"])
        order["half"] = order.groupby("tuple").cumcount() % 2
        half = frame["annotation"].map(order.set_index("annotation")["half"])
        a = counting_scores(frame.item[half == 0], frame["rank"][half == 0], frame.annotation[half == 0])["score"]
        b = counting_scores(frame.item[half == 1], frame["rank"][half == 1], frame.annotation[half == 1])["score"]
        common = a.index.intersection(b.index)
        rs.append(spearmanr(a[common], b[common]).statistic)
        ps.append(pearsonr(a[common], b[common]).statistic)
    r = float(np.mean(rs))
    return SplitHalf(r, float(np.std(rs)), float(np.mean(ps)), float(np.std(ps)), 2 * r / (1 + r), trials)
