"""Correlations with p-values and bootstrap BCa 95% confidence intervals.

Pearson, Spearman and Kendall tau-b (SciPy), each with its two-sided p-value; the CI comes from
``scipy.stats.bootstrap`` over pairs (paired resampling, BCa method), with the statistics written
to work along an axis so that all resamples are computed at once. Used for human-vs-metric
agreement, criterion-vs-criterion (the seed's Table 9) and rater quality.

With few pairs (n <= ``EXACT_MAX_N``, e.g. system-level correlations over 4 systems) the asymptotic
p-values are wrong: SciPy's Spearman p for r = 1 is 0 whatever n, while only 2 of the 4! orderings of 4
systems reach |r| = 1 (exact p = 1/12 = .083). There the p-value is the exact permutation p: the
statistic over all n! pairings, two-sided as ``scipy.stats.permutation_test`` defines it
(2 x the smaller tail, at most 1); ``p_method`` says which one a Correlation carries.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

METHODS = ("pearson", "spearman", "kendall")
EXACT_MAX_N = 8  # 8! = 40,320 pairings: all of them at once in a few MB


@dataclass(frozen=True)
class Correlation:
    method: str
    r: float
    p: float
    n: int
    ci95: tuple[float, float] | None
    p_method: str = "asymptotic"  # or "exact permutation" (n <= EXACT_MAX_N)

    def as_dict(self) -> dict:
        """JSON-safe: undefined values (NaN) become None."""
        def finite(v):
            return v if v is not None and np.isfinite(v) else None

        ci = [finite(v) for v in self.ci95] if self.ci95 else None
        return {"method": self.method, "r": finite(self.r), "p": finite(self.p), "n": self.n,
                "ci95": ci if ci and None not in ci else None, "p_method": self.p_method}


def _statistic(method: str, x: np.ndarray, y: np.ndarray):
    if method == "pearson":
        return stats.pearsonr(x, y)
    if method == "spearman":
        return stats.spearmanr(x, y)
    if method == "kendall":
        return stats.kendalltau(x, y, variant="b")
    raise ValueError(f"unknown method {method!r}; use one of {METHODS}")


def _pearson_along(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    x = x - x.mean(axis=axis, keepdims=True)
    y = y - y.mean(axis=axis, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sum(x * y, axis=axis) / np.sqrt(np.sum(x * x, axis=axis) * np.sum(y * y, axis=axis))


def _kendall_b_along(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """tau-b = (C − D) / sqrt((n0 − n1)(n0 − n2)) from the signs of all pairwise differences."""
    x, y = np.moveaxis(x, axis, -1), np.moveaxis(y, axis, -1)
    sx = np.sign(x[..., :, None] - x[..., None, :])
    sy = np.sign(y[..., :, None] - y[..., None, :])
    n = x.shape[-1]
    n0 = n * (n - 1) / 2
    concordance = np.sum(sx * sy, axis=(-2, -1)) / 2
    tied_x = (np.sum(sx == 0, axis=(-2, -1)) - n) / 2
    tied_y = (np.sum(sy == 0, axis=(-2, -1)) - n) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        return concordance / np.sqrt((n0 - tied_x) * (n0 - tied_y))


def _vectorised(method: str):
    """The statistic for scipy.stats.bootstrap(vectorized=True): works along the last axis."""
    if method == "pearson":
        return lambda u, v, axis=-1: _pearson_along(u, v, axis)
    if method == "spearman":
        return lambda u, v, axis=-1: _pearson_along(stats.rankdata(u, axis=axis), stats.rankdata(v, axis=axis), axis)
    return lambda u, v, axis=-1: _kendall_b_along(u, v, axis)


def exact_permutation_p(x: ArrayLike, y: ArrayLike, method: str = "spearman") -> float:
    """Two-sided exact permutation p of r(x, y): r over every one of the n! orderings of ``y`` against
    ``x``, p = min(1, 2 min(P(r* >= r), P(r* <= r))), ``scipy.stats.permutation_test``'s definition with
    its relative tolerance for ties of the statistic. n at most ``EXACT_MAX_N``."""
    import itertools

    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.size > EXACT_MAX_N:
        raise ValueError(f"exact permutation p: at most {EXACT_MAX_N} pairs, got {a.size}")
    along = _vectorised(method)
    orders = np.array(list(itertools.permutations(range(a.size))))
    with np.errstate(invalid="ignore", divide="ignore"):
        null = along(np.broadcast_to(a, orders.shape), b[orders], axis=-1)
        observed = float(along(a[None, :], b[None, :], axis=-1)[0])
    gamma = abs(1e-14 * observed)
    greater = np.mean(null >= observed - gamma)
    less = np.mean(null <= observed + gamma)
    return float(min(1.0, 2 * min(greater, less)))


def correlate(x: ArrayLike, y: ArrayLike, method: str = "spearman", *, bootstrap: int = 0,
              seed: int = 0) -> Correlation:
    """r and p of one method (the exact permutation p with at most ``EXACT_MAX_N`` pairs); with
    ``bootstrap`` > 0 resamples, a paired BCa 95% CI."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(a) & np.isfinite(b)
    a, b = a[keep], b[keep]
    if a.size < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return Correlation(method, float("nan"), float("nan"), int(a.size), None)
    result = _statistic(method, a, b)
    ci = None
    if bootstrap:
        # Kendall builds n x n sign matrices per resample: bound the memory with smaller batches.
        batch = max(1, int(2e7 // (a.size * a.size))) if method == "kendall" else None
        boot = stats.bootstrap((a, b), _vectorised(method), paired=True, vectorized=True, batch=batch,
                               n_resamples=bootstrap, method="BCa", rng=np.random.default_rng(seed))
        ci = (float(boot.confidence_interval.low), float(boot.confidence_interval.high))
    if a.size <= EXACT_MAX_N:
        return Correlation(method, float(result.statistic), exact_permutation_p(a, b, method), int(a.size), ci,
                           p_method="exact permutation")
    return Correlation(method, float(result.statistic), float(result.pvalue), int(a.size), ci)


def correlate_all(x: ArrayLike, y: ArrayLike, *, bootstrap: int = 0, seed: int = 0) -> dict[str, Correlation]:
    return {m: correlate(x, y, m, bootstrap=bootstrap, seed=seed) for m in METHODS}


def correlation_difference(x1: ArrayLike, x2: ArrayLike, y: ArrayLike, method: str = "spearman", *,
                           resamples: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """r(x1, y) − r(x2, y) for two metrics scored on the same items, and its paired-bootstrap 95 % interval
    (``scipy.stats.bootstrap``, items resampled with all three values kept together, percentile method):
    (Δ, low, high). Items where any value is missing are left out."""
    a, b, c = (np.asarray(v, dtype=float) for v in (x1, x2, y))
    keep = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
    a, b, c = a[keep], b[keep], c[keep]
    along = _vectorised(method)
    delta = float(_statistic(method, a, c).statistic - _statistic(method, b, c).statistic)
    if a.size < 3 or not resamples:
        return delta, float("nan"), float("nan")
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = stats.bootstrap((a, b, c), lambda u, v, w, axis=-1: along(u, w, axis) - along(v, w, axis),
                               paired=True, vectorized=True, n_resamples=resamples, method="percentile",
                               rng=np.random.default_rng(seed))
    return delta, float(boot.confidence_interval.low), float(boot.confidence_interval.high)


def ratio_difference(right1: ArrayLike, right2: ArrayLike, total: ArrayLike, *, resamples: int = 2000,
                     seed: int = 0) -> tuple[float, float, float]:
    """Σright1/Σtotal − Σright2/Σtotal over groups (e.g. DailyDialog++ contexts: pairs ranked right by two
    metrics, out of the pairs), with a paired-bootstrap 95 % interval over groups (percentile method)."""
    a, b, n = (np.asarray(v, dtype=float) for v in (right1, right2, total))
    delta = float((a.sum() - b.sum()) / n.sum())
    if a.size < 2 or not resamples:
        return delta, float("nan"), float("nan")
    boot = stats.bootstrap((a, b, n), lambda u, v, m, axis=-1: (u.sum(axis) - v.sum(axis)) / m.sum(axis),
                           paired=True, vectorized=True, n_resamples=resamples, method="percentile",
                           rng=np.random.default_rng(seed))
    return delta, float(boot.confidence_interval.low), float(boot.confidence_interval.high)
