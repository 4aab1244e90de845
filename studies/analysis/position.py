"""Position effects: does where a response stood on the rater's screen move its score?

Every rater sees an item's responses in their own random order (``AssignmentItem.response_order``), so
without a position effect the mean score at each position is the same. Per condition × criterion:

- z: each rating's normalised score z-scored within its rater (and criterion), which takes each
  rater's leniency and scale out (``normalise.per_rater_z``), so designs and raters compare;
- per shown position p (1 = first on the screen): n, mean z and its t 95% CI, mean ± t(0.975, n−1)·s/√n;
- Kruskal–Wallis H across positions (``scipy.stats.kruskal``), H = (N−1) Σ n_p (r̄_p − r̄)² / Σ (r − r̄)²
  on the ranks r of z (ties corrected), df = positions − 1. A small p says the positions differ; the
  ratings of one rater are not independent, so read it as a screening flag, not a confirmatory test.

No Django here: the caller loads a frame with columns study, criterion, rater, score, shown_position.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from studies.analysis.normalise import per_rater_z

MIN_PER_POSITION = 2  # a position needs two ratings for a spread, the test two positions with some


def _finite(value: float) -> float | None:
    return float(value) if value is not None and np.isfinite(value) else None


def position_effects(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """One entry per condition × criterion with a row per shown position and the Kruskal–Wallis test;
    ``note`` says why there is no test (one position, too few ratings, no variation)."""
    frame = frame.dropna(subset=["score", "shown_position"])
    if frame.empty:
        return []
    key = frame["rater"].astype(str) + "\x1f" + frame["criterion"].astype(str)
    frame = frame.assign(z=per_rater_z(frame["score"].to_numpy(), key.to_numpy()),
                         shown_position=frame["shown_position"].astype(int))
    out = []
    for (study, criterion), part in frame.groupby(["study", "criterion"], sort=False):
        positions = []
        groups = []
        for position, g in part.groupby("shown_position", sort=True):
            z = g["z"].to_numpy()
            mean = float(z.mean())
            half = (float(stats.t.ppf(0.975, z.size - 1) * z.std(ddof=1) / np.sqrt(z.size))
                    if z.size >= MIN_PER_POSITION else None)
            positions.append({"position": int(position), "letter": _letter(int(position)), "n": int(z.size),
                              "mean_z": mean, "mean_score": float(g["score"].mean()),
                              "low": _finite(mean - half) if half is not None else None,
                              "high": _finite(mean + half) if half is not None else None})
            if z.size >= MIN_PER_POSITION:
                groups.append(z)
        entry = {"condition": study, "criterion": criterion, "positions": positions, "H": None, "df": None,
                 "p": None, "note": ""}
        if len(groups) < 2:
            entry["note"] = "needs two screen positions with at least two ratings each"
        elif np.unique(np.concatenate(groups)).size < 2:
            entry["note"] = "every rating has the same z-score"
        else:
            result = stats.kruskal(*groups)
            entry.update(H=_finite(result.statistic), df=len(groups) - 1, p=_finite(result.pvalue))
        out.append(entry)
    return out


def _letter(position: int) -> str:
    letters = ""
    while position:
        position, rest = divmod(position - 1, 26)
        letters = chr(65 + rest) + letters
    return letters
