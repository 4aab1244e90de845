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

Incomplete designs keep every rating (no listwise deletion, no imputation) and follow R irrNA's
``iccNA`` (Brueckl 2011) step by step, as ``docs/STATISTICS.md`` §1 spells out. With k_i ratings of
item i, n_j ratings by rater j, N = Σk_i, k̄ = N/n, k0 = (N − Σk_i²/N)/(n−1), G the grand mean, m_i
the item means and r_j the rater means:

- one-way (Ebel 1951): SS_b = Σ k_i (m_i − G)² on n−1 df, SS_w = Σ (x − m_i)² on n(k̄−1) df;
- two-way, default ``ipsation="grand-mean"`` (irrNA ``oneG = TRUE``): ipsate once,
  y = x + (G − r_j) (a second pass would find every corrected rater mean equal to G, so irrNA's
  iteration stops at once); m'_i = item means of y; SS_b' = Σ k_i (m'_i² − G²) floored at 0;
  SS_res = Σ y² − Σ k_i m'_i² on df_res = (n−1)(k̄−1); SS_r = Σ n_j (r_j² − G²) from the
  *uncorrected* rater means on k−1 df;
- ``ipsation="sub-means"`` (irrNA ``oneG = FALSE``, Brueckl 2011 eq. 4.30): a rater's bias is
  s_j − r_j, s_j the mean of the item means over the items rater j rated; repeated on the
  corrected data while the latest correction's η² = Σ n_j d_j² / SS_tot exceeds 1e-6 (irrNA's
  0.01/Cs, Cs = 10000), the failing correction not applied; SS_r = Σ n_j (r_j² − s_j²) with the
  sub-means of the last applied correction.

The forms then use k0 in place of k; C forms: F = MS_b'/MS_res on (n−1, df_res) and the complete
C-form CIs; A forms: the McGraw & Wong CI with k0 and v from MS_r, MS_res, df_res; ICC(A,k) bounds
the Spearman-Brown transform (with k0) of the ICC(A,1) bounds (``ak_interval="irrna"`` gives
irrNA's own A,k interval, which puts ICC(A,k) into v and differs by ~1e-4); A-form p-values
F = MS_b'/MS_res on (n−1, df_res) (McGraw & Wong with ρ0 = 0).

Degenerate data get irrNA's defined values and an ``ICCWarning`` (also listed in
``ICCResult.warnings``): zero within-item variance, zero residual variance, zero variance between
items, a ratio whose df falls below 0.1, a rater with one rating or no variance. Data with no
variance at all, or no item rated twice, have no ICC and raise ``ICCInputError``.

On complete data k0 = k̄ = k and the single ipsation removes the rater effect exactly, so the
incomplete formulas reduce to the complete ones.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import special

FORMS = ("ICC(1,1)", "ICC(A,1)", "ICC(C,1)", "ICC(1,k)", "ICC(A,k)", "ICC(C,k)")
IPSATIONS = ("grand-mean", "sub-means")
AK_INTERVALS = ("spearman-brown", "irrna")
IPSATION_TOLERANCE = 1e-6  # irrNA: 0.01 / Cs with Cs = 10000
MAX_IPSATION_ROUNDS = 1000
ZERO_SS = 1e-12  # a sum of squares below this share of the total is rounding noise, i.e. zero
MIN_DF = 0.1  # irrNA's floor for the Satterthwaite df of the ICC(A,1) interval
Q = 0.975


class ICCInputError(ValueError):
    """The ratings cannot give an ICC (too few items or raters, duplicates, non-finite scores)."""


class ICCWarning(UserWarning):
    """Degenerate data: the ICC is defined by convention (irrNA's), not by the usual formula."""


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
    ipsation: str | None = None  # None on the complete path
    warnings: tuple[str, ...] = ()
    anova: dict[str, float] = field(default_factory=dict)

    def __getitem__(self, form: str) -> ICCForm:
        return self.icc[form]

    def as_dict(self) -> dict[str, Any]:
        return {"n_items": self.n_items, "n_raters": self.n_raters, "n_ratings": self.n_ratings, "k0": self.k0,
                "method": self.method, "ipsation": self.ipsation, "warnings": list(self.warnings),
                "anova": dict(self.anova), "icc": {name: self.icc[name].as_dict() for name in FORMS}}


@dataclass(frozen=True)
class _Coded:
    item: np.ndarray
    rater: np.ndarray
    score: np.ndarray
    n: int
    k: int
    rater_labels: np.ndarray


@dataclass(frozen=True)
class MeanSquares:
    """What the six forms are computed from: one-way (``b``, ``w``) and two-way (``items``,
    ``raters``, ``res``) mean squares with their df; ``k0`` = k on complete data."""
    n: int
    k0: float
    b: float
    w: float
    df_w: float
    items: float
    raters: float
    res: float
    df_raters: float
    df_res: float


def _codes(items: ArrayLike, raters: ArrayLike, scores: ArrayLike) -> _Coded:
    score = np.asarray(scores, dtype=float)
    item, _ = pd.factorize(np.asarray(items), sort=False)
    rater, rater_labels = pd.factorize(np.asarray(raters), sort=False)
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
    if score.size == n:
        raise ICCInputError("no item has two ratings; an ICC needs items rated by more than one rater")
    if score.min() == score.max():
        raise ICCInputError(f"all {score.size} ratings are {score[0]:g}: without any variance there is no ICC")
    return _Coded(item, rater, score, n, k, np.asarray(rater_labels))


def _zero(ss: float, total: float) -> float:
    """Sums of squares within rounding noise of zero (or below it) are zero, so that irrNA's
    exact-zero cases are recognised after floating-point subtraction."""
    return 0.0 if ss <= ZERO_SS * total else float(ss)


def _f_ppf(q: float, dfn: float, dfd: float) -> np.float64:
    """``scipy.stats.f.ppf(q, dfn, dfd)``: the same function (``scipy.special.fdtri``) without the
    distribution object's argument handling, which cost ~0.5 ms a call, eight calls a cell, in a report of
    many cells (NaN for invalid df, as there)."""
    return special.fdtri(dfn, dfd, q)


def _f_sf(x: float, dfn: float, dfd: float) -> np.float64:
    """``scipy.stats.f.sf(x, dfn, dfd)`` through ``scipy.special.fdtrc`` (1 at and below 0, as there)."""
    return np.float64(1.0) if x <= 0 else special.fdtrc(dfn, dfd, x)


def _f_bounds(F: float, df1: float, df2: float) -> tuple[float, float]:
    """FL = F / F_.975(df1, df2), FU = F · F_.975(df2, df1)."""
    return F / _f_ppf(Q, df1, df2), F * _f_ppf(Q, df2, df1)


def _agreement_df(rho: float, m: MeanSquares) -> float:
    """McGraw & Wong's (1996) Satterthwaite df v for the agreement CI at ICC(A,1) = rho (k0 for k)."""
    a = m.k0 * rho / (m.n * (1 - rho))
    b = 1 + m.k0 * rho * (m.n - 1) / (m.n * (1 - rho))
    return (a * m.raters + b * m.res) ** 2 / ((a * m.raters) ** 2 / m.df_raters + (b * m.res) ** 2 / m.df_res)


def _forms(m: MeanSquares, *, ak_interval: str, notes: list[str]) -> dict[str, ICCForm]:
    """The six ICCs with F tests and 95% CIs from mean squares, in irrNA's order of computation
    including its conventions for degenerate data (McGraw & Wong 1996; Brueckl 2011)."""
    n, k0, df1 = m.n, np.float64(m.k0), np.float64(m.n - 1)
    B1, W = np.float64(m.b), np.float64(m.w)
    B, C, R = np.float64(m.items), np.float64(m.raters), np.float64(m.res)

    # One-way (Ebel 1951).
    icc11, icc1k = (B1 - W) / (B1 + (k0 - 1) * W), (B1 - W) / B1
    f1 = B1 / W
    p1 = _f_sf(f1, df1, m.df_w)
    fl1, fu1 = _f_bounds(f1, df1, m.df_w)
    ci11: list[float] = [(fl1 - 1) / (fl1 + k0 - 1), (fu1 - 1) / (fu1 + k0 - 1)]
    ci1k = [1 - 1 / fl1, 1 - 1 / fu1]

    # Consistency.
    icc31: float = (B - R) / (B + (k0 - 1) * R)
    icc3k: float = (B - R) / B
    f3: float = B / R
    p31: float = _f_sf(f3, df1, m.df_res)
    p3k = p31
    fl3, fu3 = _f_bounds(f3, df1, m.df_res)
    ci31: list[float] = [(fl3 - 1) / (fl3 + k0 - 1), (fu3 - 1) / (fu3 + k0 - 1)]
    ci3k: list[float] = [1 - 1 / fl3, 1 - 1 / fu3]

    # Absolute agreement; the p-value is McGraw & Wong's with rho0 = 0: F = B/R on (n-1, df_res).
    icc21 = (B - R) / (B + (k0 - 1) * R + k0 / n * (C - R))
    icc2k = (B - R) / max(B + (C - R) / n, np.float64(0.0))
    p21: float = p31
    p2k: float = p31
    v = _agreement_df(icc21, m)
    if not v >= MIN_DF:
        notes.append("the df for the ICC(A,1) interval fall below 0.1; its bounds use df = 0.1")
        v = MIN_DF
    fl_star, fu_star = _f_ppf(Q, df1, v), _f_ppf(Q, v, df1)
    spread = k0 * C + (k0 * n - k0 - n) * R
    l21 = n * (B - fl_star * R) / (fl_star * spread + n * B)
    if np.isinf(fl_star):
        notes.append("the F quantile for the lower ICC(A,1) bound is infinite; the bound is set to the ICC")
        l21 = icc21
    u21 = n * (fu_star * B - R) / (spread + n * fu_star * B)
    ci2k: list[float]
    if ak_interval == "spearman-brown":
        ci2k = [k0 * x / (1 + (k0 - 1) * x) for x in (l21, u21)]
    else:  # irrNA's own: v evaluated at ICC(A,k)
        vk = _agreement_df(icc2k, m)
        flk, fuk = _f_ppf(Q, df1, vk), _f_ppf(Q, vk, df1)
        ci2k = [n * (B - flk * R) / (flk * (C - R) + n * B), n * (fuk * B - R) / (C - R + n * fuk * B)]

    # irrNA's conventions for degenerate data, in its order.
    if W == 0 and B1 >= 0:
        notes.append("no variance within items: ICC(1) and ICC(A,k) bounds are 1, the A-form p-values 0")
        ci11, ci2k, p21, p2k = [1.0, 1.0], [1.0, 1.0], 0.0, 0.0
    if icc2k == -np.inf:
        notes.append("ICC(A,k) is minus infinity (residual variance exceeds all other variance)")
        ci2k = [-np.inf, -np.inf]
    if B > 0 and R == 0:
        notes.append("no residual variance: the ICC(C,1) bounds are 1 and the A-form p-values 0")
        ci31, p21, p2k = [1.0, 1.0], 0.0, 0.0
    if B == 0 and R == 0:
        notes.append("variance only between raters: C forms at their minimum, A and C p-values 1")
        ci2k, p21, p2k = [0.0, 0.0], 1.0, 1.0
        icc31, icc3k = -1 / (k0 - 1), -np.inf
        ci31, ci3k, p31, p3k, f3 = [icc31, icc31], [icc3k, icc3k], 1.0, 1.0, 0.0
    if B == 0 and R > 0:
        notes.append("no variance between items: the C and A forms are at their minimum")
    if W > 0 and B1 == 0:
        notes.append("no variance between item means: the one-way forms are at their minimum")

    def form(value, F, d2, p, ci) -> ICCForm:
        return ICCForm(float(value), float(F), float(df1), float(d2), float(p), (float(ci[0]), float(ci[1])))

    return {
        "ICC(1,1)": form(icc11, f1, m.df_w, p1, ci11),
        "ICC(A,1)": form(icc21, f3, m.df_res, p21, [l21, u21]),
        "ICC(C,1)": form(icc31, f3, m.df_res, p31, ci31),
        "ICC(1,k)": form(icc1k, f1, m.df_w, p1, ci1k),
        "ICC(A,k)": form(icc2k, f3, m.df_res, p2k, ci2k),
        "ICC(C,k)": form(icc3k, f3, m.df_res, p3k, ci3k),
    }


def _sums(codes: np.ndarray, values: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    counts = np.bincount(codes, minlength=size).astype(float)
    return np.bincount(codes, weights=values, minlength=size), counts


def _complete(c: _Coded) -> tuple[MeanSquares, dict[str, float]]:
    n, k, x = c.n, c.k, c.score
    grand = x.mean()
    item_sum, _ = _sums(c.item, x, n)
    rater_sum, _ = _sums(c.rater, x, k)
    sst = np.sum((x - grand) ** 2)
    ssr = _zero(k * np.sum((item_sum / k - grand) ** 2), sst)
    ssc = n * np.sum((rater_sum / n - grand) ** 2)
    sse = _zero(sst - ssr - ssc, sst)
    df_e = (n - 1) * (k - 1)
    msr = ssr / (n - 1)
    ms = MeanSquares(n=n, k0=float(k), b=msr, w=_zero(ssc + sse, sst) / (n * (k - 1)), df_w=n * (k - 1), items=msr,
                     raters=ssc / (k - 1), res=sse / df_e, df_raters=k - 1, df_res=df_e)
    return ms, {"ss_between_items": ssr, "ss_within_items": ssc + sse, "ss_items": ssr, "ss_raters": ssc,
                "ss_residual": sse, "ss_total": sst, "df_within_items": n * (k - 1), "df_residual": df_e}


def ipsate(item: np.ndarray, rater: np.ndarray, score: np.ndarray, n: int, k: int, *,
           ipsation: str = "grand-mean", tolerance: float = IPSATION_TOLERANCE
           ) -> tuple[np.ndarray, int, np.ndarray]:
    """Remove the raters' biases (Greer & Dunlap 1997; Brueckl 2011; irrNA ``iccNA``).

    ``"grand-mean"``: y = x + (G − r_j), one pass (a second finds every rater mean equal to G).
    ``"sub-means"``: y = x + (s_j − r_j), s_j the mean of the item means over the items rater j
    rated; on incomplete data this moves the item means, so it is repeated on the corrected data
    while the latest correction's η² = Σ n_j d_j² / SS_tot exceeds ``tolerance`` (SS_tot of the
    original scores); the first correction is always applied, a failing one never.
    Returns the corrected scores, the number of corrections applied and the centre each rater was
    corrected towards in the last applied correction (G, or the sub-means s_j)."""
    if ipsation not in IPSATIONS:
        raise ValueError(f"unknown ipsation {ipsation!r} (one of {', '.join(IPSATIONS)})")
    k_i = np.bincount(item, minlength=n).astype(float)
    n_j = np.bincount(rater, minlength=k).astype(float)
    grand = score.mean()

    def rater_means(values: np.ndarray) -> np.ndarray:
        return np.bincount(rater, weights=values, minlength=k) / n_j

    def sub_means(values: np.ndarray) -> np.ndarray:
        return rater_means((np.bincount(item, weights=values, minlength=n) / k_i)[item])

    if ipsation == "grand-mean":
        return score + (grand - rater_means(score))[rater], 1, np.full(k, grand)
    ss_tot = np.sum((score - grand) ** 2)
    centre = sub_means(score)
    y = score + (centre - rater_means(score))[rater]
    rounds = 1
    while rounds < MAX_IPSATION_ROUNDS:
        next_centre = sub_means(y)
        d = next_centre - rater_means(y)
        if not np.sum(n_j * d**2) / ss_tot > tolerance:
            break
        y, centre, rounds = y + d[rater], next_centre, rounds + 1
    return y, rounds, centre


def _incomplete(c: _Coded, *, ipsation: str, notes: list[str]) -> tuple[MeanSquares, dict[str, float], int]:
    n, k, x = c.n, c.k, c.score
    N = x.size
    grand = x.mean()
    item_sum, k_i = _sums(c.item, x, n)
    rater_sum, n_j = _sums(c.rater, x, k)
    item_mean, rater_mean = item_sum / k_i, rater_sum / n_j
    k0 = (N - np.sum(k_i**2) / N) / (n - 1)
    kbar = N / n
    ss_tot = np.sum((x - grand) ** 2)

    # One-way (Ebel 1951).
    ss_b = _zero(np.sum(k_i * (item_mean - grand) ** 2), ss_tot)
    ss_w = _zero(np.sum((x - item_mean[c.item]) ** 2), ss_tot)
    df_w = n * (kbar - 1)

    # Two-way (Brueckl 2011 / irrNA): items and residual from the ipsated scores, SS taken about
    # the original grand mean; raters from the uncorrected rater means about the ipsation centres.
    y, rounds, centre = ipsate(c.item, c.rater, x, n, k, ipsation=ipsation)
    if rounds >= MAX_IPSATION_ROUNDS:
        notes.append(f"the sub-means ipsation stopped after {rounds} corrections without converging")
    y_mean = np.bincount(c.item, weights=y, minlength=n) / k_i
    d = y_mean - grand
    ss_items = _zero(np.sum(k_i * d * (d + 2 * grand)), ss_tot)  # Σ k_i (m'_i² − G²), floored at 0
    ss_res = _zero(np.sum((y - y_mean[c.item]) ** 2), ss_tot)  # Σ y² − Σ k_i m'_i²
    ss_raters = float(np.sum(n_j * (rater_mean - centre) * (rater_mean + centre)))  # Σ n_j (r_j² − centre²)
    df_res = (n - 1) * (kbar - 1)
    ms = MeanSquares(n=n, k0=float(k0), b=ss_b / (n - 1), w=ss_w / df_w, df_w=df_w, items=ss_items / (n - 1),
                     raters=ss_raters / (k - 1), res=ss_res / df_res, df_raters=k - 1, df_res=df_res)
    anova = {"ss_between_items": ss_b, "ss_within_items": ss_w, "ss_items": ss_items, "ss_raters": ss_raters,
             "ss_residual": ss_res, "ss_total": ss_tot, "df_within_items": df_w, "df_residual": df_res}
    return ms, anova, rounds


def _rater_notes(c: _Coded) -> list[str]:
    """irrNA warns about raters whose bias rests on one rating or who gave one score throughout."""
    n_j = np.bincount(c.rater, minlength=c.k)
    mean = np.bincount(c.rater, weights=c.score, minlength=c.k) / n_j
    spread = np.bincount(c.rater, weights=(c.score - mean[c.rater]) ** 2, minlength=c.k)
    notes = []
    for mask, what in ((n_j == 1, "rated only one item"), ((n_j > 1) & (spread == 0), "gave every item the same score")):
        if mask.any():
            names = ", ".join(repr(str(label)) for label in c.rater_labels[mask][:3])
            more = f" and {int(mask.sum()) - 3} more" if mask.sum() > 3 else ""
            notes.append(f"{int(mask.sum())} rater(s) {what}: {names}{more}")
    return notes


def icc(items: ArrayLike, raters: ArrayLike, scores: ArrayLike, *, method: str = "auto",
        ipsation: str = "grand-mean", ak_interval: str = "spearman-brown") -> ICCResult:
    """All six ICC forms for a long table of ratings.

    ``method``: "auto" (complete formulas when every rater rated every item once, else the
    incomplete ones), "complete" (refuses incomplete data) or "incomplete" (always irrNA's
    generalised formulas; on complete data they give the same numbers). ``ipsation`` and
    ``ak_interval`` choose irrNA's variants on the incomplete path (see the module docstring).
    Degenerate data give defined values, an ``ICCWarning`` and a line in ``result.warnings``."""
    if method not in ("auto", "complete", "incomplete"):
        raise ValueError(f"unknown method {method!r}")
    if ipsation not in IPSATIONS:
        raise ValueError(f"unknown ipsation {ipsation!r} (one of {', '.join(IPSATIONS)})")
    if ak_interval not in AK_INTERVALS:
        raise ValueError(f"unknown ak_interval {ak_interval!r} (one of {', '.join(AK_INTERVALS)})")
    c = _codes(items, raters, scores)
    is_complete = c.score.size == c.n * c.k
    if method == "complete" and not is_complete:
        raise ICCInputError(f"the design is incomplete ({c.score.size} ratings for {c.n} items × {c.k} raters)")
    use_complete = is_complete and method != "incomplete"
    notes = _rater_notes(c)
    with np.errstate(divide="ignore", invalid="ignore"):
        if use_complete:
            ms, anova = _complete(c)
            rounds = 1
        else:
            ms, anova, rounds = _incomplete(c, ipsation=ipsation, notes=notes)
        forms = _forms(ms, ak_interval=ak_interval, notes=notes)
    for note in notes:
        warnings.warn(note, ICCWarning, stacklevel=2)
    return ICCResult(n_items=c.n, n_raters=c.k, n_ratings=int(c.score.size), k0=ms.k0,
                     method="complete" if use_complete else "incomplete", icc=forms, ipsation_rounds=rounds,
                     ipsation=None if use_complete else ipsation, warnings=tuple(notes),
                     anova={key: float(value) for key, value in anova.items()})


def icc_frame(frame: pd.DataFrame, *, item: str = "item", rater: str = "rater", score: str = "score",
              method: str = "auto", ipsation: str = "grand-mean") -> ICCResult:
    return icc(frame[item].to_numpy(), frame[rater].to_numpy(), frame[score].to_numpy(), method=method,
               ipsation=ipsation)
