"""Agreement beyond ICC, and planning.

- Krippendorff's alpha (Krippendorff 2004; 2011, "Computing Krippendorff's alpha-reliability"), level of
  measurement nominal, ordinal (Likert), interval or ratio, from a long table (unit, rater, value):
  α = 1 − D_o / D_e with, over the n pairable values (those in units with two or more values),
  D_o = (1/n) Σ_u Σ_{i≠j in u} δ²(v_i, v_j) / (m_u − 1) and D_e = (1/(n(n−1))) Σ_{i≠j} δ²(v_i, v_j).
  The ``krippendorff`` package computes the same from a dense units × values × values coincidence tensor,
  which for continuous scores (every value distinct: V ≈ n) takes O(units · n²) time and memory (a 1,440-
  rating magnitude condition took 20 s and a GB); here the within-unit pairs are enumerated (Σ m_u² of
  them) and D_e is summed in closed form (nominal, interval) or over the V × V distinct values in blocks
  (ordinal, ratio). Equal to ``krippendorff.alpha`` to 1e-9 (tests/analysis/test_statistics.py).
- Spearman-Brown (planning): raters needed for a target average-measure ICC given the
  single-rater ICC ρ1: m = target(1 − ρ1) / (ρ1(1 − target)).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike


def reliability_matrix(items: ArrayLike, raters: ArrayLike, scores: ArrayLike) -> np.ndarray:
    """raters × units matrix of scores, NaN where missing."""
    item_codes, item_labels = pd.factorize(np.asarray(items))
    rater_codes, rater_labels = pd.factorize(np.asarray(raters))
    matrix = np.full((len(rater_labels), len(item_labels)), np.nan)
    matrix[rater_codes, item_codes] = np.asarray(scores, dtype=float)
    return matrix


def _delta(level: str, a: np.ndarray, b: np.ndarray, cumulative: np.ndarray | None = None,
           counts: np.ndarray | None = None) -> np.ndarray:
    """δ² of value pairs (Krippendorff 2011): nominal 0/1; interval (a − b)²; ratio ((a − b)/(a + b))²;
    ordinal (Σ_{g between a and b} n_g − (n_a + n_b)/2)², on value codes ``a``, ``b`` (ranks of the sorted
    distinct values) with ``cumulative`` = the running count of pairable values up to each code."""
    if level == "nominal":
        return (a != b).astype(float)
    if level == "interval":
        return (a - b) ** 2
    if level == "ratio":
        total = a + b
        return np.divide(a - b, total, out=np.zeros(np.broadcast(a, b).shape), where=total != 0) ** 2
    assert cumulative is not None and counts is not None  # ordinal needs both
    low, high = np.minimum(a, b), np.maximum(a, b)
    between = cumulative[high] - cumulative[low] + counts[low]
    return (between - (counts[a] + counts[b]) / 2) ** 2


PAIR_WORK = 8  # a within-unit pair costs about as much as this many cells of the units × values matrix product


def _last_values(items: ArrayLike, raters: ArrayLike, scores: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(unit code, rater code, value) of each rater's last value for a unit, missing values left out
    (a raters × units matrix keeps the last of repeated values), on integer codes: no frame, no group-by."""
    unit_code, _ = pd.factorize(np.asarray(items))
    rater_code, raters_seen = pd.factorize(np.asarray(raters))
    values = np.asarray(scores, dtype=float)
    if len(values):
        pair = unit_code.astype(np.int64) * max(len(raters_seen), 1) + rater_code
        _, last_reversed = np.unique(pair[::-1], return_index=True)
        keep = np.zeros(len(values), dtype=bool)
        keep[len(values) - 1 - last_reversed] = True
        keep &= ~np.isnan(values)
        unit_code, rater_code, values = unit_code[keep], rater_code[keep], values[keep]
    return unit_code, rater_code, values


def _observed(level: str, units: np.ndarray, codes: np.ndarray, values: np.ndarray, m: np.ndarray,
              domain: np.ndarray, cumulative: np.ndarray, counts: np.ndarray) -> float:
    """Σ_u Σ_{i≠j in u} δ²(v_i, v_j) / (m_u − 1): per unit from its value counts (nominal, ordinal, ratio: the
    unit's counts n_uc against the V × V δ² of the distinct values; interval: 2 m_u Σ (v − v̄_u)²) instead of
    over the Σ m_u² ordered pairs within units, which for units rated by a hundred raters run to millions."""
    weight = 1.0 / (m - 1)
    if level == "interval":
        mean = np.bincount(units, weights=values) / m
        return float((2 * m * np.bincount(units, weights=(values - mean[units]) ** 2) * weight).sum())
    if level == "nominal":
        squares = np.bincount(units * len(domain) + codes, minlength=len(m) * len(domain)).astype(float) ** 2
        return float(((m * m - squares.reshape(len(m), len(domain)).sum(axis=1)) * weight).sum())
    if len(m) * len(domain) ** 2 > PAIR_WORK * (m * m).sum():  # many distinct values, few per unit: by pairs
        return _observed_pairs(level, units, codes if level == "ordinal" else values, m, cumulative, counts)
    per_unit = np.bincount(units * len(domain) + codes, minlength=len(m) * len(domain)).astype(float)
    per_unit = per_unit.reshape(len(m), len(domain))
    grid = np.arange(len(domain)) if level == "ordinal" else domain
    observed = 0.0
    for begin in range(0, len(domain), 1024):  # δ² a block of value rows at a time
        rows = slice(begin, begin + 1024)
        block = _delta(level, grid[rows, None], grid[None, :], cumulative, counts)
        observed += float(((per_unit[:, rows] @ block) * per_unit * weight[:, None]).sum())
    return observed


def _observed_pairs(level: str, units: np.ndarray, point: np.ndarray, m: np.ndarray, cumulative: np.ndarray,
                    counts: np.ndarray) -> float:
    """``_observed`` over every ordered pair of values within a unit (i == j included, δ = 0)."""
    order = np.argsort(units, kind="stable")
    units, point = units[order], point[order]
    size = m.astype(np.int64)[units]  # values in each value's unit
    starts = np.r_[0, np.flatnonzero(units[1:] != units[:-1]) + 1]
    first = np.repeat(starts, np.diff(np.r_[starts, len(units)]))  # start of each value's unit
    left = np.repeat(np.arange(len(units)), size)
    right = first[left] + (np.arange(len(left)) - np.repeat(np.cumsum(size) - size, size))
    return float((_delta(level, point[left], point[right], cumulative, counts) / (size[left] - 1)).sum())


def krippendorff_alpha(items: ArrayLike, raters: ArrayLike, scores: ArrayLike, *, level: str = "interval") -> float:
    """Krippendorff's alpha of a long table; ``level`` is nominal, ordinal, interval or ratio. A rater's
    repeated value for a unit counts once (the last, as in a raters × units matrix); NaN is missing."""
    if level not in ("nominal", "ordinal", "interval", "ratio"):
        raise ValueError(f"unknown level of measurement {level!r}")
    unit_code, _, values = _last_values(items, raters, scores)
    per_unit = np.bincount(unit_code) if len(unit_code) else np.zeros(0, dtype=int)
    pairable = per_unit[unit_code] >= 2
    values = values[pairable]
    if np.unique(values).size < 2:
        return float("nan")  # alpha is undefined without variation among pairable values
    _, units = np.unique(unit_code[pairable], return_inverse=True)
    domain, codes = np.unique(values, return_inverse=True)
    counts = np.bincount(codes).astype(float)
    cumulative = np.cumsum(counts)
    m = np.bincount(units).astype(float)  # pairable values in each unit
    observed = _observed(level, units, codes, values, m, domain, cumulative, counts)
    n = counts.sum()
    if level == "nominal":
        expected = n * n - (counts ** 2).sum()
    elif level == "interval":
        expected = 2 * (n * (counts * domain ** 2).sum() - (counts * domain).sum() ** 2)
    else:  # Σ_c Σ_k n_c n_k δ²_ck over the distinct values, a block of rows at a time
        grid = np.arange(len(domain)) if level == "ordinal" else domain
        expected = 0.0
        for begin in range(0, len(domain), 1024):
            rows = slice(begin, begin + 1024)
            expected += (counts[rows, None] * counts[None, :]
                         * _delta(level, grid[rows, None], grid[None, :], cumulative, counts)).sum()
    return float(1 - (n - 1) * observed / expected) if expected > 0 else float("nan")


def raters_needed(single_rater_icc: float, target: float = 0.9) -> float:
    """Spearman-Brown: raters whose mean reaches ``target`` reliability (rounded up by callers)."""
    if not 0 < target < 1:
        raise ValueError("the target must be between 0 and 1")
    if single_rater_icc <= 0 or math.isnan(single_rater_icc):
        return math.inf
    if single_rater_icc >= target:
        return 1.0
    return target * (1 - single_rater_icc) / (single_rater_icc * (1 - target))
