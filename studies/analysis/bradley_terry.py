"""Bradley–Terry strengths that stay finite, and a bootstrap that keeps every resample. No Django.

The maximum-likelihood strength of a system that won (or lost) every comparison is infinite (Hunter
2004, Assumption 1). Dropping the bootstrap resamples where that happens cuts the percentile interval
at the estimate ("θ 0.973, 95 % interval [0.255, 0.973]"): exactly the resamples that would have put the
bound beyond it are the ones left out. So the report fits the *maximum a posteriori* strengths under a
weak independent Gaussian prior on each log-strength, θ_i ~ N(0, σ²) with σ = ``PRIOR_SD`` = 2 (a
ridge-penalised Bradley–Terry; on priors for the model, Whelan 2017, "Prior distributions for the
Bradley–Terry model of paired comparisons", arXiv:1712.05311; the prior plays the part of Firth's
1993 penalty: it only matters where the data are silent). A priori a system beats an average one with
probability σ(θ) between .02 and .98 (±2σ): weak, but finite, so every resample has an estimate and
none is dropped; the resamples in which the MLE would not exist are counted (``degenerate``) and kept.

Posterior mode: maximise ℓ(θ) = Σ_i W_i θ_i − Σ_{i<j} n_ij log(e^{θ_i} + e^{θ_j}) − Σ_i θ_i² / (2σ²)
(W_i: i's wins, ties as half; n_ij: comparisons of i and j). Its gradient is W_i − Σ_j n_ij p_ij − θ_i/σ²
(p_ij = P(i beats j) = 1 / (1 + e^{θ_j − θ_i})), its Hessian −(L + I/σ²) with L the comparison-weighted
Laplacian (L_ij = −n_ij p_ij p_ji, rows summing to 0): negative definite, so the mode is unique and
Newton's method finds it; steps are capped at 1 logit so that a far start cannot overshoot. Summing the
gradient's components gives Σθ_i = 0 at the mode: the strengths come centred, as the MM fit's are.
"""
from __future__ import annotations

import numpy as np

PRIOR_SD = 2.0
ESTIMATOR = (f"maximum a posteriori Bradley–Terry with a weak N(0, {PRIOR_SD:g}²) prior on each log-strength "
             "(finite where a system won or lost everything); percentile bootstrap keeping every resample")


def map_fit(wins: np.ndarray, n: np.ndarray, *, prior_sd: float = PRIOR_SD, tol: float = 1e-12,
            max_iter: int = 200) -> np.ndarray:
    """The posterior mode θ for one count matrix (k × k) or a stack of them (r × k × k), all at once:
    ``wins[..., i, j]`` i's wins over j (ties as half), ``n`` the comparisons (symmetric)."""
    wins, n = np.asarray(wins, dtype=float), np.asarray(n, dtype=float)
    single = wins.ndim == 2
    if single:
        wins, n = wins[None], n[None]
    r, k, _ = wins.shape
    w = wins.sum(axis=2)
    precision = np.eye(k) / prior_sd ** 2
    theta = np.zeros((r, k))
    active = np.ones(r, dtype=bool)
    for _ in range(max_iter):
        if not active.any():
            break
        t, nn = theta[active], n[active]
        p = 1 / (1 + np.exp(t[:, None, :] - t[:, :, None]))  # p[., i, j] = P(i beats j)
        gradient = w[active] - (nn * p).sum(axis=2) - t / prior_sd ** 2
        weight = nn * p * p.transpose(0, 2, 1)
        hessian = weight.sum(axis=2)[:, :, None] * np.eye(k) - weight + precision  # L + I/σ², positive definite
        step = np.linalg.solve(hessian, gradient[..., None])[..., 0]
        largest = np.abs(step).max(axis=1, keepdims=True)
        step = np.where(largest > 1.0, step / np.maximum(largest, 1e-300), step)
        theta[active] = t + step
        rows = np.flatnonzero(active)
        active[rows[largest[:, 0] < tol]] = False
    theta -= theta.mean(axis=1, keepdims=True)  # already 0 at the mode; removes rounding
    return theta[0] if single else theta


def map_gradient(wins: np.ndarray, n: np.ndarray, theta: np.ndarray, *, prior_sd: float = PRIOR_SD) -> np.ndarray:
    """The gradient of the log posterior at θ (zero at the mode): the tests' check of ``map_fit``."""
    p = 1 / (1 + np.exp(theta[None, :] - theta[:, None]))
    return wins.sum(axis=1) - (n * p).sum(axis=1) - theta / prior_sd ** 2


def connected(n: np.ndarray) -> bool:
    """Whether every system is linked to every other by a chain of comparisons (undirected): without it
    the strengths of the separate groups are set against each other by the prior alone."""
    k = n.shape[0]
    reach = (n > 0) | np.eye(k, dtype=bool)
    for _ in range(int(np.ceil(np.log2(max(k, 2)))) + 1):
        reach = reach | ((reach.astype(np.int64) @ reach.astype(np.int64)) > 0)
    return bool(reach.all())
