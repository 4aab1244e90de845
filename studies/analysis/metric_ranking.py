"""Which automatic judge agrees best with the humans: every metric's correlation with the human scores
on the same items, ranked, with a paired bootstrap interval of each one's gap to the best (the items are
resampled once for both, so what the two metrics share cancels out), and which of the top ones cannot be
told apart from the best at the chosen level (Deutsch, Dror & Roth 2021, "A statistical analysis of
summarization evaluation metrics using resampling methods", the paired bootstrap of correlation
differences).

Only items with a human score and every metric's score count (the comparison must be on one set of
items); ``n`` says how many, and ``coverage`` how many of the human-scored items each metric scored, so
one judge's missing answers (refusals, failed calls) cannot shrink every metric's comparison unseen:
``shared_note`` names the metrics that did. Intervals: ``scipy.stats.bootstrap`` (paired, percentile) of
r(human, best) - r(human, m), with a seed, so a report is the same every time it is drawn."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

METHODS = ("spearman", "pearson", "kendall")


def _correlation(method: str):
    from scipy import stats

    if method == "spearman":
        return lambda a, b: stats.spearmanr(a, b).statistic
    if method == "pearson":
        return lambda a, b: stats.pearsonr(a, b).statistic
    if method == "kendall":
        return lambda a, b: stats.kendalltau(a, b).statistic
    raise ValueError(f"method: one of {', '.join(METHODS)}, not {method!r}")


def common_items(human: Sequence[float | None], metrics: Mapping[str, Sequence[float | None]]) -> np.ndarray:
    """The positions where the human score and every metric's score are finite numbers."""
    columns = [np.asarray([np.nan if v is None else v for v in human], dtype=float)]
    columns += [np.asarray([np.nan if v is None else v for v in values], dtype=float) for values in metrics.values()]
    return np.flatnonzero(np.all(np.isfinite(np.vstack(columns)), axis=0))


def rank_metrics(human: Sequence[float | None], metrics: Mapping[str, Sequence[float | None]], *,
                 method: str = "spearman", resamples: int = 2000, alpha: float = 0.05, seed: int = 0) -> dict[str, Any]:
    """Each metric's correlation with ``human`` on the common items, best first, and for every other one
    the paired bootstrap interval of (best - it); ``tied_with_best`` where that interval reaches 0.
    ``problem`` (and no rows) with fewer than 5 common items or fewer than 2 varying metrics."""
    from scipy import stats

    correlate = _correlation(method)
    keep = common_items(human, metrics)
    columns = {name: np.asarray([np.nan if v is None else v for v in values], dtype=float)[keep]
               for name, values in metrics.items()}
    human_scored = np.isfinite(y_all := np.asarray([np.nan if v is None else v for v in human], dtype=float))
    coverage = {name: int(np.sum(human_scored & np.isfinite(np.asarray([np.nan if v is None else v for v in values],
                                                                         dtype=float))))
                for name, values in metrics.items()}
    n_human = int(human_scored.sum())
    short = [f"{name} scored {count}" for name, count in coverage.items() if count < n_human]
    out: dict[str, Any] = {"method": method, "n": int(len(keep)), "alpha": alpha, "resamples": resamples, "rows": [],
                           "best": None, "tied": [], "problem": None, "n_human": n_human, "coverage": coverage,
                           "shared_note": (f"ranked on the {len(keep)} items every metric scored, of {n_human} with a "
                                           f"human score ({'; '.join(short)})") if short else ""}
    y = y_all[keep]
    varying = {name: x for name, x in columns.items() if len(x) and np.ptp(x) > 0}
    if len(keep) < 5 or np.ptp(y) == 0 or len(varying) < 1:
        out["problem"] = (f"{len(keep)} items carry a human score and every metric's score: too few to compare"
                          if len(keep) < 5 else "the human scores or the metrics do not vary on the common items")
        return out
    r = {name: float(correlate(y, x)) for name, x in varying.items()}
    order = sorted(r, key=lambda name: -r[name])
    best = order[0]
    rows = [{"metric": best, "coverage": coverage[best], "r": r[best], "delta": 0.0, "delta_low": None, "delta_high": None, "tied_with_best": True,
             "best": True}]
    for name in order[1:]:
        result = stats.bootstrap((y, columns[best], columns[name]),
                                 lambda h, b, m: correlate(h, b) - correlate(h, m), paired=True, vectorized=False,
                                 n_resamples=resamples, confidence_level=1 - alpha, method="percentile",
                                 random_state=np.random.default_rng(seed))
        low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
        rows.append({"metric": name, "coverage": coverage[name], "r": r[name], "delta": r[best] - r[name], "delta_low": low, "delta_high": high,
                     "tied_with_best": bool(low <= 0.0), "best": False})
    for name in sorted(set(columns) - set(varying)):
        rows.append({"metric": name, "coverage": coverage[name], "r": None, "delta": None, "delta_low": None, "delta_high": None,
                     "tied_with_best": False, "best": False, "note": "constant on these items"})
    out.update(rows=rows, best=best, tied=[row["metric"] for row in rows[1:] if row["tied_with_best"]])
    return out


def ranking_sentence(ranking: Mapping[str, Any]) -> str:
    """One line for a report: the best metric, and whether the next ones can be told apart from it."""
    if ranking.get("problem"):
        return ranking["problem"]
    shared = f"; {ranking['shared_note']}" if ranking.get("shared_note") else ""
    best = ranking["best"]
    level = round(100 * (1 - ranking["alpha"]))
    if ranking["tied"]:
        return (f"{best} agrees best with the humans ({ranking['method']}, n = {ranking['n']}), but "
                f"{', '.join(ranking['tied'])} cannot be told apart from it ({level} % paired bootstrap){shared}")
    return (f"{best} agrees best with the humans ({ranking['method']}, n = {ranking['n']}), clearly ahead of "
            f"every other metric scored here ({level} % paired bootstrap){shared}")
