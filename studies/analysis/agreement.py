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


def krippendorff_alpha(items: ArrayLike, raters: ArrayLike, scores: ArrayLike, *, level: str = "interval") -> float:
    """Krippendorff's alpha of a long table; ``level`` is nominal, ordinal, interval or ratio. A rater's
    repeated value for a unit counts once (the last, as in a raters × units matrix); NaN is missing."""
    if level not in ("nominal", "ordinal", "interval", "ratio"):
        raise ValueError(f"unknown level of measurement {level!r}")
    frame = pd.DataFrame({"unit": np.asarray(items), "rater": np.asarray(raters),
                          "value": np.asarray(scores, dtype=float)})
    frame = frame.drop_duplicates(["unit", "rater"], keep="last").dropna(subset=["value"])
    unit_code = pd.factorize(frame["unit"])[0]
    per_unit = np.bincount(unit_code) if len(unit_code) else np.zeros(0, dtype=int)
    pairable = per_unit[unit_code] >= 2
    values = frame["value"].to_numpy()[pairable]
    if np.unique(values).size < 2:
        return float("nan")  # alpha is undefined without variation among pairable values
    units = unit_code[pairable]
    order = np.argsort(units, kind="stable")
    units, values = units[order], values[order]
    domain, codes = np.unique(values, return_inverse=True)
    counts = np.bincount(codes).astype(float)
    cumulative = np.cumsum(counts)
    m = np.bincount(units)[units]  # values in each value's unit
    starts = np.r_[0, np.flatnonzero(units[1:] != units[:-1]) + 1]
    first = np.repeat(starts, np.diff(np.r_[starts, len(units)]))  # start of each value's unit
    left = np.repeat(np.arange(len(units)), m)  # every ordered pair within a unit, i == j included (δ = 0)
    right = first[left] + (np.arange(len(left)) - np.repeat(np.cumsum(m) - m, m))
    point = codes if level in ("ordinal", "nominal") else values
    observed = (_delta(level, point[left], point[right], cumulative, counts) / (m[left] - 1)).sum()
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
