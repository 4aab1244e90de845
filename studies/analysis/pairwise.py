"""Pairwise (A/B) comparisons: win rates, Bradley–Terry strengths, position bias, agreement.

No Django here. The input is one long DataFrame, one row per judgment (``COLUMNS``):
criterion, item, rater, left_system, right_system, choice (``left`` | ``right`` | ``tie``).
The analysis sees systems only, so a response-level and a dialogue-level study (two whole
dialogues side by side) are analysed alike.

Conventions (say them in the paper):
- Each pair of systems is named in canonical order ``a < b`` (by name); ``score_a`` is 1 when a
  won, 0 when b won, 0.5 for a tie: **a tie counts as half a win for each side** (as in the
  Bradley–Terry treatment of Davidson 1970's ``ν = 0`` limit and in arena-style leaderboards).
- Win rate per pair: wins of a among decisive judgments (ties excluded), with the Wilson score
  interval (Wilson 1927; statsmodels ``proportion_confint(method="wilson")``) and an exact two-sided
  binomial (sign) test against 0.5, Holm-adjusted over the pairs of one criterion. The tie share
  and the "ties as half" score are reported beside it.
- Bradley–Terry (Bradley & Terry 1952): P(i beats j) = π_i / (π_i + π_j). Fitted by Hunter's (2004)
  MM algorithm, π_i ← W_i / Σ_{j≠i} n_ij / (π_i + π_j), where W_i are i's wins (ties as half) and n_ij
  the comparisons of i and j; reported as log-strengths θ_i = log π_i centred to mean 0. The
  maximum-likelihood estimate exists only when the comparison graph is strongly connected (no
  system, or group of systems, wins or loses all its comparisons, Hunter 2004 Assumption 1); we
  say so instead of reporting an infinite strength. ``bradley_terry_logit`` is the independent
  check: a logistic regression without intercept on a ±1 design matrix (statsmodels ``Logit``).
- The report's strengths and their bootstrap CIs (``bradley_terry_bootstrap``) are the posterior mode
  under a weak N(0, 2²) prior on each θ (``studies.analysis.bradley_terry``), finite where a system won or
  lost everything, where the MLE is infinite; percentile intervals over resampled raters (clusters;
  default) or items, seeded, 1000 resamples by default, every resample kept (dropping those without an
  MLE cut the interval at the estimate); those resamples are counted as ``degenerate``.
- Position bias: share of decisive judgments that chose the left side, exact binomial test against
  0.5 (scipy ``binomtest``) with its Wilson interval. The scheduler balances sides per rater and
  per item, so a bias shows the raters' habit, not the design. Per rater the same test, Holm-adjusted
  over raters, names raters with a side preference.
- Model check: beside each pair's observed score (ties as half), the score Bradley–Terry predicts,
  σ(θ_a − θ_b); large gaps mean the strengths do not summarise the pairs (e.g. intransitive preferences).
- Agreement: Krippendorff's alpha at the nominal level over the categories {a, b, tie} (by system,
  not by side: two raters who saw the pair in opposite orders and chose the same system agree).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from studies.analysis.agreement import krippendorff_alpha
from studies.analysis.labels import pairwise_agreement

COLUMNS = ["criterion", "item", "rater", "left_system", "right_system", "choice"]
CHOICES = ("left", "right", "tie")
BOOTSTRAP = 1000
CONFIDENCE = 0.95


class BTError(ValueError):
    """The Bradley–Terry MLE does not exist (or the data cannot be fitted); the message says why."""


def _finite(value: float | None) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def canonical(frame: pd.DataFrame) -> pd.DataFrame:
    """Add ``system_a`` < ``system_b`` (by name), ``score_a`` (1 / 0 / 0.5 for a tie) and ``outcome``
    (``a`` | ``b`` | ``tie``), and ``left_won`` (True / False / NaN for a tie)."""
    frame = frame.copy()
    unknown = sorted(set(frame["choice"].unique()) - set(CHOICES))
    if unknown:
        raise ValueError(f"choice must be one of {', '.join(CHOICES)}, got {unknown[:3]}")
    swap = frame["left_system"].astype(str) > frame["right_system"].astype(str)
    frame["system_a"] = np.where(swap, frame["right_system"], frame["left_system"])
    frame["system_b"] = np.where(swap, frame["left_system"], frame["right_system"])
    left_score = frame["choice"].map({"left": 1.0, "right": 0.0, "tie": 0.5})
    frame["score_a"] = np.where(swap, 1.0 - left_score, left_score)
    frame["outcome"] = np.select([frame["score_a"] == 1.0, frame["score_a"] == 0.0], ["a", "b"], "tie")
    frame["left_won"] = frame["choice"].map({"left": 1.0, "right": 0.0, "tie": np.nan})
    return frame


def holm(p_values) -> np.ndarray:
    """Holm's (1979) step-down adjustment: the i-th smallest of m p values times (m − i + 1), made
    non-decreasing in that order and capped at 1; equal to ``statsmodels.stats.multitest.multipletests(p,
    method="holm")[1]``, which runs a full garbage collection on every call (0.1 s in a web process)."""
    p = np.asarray(p_values, dtype=float)
    order = np.argsort(p, kind="stable")
    adjusted = np.empty_like(p)
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate(p[order] * (len(p) - np.arange(len(p)))))
    return adjusted


def win_rates(frame: pd.DataFrame, *, confidence: float = CONFIDENCE) -> list[dict[str, Any]]:
    """One row per criterion × system pair (a < b): counts, a's win rate among decisive judgments with
    its Wilson CI, the exact binomial p against 0.5 (raw and Holm-adjusted within the criterion), the
    tie share and a's score with ties as half."""
    from statsmodels.stats.proportion import proportion_confint

    data = canonical(frame)
    rows: list[dict[str, Any]] = []
    for criterion, part in data.groupby("criterion", sort=True):
        block = []
        for (a, b), pair in part.groupby(["system_a", "system_b"], sort=True):
            wins_a = int((pair["outcome"] == "a").sum())
            wins_b = int((pair["outcome"] == "b").sum())
            ties = int((pair["outcome"] == "tie").sum())
            decisive = wins_a + wins_b
            row = {"criterion": criterion, "system_a": a, "system_b": b, "n": len(pair), "wins_a": wins_a,
                   "wins_b": wins_b, "ties": ties, "tie_share": ties / len(pair), "score_a": float(pair["score_a"].mean()),
                   "win_rate_a": None, "ci_low": None, "ci_high": None, "p": None, "p_holm": None}
            if decisive:
                low, high = proportion_confint(wins_a, decisive, alpha=1 - confidence, method="wilson")
                row.update(win_rate_a=wins_a / decisive, ci_low=float(low), ci_high=float(high),
                           p=float(stats.binomtest(wins_a, decisive, 0.5).pvalue))
            block.append(row)
        tested = [r for r in block if r["p"] is not None]
        if tested:
            adjusted = holm([r["p"] for r in tested])
            for r, p in zip(tested, adjusted, strict=True):
                r["p_holm"] = float(p)
        rows += block
    return rows


def _counts(data: pd.DataFrame, systems: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """wins[i, j]: i's wins over j (ties as half); n[i, j]: comparisons of i and j (symmetric)."""
    index = {s: k for k, s in enumerate(systems)}
    a = data["system_a"].map(index).to_numpy()
    b = data["system_b"].map(index).to_numpy()
    score = data["score_a"].to_numpy(dtype=float)
    wins = np.zeros((len(systems), len(systems)))
    np.add.at(wins, (a, b), score)
    np.add.at(wins, (b, a), 1.0 - score)
    n = wins + wins.T
    return wins, n


def _check_exists(wins: np.ndarray, n: np.ndarray, systems: list[str]) -> None:
    """Hunter (2004) Assumption 1: for every split of the systems into two groups, some system in each
    group beat one in the other; i.e. the directed 'i beat j' graph is strongly connected."""
    beat = (wins > 0) & (n > 0)
    k = len(systems)
    if k < 2:
        raise BTError("needs at least two systems")
    reach = beat | np.eye(k, dtype=bool)
    for _ in range(int(math.ceil(math.log2(k))) + 1):  # transitive closure by repeated squaring
        reach = reach | ((reach.astype(int) @ reach.astype(int)) > 0)
    if not reach.all():
        never_lost = [systems[i] for i in range(k) if not (wins.T[i] > 0).any()]
        never_won = [systems[i] for i in range(k) if not (wins[i] > 0).any()]
        detail = "; ".join(filter(None, [
            f"never lost: {', '.join(never_lost)}" if never_lost else "",
            f"never won: {', '.join(never_won)}" if never_won else "",
        ])) or "the systems split into groups that never beat each other"
        raise BTError(f"Bradley–Terry strengths do not exist for these data ({detail})")


def _mm(wins: np.ndarray, n: np.ndarray, *, tol: float, max_iter: int, start: np.ndarray | None = None) -> np.ndarray:
    """Hunter's MM iteration on count matrices (from θ = ``start``, default 0); θ centred to mean 0."""
    w = wins.sum(axis=1)
    pi = np.ones(len(w)) if start is None else np.exp(start - np.mean(start))
    for _ in range(max_iter):
        updated = w / (n / (pi[:, None] + pi[None, :])).sum(axis=1)
        updated /= np.exp(np.mean(np.log(updated)))  # fix the scale: geometric mean 1
        done = np.max(np.abs(np.log(updated) - np.log(pi))) < tol
        pi = updated
        if done:
            break
    theta = np.log(pi)
    return theta - theta.mean()


def _newton(wins: np.ndarray, n: np.ndarray, start: np.ndarray, *, tol: float = 1e-10, max_iter: int = 50) -> np.ndarray:
    """The same MLE by Newton's method from a nearby ``start`` (the bootstrap's full-data θ): the
    log-likelihood is concave with Hessian −L (L the comparison-weighted Laplacian), so from close by
    it converges in a few steps where MM needs hundreds. The last θ is held at 0 while stepping (the
    scale is free), then θ is centred. Falls back to MM if a step does not converge."""
    w = wins.sum(axis=1)
    theta = start - start[-1]
    for _ in range(max_iter):
        p = 1 / (1 + np.exp(theta[None, :] - theta[:, None]))  # p[i, j] = P(i beats j)
        gradient = w - (n * p).sum(axis=1)
        weight = n * p * p.T
        laplacian = np.diag(weight.sum(axis=1)) - weight
        try:
            step = np.linalg.solve(laplacian[:-1, :-1], gradient[:-1])
        except np.linalg.LinAlgError:
            break
        theta[:-1] += step
        if not np.all(np.isfinite(theta)):
            break
        if np.max(np.abs(step)) < tol:
            return theta - theta.mean()
    return _mm(wins, n, tol=1e-9, max_iter=100000, start=start)


def _exists(wins: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``_check_exists`` for a stack of count matrices (resamples × k × k): True where the MLE exists."""
    k = wins.shape[-1]
    reach = ((wins > 0) & (n > 0)) | np.eye(k, dtype=bool)
    for _ in range(int(math.ceil(math.log2(k))) + 1):
        reach = reach | ((reach.astype(np.int64) @ reach.astype(np.int64)) > 0)
    return np.asarray(reach.all(axis=(1, 2)))


def bradley_terry_mm(frame: pd.DataFrame, *, tol: float = 1e-12, max_iter: int = 100000) -> dict[str, float]:
    """Log-strengths θ (mean 0) by Hunter's (2004) MM algorithm; ties count as half a win each.
    Raises BTError when the MLE does not exist."""
    data = canonical(frame)
    systems = sorted(set(data["system_a"].unique()) | set(data["system_b"].unique()))
    wins, n = _counts(data, systems)
    _check_exists(wins, n, systems)
    return dict(zip(systems, _mm(wins, n, tol=tol, max_iter=max_iter).tolist(), strict=True))


def bradley_terry_logit(frame: pd.DataFrame) -> dict[str, float]:
    """The same model as a logistic regression (statsmodels ``Logit``, no intercept): one row per
    judgment, +1 in the column of system a, −1 in b's, the last system's column dropped (θ = 0 as
    reference); the response is a's score (1, 0 or 0.5 for a tie, whose likelihood contribution
    0.5·log p + 0.5·log(1 − p) is exactly "half a win"). Returned centred to mean 0 like the MM fit."""
    import statsmodels.api as sm

    data = canonical(frame)
    systems = sorted(set(data["system_a"].unique()) | set(data["system_b"].unique()))
    wins, n = _counts(data, systems)
    _check_exists(wins, n, systems)
    index = {s: k for k, s in enumerate(systems)}
    design = np.zeros((len(data), len(systems)))
    rows = np.arange(len(data))
    design[rows, data["system_a"].map(index).to_numpy()] = 1.0
    design[rows, data["system_b"].map(index).to_numpy()] = -1.0
    fit = sm.Logit(data["score_a"].to_numpy(dtype=float), design[:, :-1]).fit(disp=0, method="newton",
                                                                               maxiter=200, tol=1e-12)
    theta = np.append(np.asarray(fit.params, dtype=float), 0.0)
    theta -= theta.mean()
    return dict(zip(systems, theta.tolist(), strict=True))


def bradley_terry_bootstrap(frame: pd.DataFrame, *, resamples: int = BOOTSTRAP, seed: int = 0, over: str = "rater",
                            confidence: float = CONFIDENCE) -> dict[str, Any]:
    """θ, the posterior mode under a weak prior (``studies.analysis.bradley_terry``: finite where a system
    won or lost everything), with percentile bootstrap CIs resampling whole clusters (``over`` = rater or
    item) with replacement, **every resample kept**. Returns {"strengths": [{system, theta, theta_mle,
    ci_low, ci_high, win_prob_vs_mean}], "resamples", "dropped" (always 0), "degenerate" (resamples in which
    the MLE would not exist, kept), "mle_exists", "note", "estimator", "prior_sd", "over"}; raises BTError
    with fewer than two systems or systems never linked by comparisons.

    Each cluster's win matrix is computed once; a resample is a weighted sum of them (the weights are
    how often each cluster was drawn), and all resamples are fitted together (``map_fit`` on the stack;
    the same θ as fitting each resample alone, checked in the tests)."""
    from studies.analysis.bradley_terry import ESTIMATOR, PRIOR_SD, connected, map_fit

    if over not in ("rater", "item"):
        raise ValueError("over must be 'rater' or 'item'")
    data = canonical(frame)
    systems = sorted(set(data["system_a"].unique()) | set(data["system_b"].unique()))
    if len(systems) < 2:
        raise BTError("Bradley–Terry needs at least two systems")
    wins, n = _counts(data, systems)
    if not connected(n):
        raise BTError("Bradley–Terry strengths cannot be compared: the systems split into groups never compared "
                      "with each other")
    theta = map_fit(wins, n)
    try:
        _check_exists(wins, n, systems)
        mle: np.ndarray | None = _mm(wins, n, tol=1e-12, max_iter=100000)
        note = ""
    except BTError as error:
        mle, note = None, f"{str(error).split('(', 1)[-1].rstrip(')')}: the maximum-likelihood strength is infinite; " \
                          "the prior keeps it finite"
    codes, _ = pd.factorize(data[over], sort=True)
    per_cluster = np.zeros((codes.max() + 1, len(systems), len(systems)))
    index = {s: k for k, s in enumerate(systems)}
    a = data["system_a"].map(index).to_numpy()
    b = data["system_b"].map(index).to_numpy()
    score = data["score_a"].to_numpy(dtype=float)
    np.add.at(per_cluster, (codes, a, b), score)
    np.add.at(per_cluster, (codes, b, a), 1.0 - score)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(per_cluster), size=(resamples, len(per_cluster)))
    weights = np.zeros((resamples, len(per_cluster)))
    np.add.at(weights, (np.repeat(np.arange(resamples), draws.shape[1]), draws.ravel()), 1.0)
    stack = (weights @ per_cluster.reshape(len(per_cluster), -1)).reshape(resamples, len(systems), len(systems))
    totals = stack + stack.transpose(0, 2, 1)
    matrix = map_fit(stack, totals)
    degenerate = int((~_exists(stack, totals)).sum())
    tail = (1 - confidence) / 2
    strengths = []
    for k, system in enumerate(systems):
        low = high = None
        if len(matrix) >= 2:
            low, high = (float(v) for v in np.quantile(matrix[:, k], [tail, 1 - tail]))
        strengths.append({"system": system, "theta": float(theta[k]),
                          "theta_mle": None if mle is None else float(mle[k]), "ci_low": low, "ci_high": high,
                          # P(beats a system of average strength, θ = 0)
                          "win_prob_vs_mean": 1 / (1 + math.exp(-theta[k]))})
    strengths.sort(key=lambda r: -r["theta"])
    return {"strengths": strengths, "resamples": resamples, "dropped": 0, "degenerate": degenerate,
            "mle_exists": mle is not None, "note": note, "estimator": ESTIMATOR, "prior_sd": PRIOR_SD, "over": over}


def position_bias(frame: pd.DataFrame, *, confidence: float = CONFIDENCE) -> dict[str, Any]:
    """Share of decisive judgments that picked the left side, exact two-sided binomial test against
    0.5 and the Wilson interval of the share; ties are counted apart."""
    decisive = frame[frame["choice"] != "tie"]
    left = int((decisive["choice"] == "left").sum())
    total = len(decisive)
    result: dict[str, Any] = {"n": len(frame), "decisive": total, "left_wins": left, "ties": len(frame) - total,
              "left_share": None, "ci_low": None, "ci_high": None, "p": None}
    if total:
        test = stats.binomtest(left, total, 0.5)
        interval = test.proportion_ci(confidence_level=confidence, method="wilson")
        result.update(left_share=left / total, ci_low=float(interval.low), ci_high=float(interval.high),
                      p=float(test.pvalue))
    return result


def side_balance(frame: pd.DataFrame) -> dict[str, Any]:
    """How often each system was shown on the left (the design's balance, not the raters' choices):
    {systems: [{system, shown, left_share}], min_left_share, max_left_share}."""
    shown = pd.concat([frame["left_system"], frame["right_system"]]).value_counts()
    left = frame["left_system"].value_counts()
    rows = [{"system": s, "shown": int(shown[s]), "left_share": float(left.get(s, 0) / shown[s])}
            for s in sorted(shown.index)]
    shares = [r["left_share"] for r in rows]
    return {"systems": rows, "min_left_share": min(shares, default=None), "max_left_share": max(shares, default=None)}


def _binomial_p_half(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The exact two-sided binomial test of k successes in n against 0.5, for arrays: the distribution
    is symmetric, so ``scipy.stats.binomtest(k, n, 0.5).pvalue`` = min(1, 2·P(X ≤ min(k, n − k))) (equal to
    it to 1e-12, tests/analysis/test_pairwise.py); NaN where n = 0."""
    k, n = np.asarray(k), np.asarray(n)
    with np.errstate(invalid="ignore"):
        return np.where(n > 0, np.minimum(1.0, 2 * stats.binom.cdf(np.minimum(k, n - k), n, 0.5)), np.nan)


SIDE_P = 0.01  # the default of settings.RATER_FLAGS["position_p"]: the report and the review queue use that setting


def rater_sides(frame: pd.DataFrame, *, level: float = SIDE_P) -> list[dict[str, Any]]:
    """Per rater: decisive judgments, share that chose the left side, tie share, the exact two-sided
    binomial p of the left choices against ½ (as ``scipy.stats.binomtest``; the chance of a split at
    least this uneven if the rater picked sides at random) and its Holm adjustment over the raters
    (shown, not used); ``side_preference`` where p is below ``level``. The review queue's rater flag is
    the same test with the same threshold (``studies.reports.rater_evidence``), so the two pages agree.
    A rater who mostly clicks one side: the balanced schedule keeps that from favouring a system, but it
    adds noise and may mean inattention."""
    counts = pd.crosstab(frame["rater"], frame["choice"]).reindex(columns=list(CHOICES), fill_value=0)
    left, right, ties = (counts[c].to_numpy() for c in ("left", "right", "tie"))
    decisive = left + right
    p_values = _binomial_p_half(left, decisive)
    rows = [{"rater": rater, "n": int(d + t), "decisive": int(d), "left_wins": int(k),
             "left_share": float(k / d) if d else None, "tie_share": float(t / (d + t)),
             "p": float(p) if d else None, "p_holm": None, "side_preference": False}
            for rater, k, d, t, p in zip(counts.index, left, decisive, ties, p_values, strict=True)]
    tested = [r for r in rows if r["p"] is not None]
    if tested:
        for r, p in zip(tested, holm([r["p"] for r in tested]), strict=True):
            r["p_holm"], r["side_preference"] = float(p), bool(r["p"] < level)
    return rows


def agreement(frame: pd.DataFrame) -> dict[str, Any]:
    """Krippendorff's alpha (nominal) over {a, b, tie} and the raw agreement (``labels.pairwise_agreement``);
    units are items (one system pair each)."""
    data = canonical(frame)
    codes = data["outcome"].map({"a": 0.0, "b": 1.0, "tie": 2.0})
    paired = data.groupby("item")["rater"].nunique()
    pairable = int((paired >= 2).sum())
    if pairable == 0:
        return {"alpha": None, "units": 0, "raw_agreement": None, "pairs": 0, "note": "needs two raters on one item"}
    alpha = krippendorff_alpha(data["item"], data["rater"], codes, level="nominal")
    # raw agreement beside α (the share of agreeing pairs of judgments on one item), since a prevalent
    # outcome drives α towards 0 at high agreement (Feinstein & Cicchetti 1990)
    raw = pairwise_agreement(data["item"], data["outcome"])
    return {"alpha": _finite(alpha), "units": pairable, "raw_agreement": raw["agreement"], "pairs": raw["pairs"],
            "note": "" if math.isfinite(alpha) else "every judgment is the same: alpha is undefined"}


def pairwise_report(frame: pd.DataFrame, *, resamples: int = BOOTSTRAP, seed: int = 0,
                    over: str = "rater", side_level: float = SIDE_P) -> list[dict[str, Any]]:
    """Everything above, per criterion: {criterion, n, raters, win_rates (with ``bt_expected_a``, the
    score of a that the fitted model predicts, where it exists), bt (or bt_error), position_bias,
    side_balance, rater_sides, raters_with_side_preference, agreement}."""
    if frame.empty:
        return []
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"missing column(s): {', '.join(missing)}")
    rates = win_rates(frame)
    out = []
    for criterion, part in frame.groupby("criterion", sort=False):
        part = part.reset_index(drop=True)
        entry: dict[str, Any] = {
            "criterion": criterion, "n": len(part), "raters": int(part["rater"].nunique()),
            "items": int(part["item"].nunique()),
            "win_rates": [r for r in rates if r["criterion"] == criterion],
            "position_bias": position_bias(part), "agreement": agreement(part), "bt": None, "bt_error": None,
        }
        entry["side_balance"] = side_balance(part)
        sides = rater_sides(part, level=side_level)
        entry["rater_sides"] = sides
        entry["side_level"] = side_level
        entry["raters_with_side_preference"] = sum(r["side_preference"] for r in sides)
        cluster = over if part[over].nunique() >= 2 else "item"
        try:
            entry["bt"] = bradley_terry_bootstrap(part, resamples=resamples, seed=seed, over=cluster)
        except BTError as error:
            entry["bt_error"] = str(error)
        else:  # model check: the win rate BT predicts for each pair beside the observed one (ties as half)
            theta = {r["system"]: r["theta"] for r in entry["bt"]["strengths"]}
            for row in entry["win_rates"]:
                row["bt_expected_a"] = 1 / (1 + math.exp(theta[row["system_b"]] - theta[row["system_a"]]))
        out.append(entry)
    return out


def _majority(outcomes: pd.Series) -> str:
    """The side most raters chose ('a', 'b'), or 'tie' when ties win or a and b are level."""
    counts = outcomes.value_counts()
    a, b, t = (int(counts.get(k, 0)) for k in ("a", "b", "tie"))
    if a > b and a > t:
        return "a"
    if b > a and b > t:
        return "b"
    return "tie"


def metric_pair_agreement(frame: pd.DataFrame, scores: dict[Any, float], *,
                          confidence: float = CONFIDENCE) -> list[dict[str, Any]]:
    """Human vs metric for pairwise judgments, per criterion: the share of compared pairs (items) where
    the metric scores higher the response the human majority preferred. Pairs the humans tie on
    (ties the most chosen, or as many votes for each side) and pairs the metric scores equal are left
    out and counted; a pair with a response the metric has not scored is counted as missing. Beside
    it, the human ceiling: the share of single decisive judgments that agree with the majority of the
    item's other raters (where those have a decisive majority). ``frame`` needs ``left`` and
    ``right`` (the units, e.g. response ids) besides ``COLUMNS``; ``scores`` maps a unit to its
    metric score. Wilson interval and an exact binomial test against 0.5 (a coin)."""
    from statsmodels.stats.proportion import proportion_confint

    if frame.empty:
        return []
    data = canonical(frame)
    a_is_left = data["left_system"] == data["system_a"]
    data["unit_a"] = np.where(a_is_left, data["left"], data["right"])
    data["unit_b"] = np.where(a_is_left, data["right"], data["left"])
    out = []
    for criterion, part in data.groupby("criterion", sort=False):
        items = part.groupby("item").agg(unit_a=("unit_a", "first"), unit_b=("unit_b", "first"),
                                         human=("outcome", _majority))
        metric_a = items["unit_a"].map(scores).astype(float)
        metric_b = items["unit_b"].map(scores).astype(float)
        missing = metric_a.isna() | metric_b.isna()
        metric = pd.Series(np.select([metric_a > metric_b, metric_a < metric_b], ["a", "b"], "tie"), index=items.index)
        human_tie = items["human"] == "tie"
        metric_tie = ~missing & ~human_tie & (metric == "tie")
        counted = ~missing & ~human_tie & ~metric_tie
        agree = int((metric[counted] == items.loc[counted, "human"]).sum())
        n = int(counted.sum())
        row = {"criterion": criterion, "pairs": len(items), "counted": n, "agree": agree,
               "human_ties": int((~missing & human_tie).sum()), "metric_ties": int(metric_tie.sum()),
               "missing_scores": int(missing.sum()), "share": None, "ci_low": None, "ci_high": None, "p": None}
        if n:
            low, high = proportion_confint(agree, n, alpha=1 - confidence, method="wilson")
            row.update(share=agree / n, ci_low=float(low), ci_high=float(high),
                       p=float(stats.binomtest(agree, n, 0.5).pvalue))
        row.update(_human_ceiling(part))
        out.append(row)
    return out


def _human_ceiling(part: pd.DataFrame) -> dict[str, Any]:
    """Leave-one-rater-out: share of decisive judgments that match the majority of the item's other raters."""
    agree = total = 0
    for _, judgments in part.groupby("item"):
        if len(judgments) < 2:
            continue
        outcomes = judgments["outcome"].tolist()
        for k, own in enumerate(outcomes):
            if own == "tie":
                continue
            others = _majority(pd.Series(outcomes[:k] + outcomes[k + 1:]))
            if others != "tie":
                total += 1
                agree += own == others
    return {"human_share": agree / total if total else None, "human_n": total}
