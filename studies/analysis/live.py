"""Live reliability while ratings arrive: the seed study's ICC-C = ICC(C,k) and ICC-A = ICC(A,k)
with 95% CIs per criterion, raters per item so far, the Spearman-Brown number of raters needed for a
target reliability, and the course of reliability against the raters so far. Pure pandas/NumPy
(no Django); ``studies.reports.live_selectors`` feeds it from the database and caches it per ratings version.

Spearman-Brown (Spearman 1910; Brown 1910): with single-rater reliability ρ1 (ICC(C,1) for the
consistency form, ICC(A,1) for agreement) the mean of m raters has reliability mρ1/(1 + (m−1)ρ1),
so a target t needs m = t(1 − ρ1) / (ρ1(1 − t)) raters per item (rounded up; none if ρ1 ≤ 0).
"""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd

from studies.analysis.icc import ICCInputError, ICCWarning, icc

LIVE_FORMS = ("ICC(C,k)", "ICC(A,k)")
SINGLE = {"ICC(C,k)": "ICC(C,1)", "ICC(A,k)": "ICC(A,1)"}
CHECKPOINTS = 10


def raters_needed(rho1: float, target: float) -> int | None:
    """Raters per item for an average-rater reliability of ``target`` (Spearman-Brown); None when
    the single-rater reliability is not positive (no number of raters reaches the target)."""
    if not (rho1 > 0 and np.isfinite(rho1)):
        return None
    if rho1 >= target:
        return 1
    return math.ceil(target * (1 - rho1) / (rho1 * (1 - target)) - 1e-9)


def _finite(value: float) -> float | None:
    return float(value) if value is not None and np.isfinite(value) else None


def _icc(frame: pd.DataFrame):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ICCWarning)  # kept in result.warnings
        return icc(frame["unit"].to_numpy(), frame["rater"].to_numpy(), frame["score"].to_numpy())


def _trajectory(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """ICC(C,k) and ICC(A,k) after the first j raters (in order of their first rating) for up to
    ``CHECKPOINTS`` values of j spaced geometrically up to all raters so far."""
    arrival = frame.groupby("rater", sort=False)["order"].min().sort_values()
    rank = pd.Series(np.arange(len(arrival)), index=arrival.index)
    rater_rank = rank.reindex(frame["rater"]).to_numpy()
    total = len(arrival)
    steps = sorted({int(round(j)) for j in np.geomspace(2, total, min(CHECKPOINTS, total - 1))} | {total}) if total >= 2 else []
    points = []
    for j in steps:
        part = frame[rater_rank < j]
        try:
            result = _icc(part)
        except ICCInputError:
            continue
        point = {"raters": j, "ratings": int(len(part)), "k0": result.k0}
        for form in LIVE_FORMS:
            point[form] = {"value": _finite(result[form].value), "ci95": [_finite(b) for b in result[form].ci95]}
        points.append(point)
    return points


def live_summary(frame: pd.DataFrame, *, target: float = 0.8) -> list[dict[str, Any]]:
    """One entry per criterion from a long frame with columns criterion, unit (the rated response),
    rater, score (normalised) and order (arrival, e.g. the rating id)."""
    out = []
    for criterion, part in frame.groupby("criterion", sort=True):
        per_item = part.groupby("unit").size()
        entry: dict[str, Any] = {
            "criterion": criterion, "n_ratings": int(len(part)), "n_items": int(per_item.size),
            "n_raters": int(part["rater"].nunique()), "target": target,
            "raters_per_item": {"mean": float(per_item.mean()), "min": int(per_item.min()), "max": int(per_item.max())},
        }
        try:
            result = _icc(part)
        except ICCInputError as error:
            entry["error"] = str(error)
            out.append(entry)
            continue
        entry.update({"k0": result.k0, "method": result.method, "ipsation": result.ipsation,
                      "warnings": list(result.warnings)})
        entry["forms"] = {form: {"value": _finite(result[form].value), "p": _finite(result[form].p),
                                 "ci95": [_finite(b) for b in result[form].ci95]}
                          for form in (*LIVE_FORMS, *SINGLE.values())}
        entry["raters_needed"] = {form: raters_needed(result[SINGLE[form]].value, target) for form in LIVE_FORMS}
        entry["trajectory"] = _trajectory(part)
        out.append(entry)
    return out


def target_reached(summary: list[dict[str, Any]], *, form: str, target: float) -> bool:
    """The close rule: every criterion has an ICC and the lower 95% bound of ``form`` is at least
    ``target``."""
    if not summary:
        return False
    for entry in summary:
        low = entry.get("forms", {}).get(form, {}).get("ci95", [None])[0]
        if low is None or low < target:
            return False
    return True
