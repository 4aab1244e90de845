"""Several metrics combined for one prediction-powered mean, with weights fitted on held-apart labels
(cross-fitting: Zrnic & Candès, "Cross-prediction-powered inference", PNAS 2024; the weights are the
vector power tuning of PPI++, Angelopoulos, Duchi & Zrnic 2023).

Fitting the weights of k metrics on the same n labels they then correct makes the rectifier
Y - F w look smaller than it is (k slopes fitted in-sample), so the interval is too narrow with several
metrics and few labels. Cross-fitting: the n labelled units are split into K folds; for fold j the
weights w_j are fitted on the other folds (w = Sigma_F^-1 cov(F, Y) / (1 + n_j/N), Sigma_F over those
labelled units and every unlabelled one, ``studies.analysis.ppi.combination_weights``), and

    theta = mean_j over unlabelled units of F_u w_bar  +  mean over labelled i of (Y_i - F_i w_fold(i)),

w_bar the mean of the K weight vectors (the predictions are linear, so the mean of the K predictions
is the prediction with w_bar). Variance as in cross-PPI: var(rectifiers)/n + var(F_u w_bar)/N (divisor
n - 1 and N - 1), with Student's t on n - 1 df. A labelled unit's correction never used its own label,
so the interval needs no in-sample correction.

It is worth it when its standard error is below the best single metric's (``mean_estimate``); where it
is not (few labels, metrics that say the same thing), ``worth_it`` is False and the verdict says to use
the single metric. Everything works along leading axes, so a simulation computes 1,000 draws at once.
"""
from __future__ import annotations

from typing import Any

import numpy as np

FOLDS = 5


def _weights(y, f, fu, every):
    """Batched ``combination_weights``: y (..., m), f (..., m, k), fu (..., N, k); ``every`` (..., m+N, k)."""
    m, big_n = y.shape[-1], fu.shape[-2]
    centred = every - every.mean(-2, keepdims=True)
    sigma = np.einsum("...ik,...il->...kl", centred, centred) / (every.shape[-2] - 1)
    cov_fy = np.einsum("...ik,...i->...k", f - f.mean(-2, keepdims=True), y - y.mean(-1, keepdims=True)) / m
    return np.einsum("...kl,...l->...k", np.linalg.pinv(sigma), cov_fy) / (1 + m / big_n)


def crossfit_core(y, metrics, metrics_unlabelled, *, folds: int = FOLDS, alpha: float = 0.05,
                  seed: int = 0) -> dict[str, np.ndarray]:
    """The cross-fitted estimate along leading axes: y (..., n), metrics (..., n, k), metrics_unlabelled
    (..., N, k). Returns estimate, se, df, low, high, the mean weights (..., k) and each labelled unit's
    rectifier Y - F w (w fitted without its fold)."""
    from scipy import stats

    y = np.asarray(y, dtype=float)
    f = np.asarray(metrics, dtype=float)
    fu = np.asarray(metrics_unlabelled, dtype=float)
    n = y.shape[-1]
    k_folds = max(2, min(folds, n // 2))
    fold = np.random.default_rng(seed).permutation(n) % k_folds
    rectifier = np.empty_like(y)
    weights = []
    for j in range(k_folds):
        train, test = fold != j, fold == j
        every = np.concatenate([f[..., train, :], fu], axis=-2)
        w = _weights(y[..., train], f[..., train, :], fu, every)
        weights.append(w)
        rectifier[..., test] = y[..., test] - np.einsum("...ik,...k->...i", f[..., test, :], w)
    w_bar = np.mean(weights, axis=0)
    predicted = np.einsum("...ik,...k->...i", fu, w_bar)
    estimate = predicted.mean(-1) + rectifier.mean(-1)
    se = np.sqrt(rectifier.var(-1, ddof=1) / n + predicted.var(-1, ddof=1) / fu.shape[-2])
    df = float(n - 1)
    half = stats.t.ppf(1 - alpha / 2, df) * se
    return {"estimate": estimate, "se": se, "df": np.full(np.shape(estimate), df), "low": estimate - half,
            "high": estimate + half, "weights": w_bar, "folds": np.full(np.shape(estimate), k_folds),
            "rectifier": rectifier}


def combined_metrics_estimate(y, metrics, metrics_unlabelled, *, names: list[str], alpha: float = 0.05,
                              folds: int = FOLDS, seed: int = 0) -> dict[str, Any] | None:
    """The cross-fitted combination of ``names`` (columns of ``metrics``) beside each single metric's
    estimate and the human-only one: estimate, interval, se, n, the weights, the best single metric,
    ``worth_it`` (its se below the best single metric's) and a one-line verdict. None with fewer than
    4 labelled units (2 folds of 2) or 2 unlabelled ones."""
    from studies.analysis.ppi import mean_estimate
    from studies.analysis.ppi_small_n import small_n_warning

    y = np.asarray(y, dtype=float).ravel()
    f = np.asarray(metrics, dtype=float).reshape(len(y), -1)
    fu = np.asarray(metrics_unlabelled, dtype=float).reshape(-1, f.shape[1])
    n, big_n = len(y), len(fu)
    if n < 4 or big_n < 2:
        return None
    core = crossfit_core(y, f, fu, folds=folds, alpha=alpha, seed=seed)
    singles = {name: mean_estimate(y, f[:, j], fu[:, j], alpha=alpha) for j, name in enumerate(names)}
    ranked = sorted((e.se, name) for name, e in singles.items() if e is not None and e.se is not None)
    best_se, best = ranked[0] if ranked else (None, None)
    se = float(core["se"])
    worth = best_se is not None and se < best_se
    human = next(iter(singles.values()))
    if best is None:
        verdict = "no single metric to compare with"
    elif worth:
        verdict = (f"worth it: the combination's standard error {se:.3f} is below the best single metric's "
                   f"({best}, {best_se:.3f})")
    else:
        verdict = (f"not worth it: the combination's standard error {se:.3f} is not below the best single "
                   f"metric's ({best}, {best_se:.3f}); use {best} alone")
    return {"metrics": list(names), "estimate": float(core["estimate"]), "ci_low": float(core["low"]),
            "ci_high": float(core["high"]), "se": se, "df": float(core["df"]), "n": n, "n_unlabelled": big_n,
            "folds": int(core["folds"]), "weights": dict(zip(names, (float(w) for w in core["weights"]), strict=True)),
            "human_estimate": human.human_estimate if human else float(y.mean()),
            "human_ci_low": human.human_ci_low if human else None, "human_ci_high": human.human_ci_high if human else None,
            "best_single": best, "best_single_se": best_se, "worth_it": bool(worth), "verdict": verdict,
            "singles": {name: (e.as_dict() if e else None) for name, e in singles.items()},
            "method": f"cross-fitted weights ({int(core['folds'])} folds), Student t with n - 1 df",
            "warning": small_n_warning(n)}
