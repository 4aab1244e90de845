"""Prediction-powered inference (PPI++) for human means, with a metric scored on every unit and human
judgments on a random subset (Angelopoulos, Bates, Fannjiang, Jordan & Zrnic, Science 2023;
Angelopoulos, Duchi & Zrnic, "PPI++: Efficient prediction-powered inference", 2023).

For n labelled units (human score Y, metric score f) and N unlabelled units (metric score only) the
power-tuned estimate of the mean human score is

    theta = lambda * mean(f_unlabelled) + mean(Y - lambda * f_labelled)

with lambda = cov(Y, f) / ((1 + n/N) var(f)) estimated from the data, and the interval
theta +- z * sqrt(var(Y - lambda f)/n + lambda^2 var(f_unlabelled)/N). lambda = 0 is the human-only
(classical) mean; with power tuning the interval is, to first order, never wider than it.

lambda is not clipped (PPI++, section 2: the estimate is unbiased for every fixed lambda and the
interval is valid for any consistent estimate of it). ``ppi_py`` clips its own estimate to [0, 1]; that
throws efficiency away exactly where a metric's scale is narrower than the human scale (a cosine in
[0, 1] against a 1-5 Likert mean needs lambda > 1) or the metric is reversed (lambda < 0). Unclipped,
the width ratio against the human-only interval is sqrt(1 - rho^2 N/(n + N)) to first order, which is
what the planner (``ppi_mean_power``) assumes. ``clip=True`` gives ppi_py's own choice.

Several metrics combine the same way (control variates, vector lambda):
theta = mean(Y) + w'(mean(F_unlabelled) - mean(F_labelled)) with
w = Sigma_F^-1 cov(F, Y) / (1 + n/N), Sigma_F the metrics' covariance over all units; the interval is
PPI's with the single prediction F w and lambda = 1 (``combined_estimate``; cross-fitted weights in
``studies.analysis.ppi_combined``).
Means: lambda and the point estimate are ppi_py's, the interval the small-sample one of
``studies.analysis.ppi_small_n`` (Student t; ppi_py's normal interval covers about .90 at 12 labelled
units). The rest comes from ``ppi_py`` (``ppi_ols_ci`` widened to t, ``ppi_logistic_ci``,
``ppi_mean_power``); this module only arranges arrays, so it imports no Django and loads ``ppi_py``
(SciPy, statsmodels, numba) inside its functions.

- Differences between systems: where the same conversations carry both systems (paired units), PPI of
  the mean of the per-conversation differences; otherwise (e.g. dialogue units) the OLS coefficient of
  a system indicator (``ppi_ols_ci``), whose p-value is read from its normal interval.
- Ranking: each system's place by estimate, and the places it could hold: 1 + the systems that beat it
  and K - the systems it beats, counting only differences significant after Holm's correction.
- Pairwise (A/B) studies: the win rate of a over b (ties half) per pair, and Bradley-Terry strengths
  through the logistic form, P(a beats b) = expit(s_a - s_b) (``ppi_logistic_ci``; first system = 0).
- Rater noise: a unit's human score is the mean of its k ratings, so Var(Y) includes the within-unit
  rating variance divided by k; the interval accounts for it (it is part of var(Y - lambda f)) and
  ``rater_noise`` reports how much of Var(Y) it is.
- Planning (``plan``): the human-rated units needed for an interval of a target width, without the
  metric (n0 = (2 z sd(Y) / width)^2) and with it (``ppi_mean_power`` for effective size n0, at most the
  frame's size; Broska, Howes & van Loon 2024).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

ALPHA = 0.05
METRIC_COST_SHARE = 1e-9  # a metric score's cost relative to a human-rated unit: next to nothing, not zero
                          # (ppi_power divides by a zero cost)


def _ppi():
    import ppi_py
    from ppi_py import ppi as ppi_module

    return ppi_py, ppi_module


def _finite(value) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def _arrays(*values) -> list[np.ndarray]:
    return [np.asarray(v, dtype=float).ravel() for v in values]


@dataclass(frozen=True)
class MeanEstimate:
    """A prediction-powered mean beside the human-only one, over n labelled and N unlabelled units."""

    estimate: float
    ci_low: float
    ci_high: float
    human_estimate: float
    human_ci_low: float
    human_ci_high: float
    lam: float
    n: int
    n_unlabelled: int
    n_effective: float | None  # human-rated units the classical mean would need for the same variance
    rho: float | None  # correlation of human and metric scores on the labelled units
    p: float | None = None  # against ``null`` (differences: against 0)
    human_p: float | None = None
    note: str = ""
    se: float | None = None  # the standard error the interval uses
    se_asymptotic: float | None = None  # ppi_py's (normal, divisor n): what ppi_mean_ci would use
    df: float | None = None  # Student t degrees of freedom of the interval
    method: str = ""  # how the interval was made
    warning: str = ""  # below the n where its coverage was measured

    @property
    def width(self) -> float:
        return self.ci_high - self.ci_low

    @property
    def human_width(self) -> float:
        return self.human_ci_high - self.human_ci_low

    def as_dict(self) -> dict:
        out = {k: (_finite(v) if isinstance(v, float) else v) for k, v in asdict(self).items()}
        return {**out, "width": _finite(self.width), "human_width": _finite(self.human_width)}


def power_tuning(y, yhat, yhat_unlabelled, *, clip: bool = False) -> float:
    """PPI++'s lambda for a mean, lambda = cov(Y, f) / ((1 + n/N) var(f)), by ppi_py's own estimator
    (``_calc_lam_glm`` on the mean's gradients, as ``ppi_mean_ci`` calls it); unclipped unless ``clip``
    (then [0, 1], ppi_py's default). Computed once here so that the interval, the point estimate and the
    p-value use the same value."""
    _, ppi_module = _ppi()
    y, yhat, yhat_unlabelled = (a.reshape(-1, 1) for a in _arrays(y, yhat, yhat_unlabelled))
    if np.ptp(np.r_[yhat, yhat_unlabelled]) == 0:  # a constant metric says nothing (ppi_py would divide 0 by 0)
        return 0.0
    start = ppi_module.ppi_mean_pointestimate(y, yhat, yhat_unlabelled, lam=1)
    lam = ppi_module._calc_lam_glm(y - start, yhat - start, yhat_unlabelled - start, np.eye(1), clip=clip)
    return float(lam)


def mean_estimate(y, yhat, yhat_unlabelled, *, alpha: float = ALPHA, null: float | None = None,
                  clip: bool = False) -> MeanEstimate | None:
    """PPI++ mean of ``y`` with power tuning (lambda unclipped unless ``clip``), and the classical mean
    beside it; None with fewer than 2 labelled units. lambda and the point estimate are ppi_py's; the
    intervals and p-values are the small-sample ones of ``studies.analysis.ppi_small_n`` (t quantiles),
    which hold at a dozen labelled units where ppi_py's normal interval covers about .90. With no
    unlabelled unit (or 2 labelled units, too few to fit lambda) the estimate is the human one."""
    from studies.analysis.ppi_small_n import HUMAN_METHOD, METHOD, ppi_mean_small_n, small_n_warning, t_p_value

    y, yhat, yhat_unlabelled = _arrays(y, yhat, yhat_unlabelled)
    n, big_n = len(y), len(yhat_unlabelled)
    if n < 2 or len(yhat) != n:
        return None
    core = ppi_mean_small_n(y, yhat, np.zeros(2) if big_n < 2 else yhat_unlabelled, alpha=alpha, lam=0.0)
    human_low, human_high = float(core["human_low"]), float(core["human_high"])
    human_p = t_p_value(float(y.mean()), float(core["human_se"]), n - 1, null) if null is not None else None
    rho = float(np.corrcoef(y, yhat)[0, 1]) if np.std(y) > 0 and np.std(yhat) > 0 else None
    warning = small_n_warning(n)
    if big_n < 2 or n < 3:
        why = ("every unit of the frame is human-rated: the metric adds nothing" if big_n < 2 else
               "2 human-rated units are too few to weigh the metric: human only")
        return MeanEstimate(float(y.mean()), human_low, human_high, float(y.mean()), human_low, human_high, 0.0, n,
                            big_n, float(n), rho, human_p, human_p, note=why, se=_finite(core["human_se"]),
                            df=float(n - 1), method=HUMAN_METHOD, warning=warning)
    lam = power_tuning(y, yhat, yhat_unlabelled, clip=clip)
    core = ppi_mean_small_n(y, yhat, yhat_unlabelled, alpha=alpha, lam=lam)
    low, high, estimate = float(core["low"]), float(core["high"]), float(core["estimate"])
    se, df = float(core["se"]), float(core["df"])
    p = t_p_value(estimate, se, df, null) if null is not None else None
    width, human_width = high - low, human_high - human_low
    n_effective = n * (human_width / width) ** 2 if width > 0 else None
    return MeanEstimate(estimate, low, high, float(y.mean()), human_low, human_high, lam, n, big_n, n_effective, rho,
                        p, human_p, se=_finite(se), se_asymptotic=_finite(core["se_asymptotic"]), df=df, method=METHOD,
                        warning=warning)


def combination_weights(y, metrics, metrics_unlabelled) -> np.ndarray:
    """The variance-optimal weights of several metrics as control variates for the mean of ``y``:
    w = Sigma_F^-1 cov(F, Y) / (1 + n/N), minimising var(Y - F w)/n + w' Sigma_F w / N (PPI++'s lambda
    for a vector of predictions). cov(F, Y) from the n labelled units, Sigma_F from all n + N units (as
    ppi_py estimates var(f)); a metric constant over the frame gets weight 0. ``metrics``: n x k."""
    y = np.asarray(y, dtype=float).ravel()
    f = np.asarray(metrics, dtype=float).reshape(len(y), -1)
    fu = np.asarray(metrics_unlabelled, dtype=float).reshape(-1, f.shape[1])
    n, big_n = len(y), len(fu)
    keep = np.ptp(np.r_[f, fu], axis=0) > 0
    w = np.zeros(f.shape[1])
    if not keep.any():
        return w
    sigma = np.atleast_2d(np.cov(np.r_[f, fu][:, keep].T))
    cov_fy = ((f[:, keep] - f[:, keep].mean(axis=0)) * (y - y.mean())[:, None]).mean(axis=0)
    w[keep] = np.linalg.lstsq(sigma, cov_fy, rcond=None)[0] / (1 + n / big_n)
    return w


def combined_estimate(y, metrics, metrics_unlabelled, *, alpha: float = ALPHA,
                      null: float | None = None) -> tuple[MeanEstimate, np.ndarray] | None:
    """PPI of the mean of ``y`` with several metrics at once, weights fitted in-sample: the prediction
    is F w with the weights of ``combination_weights`` and lambda = 1 (the weights already carry the
    tuning), with ``mean_estimate``'s small-sample interval. One metric gives ``mean_estimate``'s
    unclipped answer. The weights are fitted on the same labels they correct, which makes the interval
    optimistic with several metrics and few labels: ``studies.analysis.ppi_combined`` fits them on
    held-apart folds instead (what Concord reports). Returns the estimate and w; None with fewer than 3
    labelled or 2 unlabelled units."""
    from studies.analysis.ppi_small_n import METHOD, ppi_mean_small_n, small_n_warning, t_p_value

    y = np.asarray(y, dtype=float).ravel()
    f = np.asarray(metrics, dtype=float).reshape(len(y), -1)
    fu = np.asarray(metrics_unlabelled, dtype=float).reshape(-1, f.shape[1])
    n, big_n = len(y), len(fu)
    if n < 3 or big_n < 2:
        return None
    w = combination_weights(y, f, fu)
    pred, pred_u = f @ w, fu @ w
    core = ppi_mean_small_n(y, pred, pred_u, alpha=alpha, lam=1.0)
    estimate, se, df = float(core["estimate"]), float(core["se"]), float(core["df"])
    low, high = float(core["low"]), float(core["high"])
    human_low, human_high = float(core["human_low"]), float(core["human_high"])
    p = t_p_value(estimate, se, df, null) if null is not None else None
    human_p = t_p_value(float(y.mean()), float(core["human_se"]), n - 1, null) if null is not None else None
    rho = float(np.corrcoef(y, pred)[0, 1]) if np.std(y) > 0 and np.std(pred) > 0 else None
    width, human_width = high - low, human_high - human_low
    return MeanEstimate(estimate, low, high, float(y.mean()), human_low, human_high, 1.0, n, big_n,
                        n * (human_width / width) ** 2 if width > 0 else None, rho, p, human_p,
                        note=f"{f.shape[1]} metrics combined", se=_finite(se),
                        se_asymptotic=_finite(core["se_asymptotic"]), df=df, method=METHOD,
                        warning=small_n_warning(n)), w


def paired_difference(y_a, y_b, f_a, f_b, f_a_unlabelled, f_b_unlabelled, *, alpha: float = ALPHA) -> MeanEstimate | None:
    """a - b on units that carry both systems (same conversations): PPI of the mean difference, p against 0."""
    y_a, y_b, f_a, f_b, fu_a, fu_b = _arrays(y_a, y_b, f_a, f_b, f_a_unlabelled, f_b_unlabelled)
    return mean_estimate(y_a - y_b, f_a - f_b, fu_a - fu_b, alpha=alpha, null=0.0)


def unpaired_difference(y_a, f_a, fu_a, y_b, f_b, fu_b, *, alpha: float = ALPHA) -> MeanEstimate | None:
    """a - b on separate units: the OLS coefficient of an indicator of a (``ppi_ols_ci`` with lambda tuned
    for that coefficient; ``classical_ols_ci`` beside it). Small-sample correction: ppi_py's normal
    interval gives the standard error, scaled by sqrt(n / (n - k)) and used with Student's t on n - k
    df (k = 3 fitted: intercept, indicator, lambda; k = 2 human only); p-values from the same t."""
    from scipy.stats import norm
    from scipy.stats import t as student

    ppi_py, _ = _ppi()
    y_a, f_a, fu_a, y_b, f_b, fu_b = _arrays(y_a, f_a, fu_a, y_b, f_b, fu_b)
    if min(len(y_a), len(y_b)) < 2:
        return None

    def design(n_a, n_b):
        return np.column_stack([np.ones(n_a + n_b), np.r_[np.ones(n_a), np.zeros(n_b)]])

    x, y, yhat = design(len(y_a), len(y_b)), np.r_[y_a, y_b], np.r_[f_a, f_b]
    z = norm.ppf(1 - alpha / 2)

    def small_n(low, high, k):  # the normal interval widened to t on n - k df, and its p
        n = len(y)
        df = max(n - k, 1)
        se = (high - low) / (2 * z) * np.sqrt(n / df)
        middle, half = (low + high) / 2, student.ppf(1 - alpha / 2, df) * se
        return middle - half, middle + half, (float(2 * student.sf(abs(middle) / se, df)) if se > 0 else None)

    classical = ppi_py.classical_ols_ci(x, y, alpha=alpha)
    human_low, human_high, human_p = small_n(float(classical[0][1]), float(classical[1][1]), 2)
    human = (human_low + human_high) / 2
    if min(len(fu_a), len(fu_b)) < 1:
        return MeanEstimate(human, human_low, human_high, human, human_low, human_high, 0.0, len(y), 0, float(len(y)),
                            None, human_p, human_p, note="every unit of the frame is human-rated: the metric adds nothing",
                            df=float(len(y) - 2), method="OLS, Student t")
    xu, yhat_u = design(len(fu_a), len(fu_b)), np.r_[fu_a, fu_b]
    powered = ppi_py.ppi_ols_ci(x, y, yhat, xu, yhat_u, alpha=alpha, coord=1)
    low, high, p = small_n(float(powered[0][1]), float(powered[1][1]), 3)
    se, human_se = high - low, human_high - human_low
    from studies.analysis.ppi_small_n import small_n_warning

    return MeanEstimate((low + high) / 2, low, high, human, human_low, human_high, float("nan"), len(y), len(yhat_u),
                        len(y) * (human_se / se) ** 2 if se > 0 else None, None, p, human_p,
                        note="separate units per system: OLS on a system indicator", df=float(len(y) - 3),
                        method="PPI OLS, normal interval widened to Student t",
                        warning=small_n_warning(min(len(y_a), len(y_b))))


def rank_places(systems: Sequence[str], estimates: Sequence[float], pvalues: dict[tuple[str, str], float | None], *,
                alpha: float = ALPHA) -> list[dict]:
    """Each system's place by estimate (1 = highest) and the places it could hold at familywise level alpha:
    [1 + systems significantly above it, K - systems significantly below it], with Holm's correction over
    all pairs (``pvalues[(a, b)]`` for a before b). ``sure``: the place is the only one it could hold."""
    from studies.analysis.pairwise import holm  # statsmodels' Holm runs gc.collect() on every call

    order = sorted(range(len(systems)), key=lambda i: -estimates[i])
    pairs = [(a, b) for (a, b), p in pvalues.items() if p is not None]
    adjusted = dict(zip(pairs, holm([pvalues[k] for k in pairs]).tolist(), strict=True)) if pairs else {}
    value = dict(zip(systems, estimates, strict=True))

    def significant(a, b):
        p = adjusted.get((a, b), adjusted.get((b, a)))
        return p is not None and p < alpha

    out = []
    for place, i in enumerate(order, start=1):
        name = systems[i]
        above = sum(1 for other in systems if other != name and value[other] > value[name] and significant(name, other))
        below = sum(1 for other in systems if other != name and value[other] < value[name] and significant(name, other))
        best, worst = 1 + above, len(systems) - below
        nxt = systems[order[place]] if place < len(order) else None
        out.append({"system": name, "place": place, "best": best, "worst": worst, "sure": best == worst,
                    "estimate": _finite(value[name]), "next": nxt,
                    "p_next_holm": _finite(adjusted.get((name, nxt), adjusted.get((nxt, name), float("nan"))))
                    if nxt else None})
    return out


def bradley_terry(systems: Sequence[str], pairs, outcomes, predicted, unlabelled_pairs, unlabelled_predicted, *,
                  alpha: float = ALPHA) -> dict | None:
    """Bradley-Terry strengths through the logistic form: one row per compared unit with +1 for system a
    and -1 for b (the first system is the reference, strength 0), outcome 1 when a won; ``ppi_logistic_ci``
    beside ``classical_logistic_ci``. ``predicted``: the metric's outcome in [0, 1]. None when the humans
    decided every labelled unit the same way (no logistic fit exists) or fewer than 2 systems."""
    ppi_py, _ = _ppi()
    index = {s: i for i, s in enumerate(systems)}
    outcomes, predicted, unlabelled_predicted = _arrays(outcomes, predicted, unlabelled_predicted)
    if len(systems) < 2 or len(set(outcomes.tolist())) < 2:
        return None

    def design(rows):
        x = np.zeros((len(rows), len(systems)))
        for r, (a, b) in enumerate(rows):
            x[r, index[a]], x[r, index[b]] = 1.0, -1.0
        return x[:, 1:]

    x, xu = design(pairs), design(unlabelled_pairs)
    try:
        human_low, human_high = ppi_py.classical_logistic_ci(x, outcomes, alpha=alpha)
        if len(xu) < 2:
            low, high = human_low, human_high
        else:
            low, high = ppi_py.ppi_logistic_ci(x, outcomes, predicted, xu, unlabelled_predicted, alpha=alpha)
    except (np.linalg.LinAlgError, ValueError):  # separation: a system wins (or loses) all its comparisons
        return {"n": len(outcomes), "n_unlabelled": len(xu), "strengths": [],
                "problem": "no Bradley-Terry fit: some system wins or loses every comparison it is in, so the "
                           "strengths are unbounded (more judgments, or the win rates alone)"}
    if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
        return {"n": len(outcomes), "n_unlabelled": len(xu), "strengths": [],
                "problem": "no Bradley-Terry fit: the logistic fit did not converge to finite strengths"}
    rows = [{"system": systems[0], "strength": 0.0, "ci_low": 0.0, "ci_high": 0.0, "human_strength": 0.0,
             "human_ci_low": 0.0, "human_ci_high": 0.0, "reference": True}]
    for j, name in enumerate(systems[1:]):
        rows.append({"system": name, "strength": _finite((low[j] + high[j]) / 2), "ci_low": _finite(low[j]),
                     "ci_high": _finite(high[j]), "human_strength": _finite((human_low[j] + human_high[j]) / 2),
                     "human_ci_low": _finite(human_low[j]), "human_ci_high": _finite(human_high[j]), "reference": False})
    return {"n": len(outcomes), "n_unlabelled": len(xu), "strengths": rows, "problem": None}


def rater_noise(units, scores) -> dict:
    """How rater noise enters: the pooled within-unit variance of single ratings (units with 2+ ratings),
    the mean number of ratings per unit, and the share of Var(Y) (Y = a unit's mean rating) that the
    rating noise accounts for, mean(s_w^2 / k_i) / Var(Y), Var(Y) with divisor (units - 1) so that
    both are unbiased (E Var(Y) = between-unit variance + E[s_w^2 / k]). None where it cannot be told.

    A share near 1 is not an error: the system's rated units differ from one another no more than
    their raters disagree about each one (e.g. every unit of a system equally good), so the metric has
    no real differences between units to track and cannot narrow the interval; more ratings per unit
    would. Above 1 (sampling error) it is reported as 1 with ``noise_share_capped``."""
    units = np.asarray(units)
    scores = np.asarray(scores, dtype=float)
    codes, inverse, k = np.unique(units, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=scores)
    means = sums / k
    within = np.bincount(inverse, weights=(scores - means[inverse]) ** 2)
    df = int((k - 1).sum())
    s_w2 = float(within.sum() / df) if df > 0 else None
    var_y = float(means.var(ddof=1)) if len(codes) > 1 else None
    share = float(np.mean(s_w2 / k) / var_y) if s_w2 is not None and var_y else None
    return {"units": len(codes), "ratings_per_unit": float(k.mean()) if len(k) else None,
            "within_unit_variance": s_w2, "between_unit_variance": var_y,
            "noise_share": min(share, 1.0) if share is not None else None,
            "noise_share_capped": share is not None and share > 1.0}


def plan(y, yhat, *, target_width: float, n_now: int, frame_size: int | None, alpha: float = ALPHA) -> dict | None:
    """Human-rated units needed for an interval of ``target_width`` (full width, hi - lo), from the pilot's
    labelled units: without the metric n0 = ceil((2 z sd(Y) / width)^2) (``classical_mean_ci``'s sd);
    with it the cheapest (n, N) of ``ppi_mean_power`` for effective size n0 with n + N at most the frame
    (the metric scores every unit of it). ``ppi_mean_power`` assumes the optimal, unclipped lambda that
    ``mean_estimate`` uses, so a reversed metric (rho < 0) helps as much as a direct one. Where the frame is too small for either, ``reachable`` is False
    and the with-metric figure is for an unlimited pool of metric-scored units. ``more_*``: beyond ``n_now``."""
    import warnings

    from scipy.stats import norm

    ppi_py, _ = _ppi()
    y, yhat = _arrays(y, yhat)
    if len(y) < 2 or not target_width > 0:
        return None
    z = norm.ppf(1 - alpha / 2)
    n0 = (2 * z * float(y.std()) / target_width) ** 2
    without = max(math.ceil(n0), 2)
    reachable = frame_size is None or without <= frame_size
    costs = {"cost_Y": 1.0, "cost_Yhat": METRIC_COST_SHARE}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            # A target the pilot's spread already meets (n0 < 2): ppi_py rounds the pair to (0, 0) and divides
            # by zero; no plan asks for fewer than two units, so neither does the power analysis.
            power = ppi_py.ppi_mean_power(y, yhat, effective_n=max(n0, 2.0), n_max=frame_size if reachable else None,
                                          **costs)
        except (ValueError, ZeroDivisionError):  # a perfect correlation in the pilot: no finite pair
            power = None
    with_metric = max(int(power["n"]), 2) if power else None
    if power is None and float(yhat.std()) == 0.0:  # a constant metric: PPI with lambda 0 is the classical mean
        power, with_metric = {"ppi_corr": 0.0}, without
    return {"target_width": target_width, "alpha": alpha, "sd_human": float(y.std()), "n_now": n_now,
            "frame_size": frame_size, "reachable": reachable,
            "needed_without_metric": without, "needed_with_metric": with_metric,
            "more_without_metric": max(without - n_now, 0),
            "more_with_metric": max(with_metric - n_now, 0) if with_metric is not None else None,
            "ppi_corr": _finite(power["ppi_corr"]) if power else None}
