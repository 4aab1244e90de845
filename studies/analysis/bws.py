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
from scipy.stats import rankdata


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


def pair_count_sd(tuples: np.ndarray, n_items: int) -> float:
    """SD of the co-occurrence counts over all n(n−1)/2 item pairs (never-paired ones count 0),
    without the n×n matrix ``pair_counts`` builds: only the pairs that occur are counted."""
    size = tuples.shape[1]
    left, right = np.triu_indices(size, k=1)
    a = np.minimum(tuples[:, left], tuples[:, right]).ravel().astype(np.int64)
    b = np.maximum(tuples[:, left], tuples[:, right]).ravel().astype(np.int64)
    _, counts = np.unique(a * n_items + b, return_counts=True)
    total = n_items * (n_items - 1) / 2
    mean = counts.sum() / total
    return float(np.sqrt(max((counts.astype(float) ** 2).sum() / total - mean**2, 0.0)))


def _one_draw(n_items: int, size: int, passes: int, rng: np.random.Generator) -> np.ndarray:
    """``passes`` random permutations of the items laid end to end and cut into tuples of ``size``.

    Every item is in exactly ``passes`` tuples. When ``size`` does not divide ``n_items`` one tuple
    per pass boundary straddles two permutations; the head of the next permutation is repaired by
    swaps (it stays a permutation) so that tuple holds no item twice."""
    stream = np.empty(n_items * passes, dtype=np.int64)
    for p in range(passes):
        order = rng.permutation(n_items)
        start = p * n_items
        tail = start % size  # items of the previous pass waiting in an unfinished tuple
        if p and tail:
            waiting = set(stream[start - tail:start].tolist())
            head = size - tail
            for i in range(head):
                if order[i] in waiting:
                    free = [j for j in range(head, n_items) if order[j] not in waiting]
                    j = free[int(rng.integers(len(free)))]
                    order[i], order[j] = order[j], order[i]
        stream[start:start + n_items] = order
    return stream.reshape(-1, size)


def balanced_tuples(n_items: int, *, size: int = 4, factor: int = 2, tries: int = 20, seed: int = 0) -> np.ndarray:
    """factor·n_items tuples of ``size`` distinct items, each item in exactly factor·size of them,
    keeping the draw (of ``tries``) whose pair co-occurrence counts have the smallest SD
    (Kiritchenko & Mohammad 2016: "about 2N tuples ... each term in eight different tuples")."""
    if n_items < size:
        raise ValueError(f"need at least {size} items for tuples of {size}, got {n_items}")
    rng = np.random.default_rng(seed)
    best: np.ndarray | None = None
    best_sd = np.inf
    for _ in range(tries):
        tuples = _one_draw(n_items, size, factor * size, rng)
        sd = pair_count_sd(tuples, n_items)
        if sd < best_sd:
            best, best_sd = tuples, sd
    assert best is not None  # tries >= 1
    return best


@dataclass(frozen=True)
class SplitHalf:
    spearman_mean: float
    spearman_sd: float
    pearson_mean: float
    pearson_sd: float
    spearman_brown: float  # 2r/(1+r) of the mean Spearman
    trials: int
    pearson_brown: float = float("nan")  # 2r/(1+r) of the mean Pearson


def _row_pearson(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson's r of each row pair of ``a`` and ``b`` over the columns where both are present (NaN
    elsewhere); NaN where a row has fewer than two such columns or no variance (as scipy.stats.pearsonr)."""
    mask = ~np.isnan(a) & ~np.isnan(b)
    n = mask.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        da = np.where(mask, a - np.nansum(np.where(mask, a, 0), axis=1, keepdims=True) / n[:, None], 0.0)
        db = np.where(mask, b - np.nansum(np.where(mask, b, 0), axis=1, keepdims=True) / n[:, None], 0.0)
        r = (da * db).sum(axis=1) / np.sqrt((da * da).sum(axis=1) * (db * db).sum(axis=1))
    return np.where(n >= 2, np.clip(r, -1.0, 1.0), np.nan)


def split_half_reliability(items: ArrayLike, ranks: ArrayLike, tuple_ids: ArrayLike, annotation_ids: ArrayLike,
                           *, trials: int = 100, seed: int = 0) -> SplitHalf:
    """Split the annotations of every tuple into two random halves, score items in each half by
    counting, and correlate the two sets of scores (over the items scored in both halves); mean and
    SD over ``trials``.

    Each trial draws one uniform number per annotation (annotations in order of first appearance),
    sorts each tuple's annotations by it and alternates halves (an odd one out goes to the first
    half). Vectorised over annotations and trials at once with integer codes and ``np.bincount``; only
    the two correlations are taken trial by trial."""
    items, ranks = np.asarray(items), np.asarray(ranks, dtype=float)
    item_code, item_names = pd.factorize(pd.Series(items), sort=False)
    ann_code, ann_names = pd.factorize(pd.Series(np.asarray(annotation_ids)), sort=False)
    n_items, n_ann = len(item_names), len(ann_names)
    worst_rank = np.full(n_ann, -np.inf)
    np.maximum.at(worst_rank, ann_code, ranks)
    is_best = (ranks == 1).astype(float)
    is_worst = (ranks == worst_rank[ann_code]).astype(float)
    first_row = np.full(n_ann, -1)
    first_row[ann_code[::-1]] = np.arange(len(ann_code))[::-1]  # a row of each annotation
    _, tuple_of_ann = np.unique(np.asarray(tuple_ids)[first_row], return_inverse=True)
    rng = np.random.default_rng(seed)
    keys = rng.random((trials, n_ann))  # the same draws as one ``rng.random(n_ann)`` per trial
    # each trial's lexsort by (tuple, key): sort by key, then stably by tuple
    by_key = np.argsort(keys, axis=1)
    if (np.diff(np.take_along_axis(keys, by_key, axis=1), axis=1) == 0).any():  # a tie: its order must be stable
        by_key = np.argsort(keys, axis=1, kind="stable")
    small = np.int16 if len(tuple_of_ann) and tuple_of_ann.max() < 2**15 else np.int64  # radix-sorted when small
    order = np.take_along_axis(by_key, np.argsort(tuple_of_ann.astype(small)[by_key], axis=1, kind="stable"), axis=1)
    sorted_tuples = tuple_of_ann[order[0]]  # the same in every trial: only the order within a tuple differs
    starts = np.flatnonzero(np.r_[True, sorted_tuples[1:] != sorted_tuples[:-1]])
    rank_in_tuple = np.arange(n_ann) - np.repeat(starts, np.diff(np.r_[starts, n_ann]))
    second = np.empty((trials, n_ann), dtype=float)  # 1 where an annotation is in the second half
    np.put_along_axis(second, order, (rank_in_tuple % 2).astype(float), axis=1)
    # per trial and item, the rows seen and their net best − worst in the second half, as annotations × items
    # products (sparse: an annotation holds a tuple's few items); whole numbers, so exact in any order
    from scipy import sparse

    net_row = is_best - is_worst
    shape = (n_items, n_ann)
    rows = sparse.csr_matrix((np.ones(len(item_code)), (item_code, ann_code)), shape=shape)
    nets = sparse.csr_matrix((net_row, (item_code, ann_code)), shape=shape)
    seen_second, net_second = (np.ascontiguousarray((matrix @ second.T).T) for matrix in (rows, nets))
    seen = np.stack([rows.sum(axis=1).A1[None, :] - seen_second, seen_second], axis=1)  # trials × half × items
    net = np.stack([np.asarray(nets.sum(axis=1)).ravel()[None, :] - net_second, net_second], axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        scores = np.where(seen > 0, net / np.maximum(seen, 1), np.nan)
    common = ~np.isnan(scores[:, 0]) & ~np.isnan(scores[:, 1])  # items scored in both halves, per trial
    a, b = (np.where(common, scores[:, h], np.nan) for h in (0, 1))
    rs = _row_pearson(rankdata(a, axis=1, nan_policy="omit"), rankdata(b, axis=1, nan_policy="omit"))  # Spearman
    ps = _row_pearson(a, b)
    r = float(np.mean(rs))
    p = float(np.mean(ps))
    return SplitHalf(r, float(np.std(rs)), p, float(np.std(ps)), 2 * r / (1 + r), trials, 2 * p / (1 + p))


def group_means_ci(scores: ArrayLike, groups: ArrayLike, *, level: float = 0.95) -> pd.DataFrame:
    """Per group (e.g. system): the mean of its members' counting scores with a Student-t confidence
    interval over the members (mean ± t·SD/√n, n members; no interval for n < 2)."""
    from scipy.stats import t as student_t

    frame = pd.DataFrame({"score": np.asarray(scores, dtype=float), "group": np.asarray(groups)})
    table = frame.groupby("group")["score"].agg(n="size", mean="mean", sd="std")
    half = student_t.ppf(0.5 + level / 2, table["n"] - 1) * table["sd"] / np.sqrt(table["n"])
    table["low"] = (table["mean"] - half).where(table["n"] > 1)
    table["high"] = (table["mean"] + half).where(table["n"] > 1)
    return table
