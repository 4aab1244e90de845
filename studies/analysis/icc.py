"""Intraclass correlation for complete and incomplete (sparse) rating designs, vectorised.

Data is a long table (item, rater, score). Group sums use ``np.bincount`` on integer codes; nothing
loops over ratings or raters in Python.

Complete designs (every rater rates every item once), two-way ANOVA mean squares
(Shrout & Fleiss 1979; McGraw & Wong 1996):

    MSR = k Σ_i (x̄_i − x̄)² / (n−1)        MSC = n Σ_j (x̄_j − x̄)² / (k−1)
    MSE = (SST − SSR − SSC) / ((n−1)(k−1))   MSW = (SSC + SSE) / (n(k−1))

    ICC(1,1) = (MSR−MSW)/(MSR+(k−1)MSW)      ICC(1,k) = (MSR−MSW)/MSR
    ICC(A,1) = (MSR−MSE)/(MSR+(k−1)MSE+k(MSC−MSE)/n)
    ICC(A,k) = (MSR−MSE)/(MSR+(MSC−MSE)/n)
    ICC(C,1) = (MSR−MSE)/(MSR+(k−1)MSE)      ICC(C,k) = (MSR−MSE)/MSR

F tests (H0: ρ = 0): F = MSR/MSW on (n−1, n(k−1)) for the one-way forms, MSR/MSE on
(n−1, (n−1)(k−1)) for the others. 95% CIs: exact F bounds for the one-way and consistency forms;
for agreement the McGraw & Wong approximation with
v = (a·MSC + b·MSE)² / ((a·MSC)²/(k−1) + (b·MSE)²/df_E), a = kρ/(n(1−ρ)), b = 1 + kρ(n−1)/(n(1−ρ)),
ρ = ICC(A,1); ICC(A,k) bounds are the Spearman-Brown transform of the ICC(A,1) bounds. These equal
``pingouin.intraclass_corr`` (full precision) and R psych::ICC.

Incomplete designs keep every rating (no listwise deletion, no imputation):

- one-way forms (Ebel 1951): k_i ratings of item i, N = Σk_i, k0 = (N − Σk_i²/N)/(n−1);
  SSB = Σ k_i (x̄_i − x̄)² on (n−1) df, SSW = SST − SSB on (N−n) df; k0 replaces k;
- two-way forms (Brueckl 2011, irrNA): rater bias removed by iterated ipsation (Greer & Dunlap 1997)
  — subtract each rater's mean deviation from the item means (on complete data: add x̄ − x̄_j),
  repeat until the latest correction's η² ≤ 1e-6 — then
  MSR and MSE from the corrected data with residual df (n−1)(k̄−1), k̄ = N/n; MSC from the raw rater
  means, SSC = Σ n_j (x̄_j − x̄)² on (k−1) df; k0 replaces k throughout.

On complete data k0 = k̄ = k and one ipsation pass removes the rater effect exactly, so the
incomplete formulas reduce to the complete ones.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy.stats import f as f_dist

FORMS = ("ICC(1,1)", "ICC(A,1)", "ICC(C,1)", "ICC(1,k)", "ICC(A,k)", "ICC(C,k)")
IPSATION_TOLERANCE = 1e-6
MAX_IPSATION_ROUNDS = 1000


class ICCInputError(ValueError):
    """The ratings cannot give an ICC (too few items or raters, duplicates, non-finite scores)."""


@dataclass(frozen=True)
class ICCForm:
    value: float
    F: float
    df1: float
    df2: float
    p: float
    ci95: tuple[float, float]

    def as_dict(self) -> dict[str, Any]:
        return {"value": self.value, "F": self.F, "df1": self.df1, "df2": self.df2, "p": self.p,
                "ci95": [self.ci95[0], self.ci95[1]]}


@dataclass(frozen=True)
class ICCResult:
    n_items: int
    n_raters: int
    n_ratings: int
    k0: float
    method: str  # "complete" | "incomplete"
    icc: dict[str, ICCForm] = field(default_factory=dict)
    ipsation_rounds: int = 0

    def __getitem__(self, form: str) -> ICCForm:
        return self.icc[form]

    def as_dict(self) -> dict[str, Any]:
        return {"n_items": self.n_items, "n_raters": self.n_raters, "n_ratings": self.n_ratings, "k0": self.k0,
                "method": self.method, "icc": {name: self.icc[name].as_dict() for name in FORMS}}


@dataclass(frozen=True)
class _Coded:
    item: np.ndarray
    rater: np.ndarray
    score: np.ndarray
    n: int
    k: int


def _codes(items: ArrayLike, raters: ArrayLike, scores: ArrayLike) -> _Coded:
    score = np.asarray(scores, dtype=float)
    item, _ = pd.factorize(np.asarray(items), sort=False)
    rater, _ = pd.factorize(np.asarray(raters), sort=False)
    if not (len(item) == len(rater) == len(score)):
        raise ICCInputError("items, raters and scores must have the same length")
    if (item < 0).any() or (rater < 0).any():
        raise ICCInputError("item and rater labels must not be missing")
    if not np.isfinite(score).all():
        raise ICCInputError("scores must be finite numbers (drop missing ratings first)")
    n, k = int(item.max(initial=-1)) + 1, int(rater.max(initial=-1)) + 1
    if n < 2:
        raise ICCInputError(f"an ICC needs at least 2 items, got {n}")
    if k < 2:
        raise ICCInputError(f"an ICC needs at least 2 raters, got {k}")
    pairs = np.sort(item.astype(np.int64) * k + rater)  # sorting finds repeats faster than np.unique
    if np.any(pairs[1:] == pairs[:-1]):
        raise ICCInputError("a rater rated the same item more than once; keep one rating per item and rater")
    return _Coded(item, rater, score, n, k)


def _f_bounds(F: float, df1: float, df2: float) -> tuple[float, float]:
    """FL = F / F_.975(df1, df2), FU = F · F_.975(df2, df1)."""
    return F / f_dist.ppf(0.975, df1, df2), F * f_dist.ppf(0.975, df2, df1)


def _forms(*, n: int, k0: float, msb: float, msw: float, msr: float, msc: float, mse: float,
           df_w: float, df_c: float, df_e: float) -> dict[str, ICCForm]:
    """The six ICCs with F tests and CIs from mean squares. ``msb``/``msw`` are the one-way
    between/within-items mean squares, ``msr``/``msc``/``mse`` the two-way ones (msb = msr on
    complete data); k0 is k for complete designs."""
    df_r = n - 1
    icc1 = (msb - msw) / (msb + (k0 - 1) * msw)
    icc1k = (msb - msw) / msb
    icca = (msr - mse) / (msr + (k0 - 1) * mse + k0 * (msc - mse) / n)
    iccak = (msr - mse) / (msr + (msc - mse) / n)
    iccc = (msr - mse) / (msr + (k0 - 1) * mse)
    icccn = (msr - mse) / msr

    f1 = msb / msw
    p1 = f_dist.sf(f1, df_r, df_w)
    fe = msr / mse
    pe = f_dist.sf(fe, df_r, df_e)

    f1l, f1u = _f_bounds(f1, df_r, df_w)
    fcl, fcu = _f_bounds(fe, df_r, df_e)

    # McGraw & Wong (1996) agreement CI, case 2A, with the Satterthwaite-type df v.
    a = k0 * icca / (n * (1 - icca))
    b = 1 + k0 * icca * (n - 1) / (n * (1 - icca))
    v = (a * msc + b * mse) ** 2 / ((a * msc) ** 2 / df_c + (b * mse) ** 2 / df_e)
    fu_star = f_dist.ppf(0.975, df_r, v)
    fl_star = f_dist.ppf(0.975, v, df_r)
    spread = k0 * msc + (k0 * n - k0 - n) * mse
    al = n * (msr - fu_star * mse) / (fu_star * spread + n * msr)
    au = n * (fl_star * msr - mse) / (spread + n * fl_star * msr)

    def spearman_brown(r: float) -> float:
        return k0 * r / (1 + (k0 - 1) * r)

    return {
        "ICC(1,1)": ICCForm(icc1, f1, df_r, df_w, p1, ((f1l - 1) / (f1l + k0 - 1), (f1u - 1) / (f1u + k0 - 1))),
        "ICC(A,1)": ICCForm(icca, fe, df_r, df_e, pe, (al, au)),
        "ICC(C,1)": ICCForm(iccc, fe, df_r, df_e, pe, ((fcl - 1) / (fcl + k0 - 1), (fcu - 1) / (fcu + k0 - 1))),
        "ICC(1,k)": ICCForm(icc1k, f1, df_r, df_w, p1, (1 - 1 / f1l, 1 - 1 / f1u)),
        "ICC(A,k)": ICCForm(iccak, fe, df_r, df_e, pe, (spearman_brown(al), spearman_brown(au))),
        "ICC(C,k)": ICCForm(icccn, fe, df_r, df_e, pe, (1 - 1 / fcl, 1 - 1 / fcu)),
    }


def _sums(codes: np.ndarray, values: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    counts = np.bincount(codes, minlength=size).astype(float)
    return np.bincount(codes, weights=values, minlength=size), counts


def _complete(c: _Coded) -> tuple[dict[str, ICCForm], float]:
    n, k, x = c.n, c.k, c.score
    grand = x.mean()
    item_sum, _ = _sums(c.item, x, n)
    rater_sum, _ = _sums(c.rater, x, k)
    ssr = k * np.sum((item_sum / k - grand) ** 2)
    ssc = n * np.sum((rater_sum / n - grand) ** 2)
    sst = np.sum((x - grand) ** 2)
    sse = sst - ssr - ssc
    df_e = (n - 1) * (k - 1)
    msr = ssr / (n - 1)
    forms = _forms(n=n, k0=float(k), msb=msr, msw=(ssc + sse) / (n * (k - 1)), msr=msr,
                   msc=ssc / (k - 1), mse=sse / df_e, df_w=n * (k - 1), df_c=k - 1, df_e=df_e)
    return forms, float(k)


def ipsate(item: np.ndarray, rater: np.ndarray, score: np.ndarray, n: int, k: int, *,
           tolerance: float = IPSATION_TOLERANCE) -> tuple[np.ndarray, int]:
    """Remove rater bias by iterated ipsation (Greer & Dunlap 1997; Brueckl 2011).

    A rater's bias is their mean deviation from the means of the items they rated; subtracting it
    from their ratings is, on complete data, adding (grand mean − rater mean). On incomplete data
    the correction moves the item means, so it is repeated until the latest correction explains
    ≤ ``tolerance`` of the total sum of squares (its η²). Returns the corrected scores and the
    number of corrections applied."""
    y = score.copy()
    rater_counts = np.bincount(rater, minlength=k).astype(float)
    item_counts = np.bincount(item, minlength=n).astype(float)
    rounds = 0
    for _ in range(MAX_IPSATION_ROUNDS):
        sst = np.sum((y - y.mean()) ** 2)
        residual = y - (np.bincount(item, weights=y, minlength=n) / item_counts)[item]
        correction = -np.bincount(rater, weights=residual, minlength=k) / rater_counts
        if sst == 0 or np.sum(rater_counts * correction**2) / sst <= tolerance:
            break
        y += correction[rater]
        rounds += 1
    return y, rounds


def _incomplete(c: _Coded) -> tuple[dict[str, ICCForm], float, int]:
    n, k, x = c.n, c.k, c.score
    N = x.size
    grand = x.mean()
    item_sum, k_i = _sums(c.item, x, n)
    rater_sum, n_j = _sums(c.rater, x, k)
    k0 = (N - np.sum(k_i**2) / N) / (n - 1)
    kbar = N / n

    # One-way (Ebel 1951).
    ssb = np.sum(k_i * (item_sum / k_i - grand) ** 2)
    ssw = np.sum((x - grand) ** 2) - ssb
    df_w = N - n

    # Two-way (Brueckl 2011): rater effect from raw rater means; MSR, MSE from ipsated scores.
    ssc = np.sum(n_j * (rater_sum / n_j - grand) ** 2)
    y, rounds = ipsate(c.item, c.rater, x, n, k)
    y_grand = y.mean()
    y_item_sum, _ = _sums(c.item, y, n)
    ssr_y = np.sum(k_i * (y_item_sum / k_i - y_grand) ** 2)
    sse_y = np.sum((y - y_grand) ** 2) - ssr_y
    df_e = (n - 1) * (kbar - 1)

    forms = _forms(n=n, k0=k0, msb=ssb / (n - 1), msw=ssw / df_w, msr=ssr_y / (n - 1), msc=ssc / (k - 1),
                   mse=sse_y / df_e, df_w=df_w, df_c=k - 1, df_e=df_e)
    return forms, float(k0), rounds


def icc(items: ArrayLike, raters: ArrayLike, scores: ArrayLike, *, method: str = "auto") -> ICCResult:
    """All six ICC forms for a long table of ratings.

    ``method``: "auto" (complete formulas when every rater rated every item once, else the
    incomplete ones), "complete" (refuses incomplete data) or "incomplete" (always the generalised
    formulas; on complete data they give the same numbers)."""
    c = _codes(items, raters, scores)
    is_complete = c.score.size == c.n * c.k
    if method == "complete" and not is_complete:
        raise ICCInputError(f"the design is incomplete ({c.score.size} ratings for {c.n} items × {c.k} raters)")
    if method not in ("auto", "complete", "incomplete"):
        raise ValueError(f"unknown method {method!r}")
    use_complete = is_complete and method != "incomplete"
    with np.errstate(divide="ignore", invalid="ignore"):
        if use_complete:
            forms, k0 = _complete(c)
            rounds = 1
        else:
            forms, k0, rounds = _incomplete(c)
    return ICCResult(n_items=c.n, n_raters=c.k, n_ratings=int(c.score.size), k0=k0,
                     method="complete" if use_complete else "incomplete", icc=forms, ipsation_rounds=rounds)


def icc_frame(frame: pd.DataFrame, *, item: str = "item", rater: str = "rater", score: str = "score",
              method: str = "auto") -> ICCResult:
    return icc(frame[item].to_numpy(), frame[rater].to_numpy(), frame[score].to_numpy(), method=method)
