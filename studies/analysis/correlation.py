"""Correlations with p-values and bootstrap BCa 95% confidence intervals.

Pearson, Spearman and Kendall tau-b (SciPy), each with its two-sided p-value; the CI comes from
``scipy.stats.bootstrap`` over pairs (paired resampling, BCa method). Used for human-vs-metric
agreement, criterion-vs-criterion (the seed's Table 9) and rater quality.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

METHODS = ("pearson", "spearman", "kendall")


@dataclass(frozen=True)
class Correlation:
    method: str
    r: float
    p: float
    n: int
    ci95: tuple[float, float] | None

    def as_dict(self) -> dict:
        return {"method": self.method, "r": self.r, "p": self.p, "n": self.n,
                "ci95": list(self.ci95) if self.ci95 else None}


def _statistic(method: str, x: np.ndarray, y: np.ndarray):
    if method == "pearson":
        return stats.pearsonr(x, y)
    if method == "spearman":
        return stats.spearmanr(x, y)
    if method == "kendall":
        return stats.kendalltau(x, y, variant="b")
    raise ValueError(f"unknown method {method!r}; use one of {METHODS}")


def correlate(x: ArrayLike, y: ArrayLike, method: str = "spearman", *, bootstrap: int = 0,
              seed: int = 0) -> Correlation:
    """r and p of one method; with ``bootstrap`` > 0 resamples, a paired BCa 95% CI."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(a) & np.isfinite(b)
    a, b = a[keep], b[keep]
    if a.size < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return Correlation(method, float("nan"), float("nan"), int(a.size), None)
    result = _statistic(method, a, b)
    ci = None
    if bootstrap:
        boot = stats.bootstrap((a, b), lambda u, v: _statistic(method, u, v).statistic, paired=True,
                               vectorized=False, n_resamples=bootstrap, method="BCa",
                               rng=np.random.default_rng(seed))
        ci = (float(boot.confidence_interval.low), float(boot.confidence_interval.high))
    return Correlation(method, float(result.statistic), float(result.pvalue), int(a.size), ci)


def correlate_all(x: ArrayLike, y: ArrayLike, *, bootstrap: int = 0, seed: int = 0) -> dict[str, Correlation]:
    return {m: correlate(x, y, m, bootstrap=bootstrap, seed=seed) for m in METHODS}
