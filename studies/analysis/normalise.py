"""Score normalisations (STATISTICS.md section 2), vectorised.

- Magnitude estimation (Bard, Robertson & Sorace 1996): log10(max(value, 1) / reference_value).
- Per-rater z-scores: (x − mean of the rater's scores) / SD of the rater's scores (ddof 1), which
  puts every rater (and every design) on a common scale for comparisons across conditions.
- BWS ranks as scores: m + 1 − rank, m = number of responses ranked (best rank 1 -> score m).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike


def magnitude_log_ratio(values: ArrayLike, reference_values: ArrayLike) -> np.ndarray:
    """log10(max(v, 1) / r). Values below 1 (including 0) are floored at 1 so the log is defined."""
    v = np.maximum(np.asarray(values, dtype=float), 1.0)
    return np.log10(v / np.asarray(reference_values, dtype=float))


def rank_scores(ranks: ArrayLike, ranked: ArrayLike) -> np.ndarray:
    """m + 1 − rank, so higher is better and scores run 1..m."""
    return np.asarray(ranked, dtype=float) + 1.0 - np.asarray(ranks, dtype=float)


def per_rater_z(values: ArrayLike, raters: ArrayLike) -> np.ndarray:
    """z-score each rating within its rater (sample SD). A rater who gave one value throughout
    (SD 0) gets 0 for every rating rather than a division by zero."""
    x = np.asarray(values, dtype=float)
    codes, _ = pd.factorize(np.asarray(raters))
    counts = np.bincount(codes).astype(float)
    means = np.bincount(codes, weights=x) / counts
    centred = x - means[codes]
    ss = np.bincount(codes, weights=centred**2)
    with np.errstate(divide="ignore", invalid="ignore"):
        sd = np.sqrt(ss / (counts - 1))
        z = centred / sd[codes]
    return np.where(np.isfinite(z), z, 0.0)
