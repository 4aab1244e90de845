"""Prediction-powered means whose intervals hold at small n (a dozen human-rated units per system).

ppi_py's interval is theta +- z * se with se^2 = var0(Y - lambda f)/n + lambda^2 var0(f_unlabelled)/N
(variances with divisor n, normal quantile). With n = 12 it covers about .90 of the time, not .95:
the variances are biased low, z is too small for a variance estimated from 12 units, and lambda is
fitted on the same 12 units (a regression slope), which the variance ignores.

Here the point estimate and lambda are ppi_py's exactly (PPI++, Angelopoulos, Duchi & Zrnic 2023):

    lambda = cov(Y, f) / ((1 + n/N) var(f over all n + N units)),
    theta  = lambda * mean(f_unlabelled) + mean(Y - lambda f)

and the interval is the small-sample one of a regression estimator of a mean (Cochran, Sampling
Techniques, 3rd ed. 1977, sections 7.3 and 7.7: the variance of the estimate at the unlabelled units'
mean metric score, with the slope estimated, and Student's t with n - 2 degrees of freedom):

    se^2 = s_r^2 (1/n + (mean f_unlabelled - mean f_labelled)^2 / S_ff) + lambda^2 var1(f_unlabelled)/N

with s_r^2 = sum((r - mean r)^2)/(n - 2), r = Y - lambda f, S_ff = sum((f - mean f)^2) over the labelled
units; theta +- t(1 - alpha/2, n - 2) * se. The human-only side is the one-sample t interval
(t with n - 1 df, SciPy's ``ttest_1samp``). ``se_asymptotic`` is ppi_py's standard error, kept so the
two can be compared. Seeded simulations (tests/analysis/test_ppi_small_n.py) measured coverage of at
least .95 from ``COVERAGE_MEASURED_FROM_N`` = 5 labelled units per system up (normal and 1-5 Likert human
scores, correlation 0 to .9 with the metric, N = 40 to 138): below that the interval is shown with a
warning. Everything works along the last axis, so a simulation computes 1,000 draws at once.
"""
from __future__ import annotations

import numpy as np

COVERAGE_MEASURED_FROM_N = 5
METHOD = "regression-estimator variance, Student t with n - 2 df (small-sample)"
HUMAN_METHOD = "one-sample t, n - 1 df"


def small_n_warning(n: int) -> str:
    """What an interval from ``n`` human-rated units says about its own coverage ("" when measured)."""
    if n >= COVERAGE_MEASURED_FROM_N:
        return ""
    return (f"only {n} human-rated units: below {COVERAGE_MEASURED_FROM_N}, where this interval's 95 % coverage "
            "was measured, so it may cover less often")


def ppi_mean_small_n(y, f, fu, *, alpha: float = 0.05, lam=None) -> dict[str, np.ndarray]:
    """PPI++ mean along the last axis of ``y``/``f`` (n labelled) and ``fu`` (N unlabelled): lambda
    (ppi_py's unclipped estimator unless given), estimate, se (small-sample), se_asymptotic (ppi_py's),
    df, low, high; and the human-only t interval (human_estimate, human_se, human_low, human_high).
    n >= 3 and N >= 2 (fewer: NaN)."""
    from scipy import stats

    y, f, fu = (np.asarray(a, dtype=float) for a in (y, f, fu))
    n, big_n = y.shape[-1], fu.shape[-1]
    with np.errstate(invalid="ignore", divide="ignore"):
        if lam is None:
            every = np.concatenate([f, fu], axis=-1)
            cov = ((y - y.mean(-1, keepdims=True)) * (f - f.mean(-1, keepdims=True))).mean(-1)
            var_f = every.var(-1, ddof=1)
            lam = np.where(var_f > 0, cov / ((1 + n / big_n) * np.where(var_f > 0, var_f, 1.0)), 0.0)
        lam = np.asarray(lam, dtype=float)
        rectifier = y - lam[..., None] * f
        estimate = lam * fu.mean(-1) + rectifier.mean(-1)
        se_asymptotic = np.sqrt(rectifier.var(-1) / n + (lam[..., None] * fu).var(-1) / big_n)
        s_r2 = ((rectifier - rectifier.mean(-1, keepdims=True)) ** 2).sum(-1) / (n - 2)
        s_ff = ((f - f.mean(-1, keepdims=True)) ** 2).sum(-1)
        leverage = np.where(s_ff > 0, (fu.mean(-1) - f.mean(-1)) ** 2 / np.where(s_ff > 0, s_ff, 1.0), 0.0)
        se = np.sqrt(s_r2 * (1 / n + leverage) + lam ** 2 * fu.var(-1, ddof=1) / big_n)
        df = np.full(np.shape(estimate), float(n - 2))
        half = stats.t.ppf(1 - alpha / 2, df) * se
        human_se = y.std(-1, ddof=1) / np.sqrt(n)
        human_half = stats.t.ppf(1 - alpha / 2, n - 1) * human_se
    return {"lam": lam, "estimate": estimate, "se": se, "se_asymptotic": se_asymptotic, "df": df,
            "low": estimate - half, "high": estimate + half, "human_estimate": y.mean(-1), "human_se": human_se,
            "human_low": y.mean(-1) - human_half, "human_high": y.mean(-1) + human_half}


def t_p_value(estimate: float, se: float, df: float, null: float) -> float | None:
    """Two-sided p of estimate against ``null`` with Student's t (df)."""
    from scipy import stats

    if not se > 0 or not df > 0:
        return None
    return float(2 * stats.t.sf(abs(estimate - null) / se, df))
