"""Score normalisations (STATISTICS.md section 2), vectorised.

- Magnitude estimation (Bard, Robertson & Sorace 1996): log10(max(value, 1) / reference_value).
- BWS ranks as scores: m + 1 - rank, m = number of responses ranked (best rank 1 -> score m).
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


def magnitude_log_ratio(values: ArrayLike, reference_values: ArrayLike) -> np.ndarray:
    """log10(max(v, 1) / r). Values below 1 (including 0) are floored at 1 so the log is defined."""
    v = np.maximum(np.asarray(values, dtype=float), 1.0)
    return np.log10(v / np.asarray(reference_values, dtype=float))


def rank_scores(ranks: ArrayLike, ranked: ArrayLike) -> np.ndarray:
    """m + 1 - rank, so higher is better and scores run 1..m."""
    return np.asarray(ranked, dtype=float) + 1.0 - np.asarray(ranks, dtype=float)
