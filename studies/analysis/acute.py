"""ACUTE-Eval's results as the paper reports them (Li, Weston and Roller 2019, "ACUTE-Eval: Improved
Dialogue Evaluation with Optimized Questions and Multi-turn Comparisons", Tables 3-5): per system pair
the share of decisive judgments won by each system, with a two-sided binomial test against 0.5 and
significance marks. No Django.

The counts, the Wilson intervals (Wilson 1927), the exact p (scipy ``binomtest``) and Holm's adjustment
are ``studies.analysis.pairwise.win_rates``; Bradley–Terry over all systems and position bias are the
rest of ``studies.analysis.pairwise``. This module adds the marks and the paper's square table.
"""
from __future__ import annotations

from typing import Any

import pandas as pd

MARKS = ((0.001, "***"), (0.01, "**"), (0.05, "*"))


def significance_mark(p: float | None) -> str:
    """``***`` p < 0.001, ``**`` p < 0.01, ``*`` p < 0.05, else "" (also for no test)."""
    if p is None:
        return ""
    return next((mark for level, mark in MARKS if p < level), "")


def win_table(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The paper's table, per criterion: one row per (system, opponent) in both directions with the
    system's win rate among decisive judgments, the pair's exact two-sided binomial p, the mark and
    the Wilson interval of that win rate. ``frame`` has studies.analysis.pairwise's columns."""
    from studies.analysis.pairwise import win_rates

    rows = []
    for r in win_rates(frame):
        if r["win_rate_a"] is None:
            continue
        for system, opponent, rate, low, high, wins in (
                (r["system_a"], r["system_b"], r["win_rate_a"], r["ci_low"], r["ci_high"], r["wins_a"]),
                (r["system_b"], r["system_a"], 1 - r["win_rate_a"], 1 - r["ci_high"], 1 - r["ci_low"], r["wins_b"])):
            rows.append({"criterion": r["criterion"], "system": system, "opponent": opponent, "wins": wins,
                         "decisive": r["wins_a"] + r["wins_b"], "win_rate": rate, "ci_low": low, "ci_high": high,
                         "p": r["p"], "mark": significance_mark(r["p"])})
    return rows
