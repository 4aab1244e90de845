"""Agreement beyond ICC, and planning.

- Krippendorff's alpha (Krippendorff 2004) through the ``krippendorff`` package: input is a
  raters × units matrix with NaN where a rater did not rate a unit; level of measurement interval,
  ordinal (Likert) or ratio (magnitude estimation).
- Spearman-Brown (planning): raters needed for a target average-measure ICC given the
  single-rater ICC ρ1: m = target(1 − ρ1) / (ρ1(1 − target)).
"""
from __future__ import annotations

import math

import krippendorff
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


def krippendorff_alpha(items: ArrayLike, raters: ArrayLike, scores: ArrayLike, *, level: str = "interval") -> float:
    """Krippendorff's alpha of a long table; ``level`` is nominal, ordinal, interval or ratio."""
    matrix = reliability_matrix(items, raters, scores)
    if np.unique(matrix[~np.isnan(matrix)]).size < 2:
        return float("nan")  # alpha is undefined without variation
    return float(krippendorff.alpha(reliability_data=matrix, level_of_measurement=level))


def raters_needed(single_rater_icc: float, target: float = 0.9) -> float:
    """Spearman-Brown: raters whose mean reaches ``target`` reliability (rounded up by callers)."""
    if not 0 < target < 1:
        raise ValueError("the target must be between 0 and 1")
    if single_rater_icc <= 0 or math.isnan(single_rater_icc):
        return math.inf
    if single_rater_icc >= target:
        return 1.0
    return target * (1 - single_rater_icc) / (single_rater_icc * (1 - target))
