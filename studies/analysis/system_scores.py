"""Which system is better: each system's score with a 95 % interval, every pair of systems compared with a
test suited to the design, corrected for multiple comparisons, and how many raters and items it rests on.
No Django here.

Scale designs (Likert, magnitude estimation, best-worst as m + 1 − rank), from one long frame of
normalised ratings (columns study, criterion, system, unit, item, rater, score; studies.analysis.report):

- A system's score is the mean over its rated units (responses or dialogues) of each unit's mean score
  over raters, with a Student t interval over those unit means (n = units, df = n − 1: at the small n of
  a pilot a normal interval is too narrow). The unit, not the rating, is the sample: ratings of one unit
  by several raters are not independent draws of the system's quality.
- Two systems are *paired* where one screen (``item``: one context and the responses of several systems
  to it) shows both: per item, the mean score of each; the difference a − b is tested by the paired t
  test on those per-item differences (``scipy.stats.ttest_rel``), with the t interval of the mean
  difference, so the interval excludes 0 exactly when the unadjusted p < .05; the Wilcoxon signed-rank
  p (``scipy.stats.wilcoxon``, zero differences dropped, Wilcoxon 1945) is given beside it as a check
  that does not assume normal differences. Systems never shown on one screen (a dialogue per screen)
  are compared by Welch's t test on the unit means (``scipy.stats.ttest_ind(equal_var=False)``) with the
  Welch–Satterthwaite interval.
- The p values of the pairs of one condition × criterion are Holm-adjusted (Holm 1979).

Choice designs (pairwise A/B, ACUTE-Eval), from the win-rate rows of studies.analysis.pairwise:

- A system's score is the share of its decisive judgments it won (ties left out, as in the pairs'
  win rates) with the Wilson interval (Wilson 1927), n = its decisive judgments; the pairs keep
  their exact binomial (sign) test against 0.5 and its Holm adjustment.
"""
from __future__ import annotations

import math
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

CONFIDENCE = 0.95


def _finite(value: Any) -> float | None:
    return float(value) if value is not None and np.isfinite(value) else None


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjustment as a list (``studies.analysis.pairwise.holm``)."""
    from studies.analysis.pairwise import holm as adjust

    return adjust(p_values).tolist() if len(p_values) else []


def t_interval(values: np.ndarray, *, confidence: float = CONFIDENCE) -> tuple[float | None, float | None, float | None]:
    """(mean, low, high): the Student t interval mean ± t_{(1+c)/2, n−1} · s / √n (None where n < 2 or the
    values are not finite); equal to ``scipy.stats.t.interval(c, n − 1, mean, sem)``."""
    values = np.asarray(values, dtype=float)
    if not values.size:
        return None, None, None
    mean = float(values.mean())
    if values.size < 2:
        return mean, None, None
    half = float(stats.t.ppf((1 + confidence) / 2, values.size - 1) * values.std(ddof=1) / math.sqrt(values.size))
    return mean, mean - half, mean + half


def wilson(wins: float, n: int, *, confidence: float = CONFIDENCE) -> tuple[float | None, float | None]:
    """The Wilson score interval of wins / n (equal to statsmodels ``proportion_confint(method="wilson")``)."""
    if n <= 0:
        return None, None
    z = stats.norm.ppf((1 + confidence) / 2)
    p = wins / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def _paired(a: np.ndarray, b: np.ndarray, confidence: float) -> dict[str, Any]:
    diff = a - b
    n = int(diff.size)
    mean, low, high = t_interval(diff, confidence=confidence)
    row: dict[str, Any] = {"test": "paired t on per-item means", "n": n, "diff": mean, "ci_low": low, "ci_high": high,
                           "statistic": None, "df": None, "p": None, "wilcoxon_p": None}
    if n >= 2 and np.ptp(diff) > 1e-9:  # equal differences up to rounding: t is 0/0 or ±inf, not a test
        result = stats.ttest_rel(a, b)
        row.update(statistic=_finite(result.statistic), df=float(n - 1), p=_finite(result.pvalue))
    elif n >= 2:
        row.update(p=1.0 if mean == 0 else None)
    if np.count_nonzero(diff):
        row["wilcoxon_p"] = _finite(stats.wilcoxon(diff, zero_method="wilcox").pvalue)
    return row


def _welch(a: np.ndarray, b: np.ndarray, confidence: float) -> dict[str, Any]:
    row: dict[str, Any] = {"test": "Welch t on unit means (never shown on one screen)", "n": int(a.size + b.size),
                           "diff": float(a.mean() - b.mean()) if a.size and b.size else None,
                           "ci_low": None, "ci_high": None, "statistic": None, "df": None, "p": None, "wilcoxon_p": None}
    if a.size < 2 or b.size < 2 or (np.ptp(a) <= 1e-9 and np.ptp(b) <= 1e-9):
        return row
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    df = (va + vb) ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1))
    half = float(stats.t.ppf((1 + confidence) / 2, df) * math.sqrt(va + vb))
    result = stats.ttest_ind(a, b, equal_var=False)
    row.update(ci_low=row["diff"] - half, ci_high=row["diff"] + half, statistic=_finite(result.statistic),
               df=float(df), p=_finite(result.pvalue))
    return row


def scale_block(part: pd.DataFrame, *, confidence: float = CONFIDENCE) -> dict[str, Any]:
    """One condition × criterion of a scale design: {systems: [...], pairs: [...], n_raters, n_items,
    n_units, n_ratings}. ``part``: the frame's rows of that condition and criterion."""
    part = part.dropna(subset=["score"])
    units = part.groupby(["system", "unit"], sort=True)["score"].mean()
    per_item = part.groupby(["item", "system"], sort=True)["score"].mean().unstack("system")
    per_system = part.groupby("system", sort=True)["rater"].agg(["nunique", "size"])
    systems = []
    for system, values in units.groupby(level="system", sort=True):
        mean, low, high = t_interval(values.to_numpy(), confidence=confidence)
        systems.append({"system": system, "score": mean, "ci_low": low, "ci_high": high, "n": int(values.size),
                        "n_raters": int(per_system.at[system, "nunique"]),
                        "n_ratings": int(per_system.at[system, "size"])})
    systems.sort(key=lambda r: (-(r["score"] if r["score"] is not None else -math.inf), str(r["system"])))
    pairs = []
    for a, b in combinations(sorted(units.index.get_level_values("system").unique(), key=str), 2):
        both = per_item[[a, b]].dropna() if a in per_item and b in per_item else per_item.iloc[:0]
        if len(both):
            row = _paired(both[a].to_numpy(), both[b].to_numpy(), confidence)
        else:
            row = _welch(units.loc[a].to_numpy(), units.loc[b].to_numpy(), confidence)
        pairs.append({"system_a": a, "system_b": b, **row})
    tested = [r for r in pairs if r["p"] is not None]
    for r, p in zip(tested, holm([r["p"] for r in tested]), strict=True):
        r["p_holm"] = p
    for r in pairs:
        r.setdefault("p_holm", None)
        r["better"] = (None if r["p_holm"] is None or r["p_holm"] >= 1 - confidence or not r["diff"]
                       else r["system_a"] if r["diff"] > 0 else r["system_b"])
    return {"measure": "mean score", "pair_measure": "difference (first − second)", "systems": systems, "pairs": pairs, "n_raters": int(part["rater"].nunique()),
            "n_items": int(part["item"].nunique()), "n_units": int(part["unit"].nunique()), "n_ratings": len(part),
            "paired": any(r["test"].startswith("paired") for r in pairs)}


def scale_scores(frame: pd.DataFrame, *, confidence: float = CONFIDENCE) -> list[dict[str, Any]]:
    """``scale_block`` per condition (``study``) × criterion of the frame, in the frame's order."""
    if frame.empty:
        return []
    read = ["system", "unit", "item", "rater", "score"]  # each cell takes these columns only, not the frame's every one
    return [{"condition": study, "criterion": criterion, **scale_block(part, confidence=confidence)}
            for (study, criterion), part in frame[["study", "criterion", *read]].groupby(["study", "criterion"],
                                                                                        sort=False)[read]]


def choice_block(win_rates: list[dict[str, Any]], *, confidence: float = CONFIDENCE) -> dict[str, Any]:
    """One criterion of a choice design from its pairs' win-rate rows (studies.analysis.pairwise.win_rates:
    system_a, system_b, wins_a, wins_b, ties, n, win_rate_a, ci_low, ci_high, p, p_holm): each system's
    share of its decisive judgments won, with the Wilson interval, and the pairs as they are tested."""
    wins: dict[str, float] = {}
    decisive: dict[str, int] = {}
    judgments: dict[str, int] = {}
    systems: list[dict[str, Any]] = []
    for r in win_rates:
        for system, won in ((r["system_a"], r["wins_a"]), (r["system_b"], r["wins_b"])):
            wins[system] = wins.get(system, 0) + won
            decisive[system] = decisive.get(system, 0) + r["wins_a"] + r["wins_b"]
            judgments[system] = judgments.get(system, 0) + r["n"]
    for system in wins:
        low, high = wilson(wins[system], decisive[system], confidence=confidence)
        systems.append({"system": system, "score": wins[system] / decisive[system] if decisive[system] else None,
                        "ci_low": low, "ci_high": high, "n": decisive[system], "n_judgments": judgments[system],
                        "wins": wins[system]})
    systems.sort(key=lambda r: (-(r["score"] if r["score"] is not None else -math.inf), str(r["system"])))
    pairs = [{"system_a": r["system_a"], "system_b": r["system_b"], "test": "exact binomial (sign) test, ties left out",
              "n": r["wins_a"] + r["wins_b"], "diff": None,
              "win_rate_a": r["win_rate_a"], "ci_low": r["ci_low"], "ci_high": r["ci_high"], "statistic": r["wins_a"],
              "df": None, "p": r["p"], "p_holm": r["p_holm"], "wilcoxon_p": None, "ties": r["ties"],
              "better": (None if r["p_holm"] is None or r["p_holm"] >= 1 - confidence or r["win_rate_a"] == 0.5
                         else r["system_a"] if r["win_rate_a"] > 0.5 else r["system_b"])} for r in win_rates]
    return {"measure": "share of decisive judgments won", "pair_measure": "win rate of the first",
            "systems": systems, "pairs": pairs, "paired": True}
