"""The pairwise report's figure, Bradley–Terry strengths with bootstrap CIs (a forest plot), as SVG;
imported only when a figure is drawn (matplotlib)."""
from __future__ import annotations

from typing import Any

from studies.figures import COLOURS, _svg, empty_figure, plt


def bt_strengths(entry: dict[str, Any] | None, criterion: str) -> str:
    """θ per system (log-strength, mean 0) with its bootstrap CI, best at the top; the top axis reads
    as the probability of beating a system of average strength."""
    bt = (entry or {}).get("bt")
    if not bt or not bt.get("strengths"):
        reason = (entry or {}).get("bt_error") or "no submitted comparisons yet"
        return empty_figure(f"{criterion}: {reason}", size=(5.5, 1.6))
    rows = bt["strengths"]
    figure, axis = plt.subplots(figsize=(5.5, 0.45 * len(rows) + 1.1))
    figure.subplots_adjust(left=0.28, right=0.95, top=0.82, bottom=0.2)
    ys = list(range(len(rows)))[::-1]
    for y, row in zip(ys, rows, strict=True):
        if row["ci_low"] is not None:
            axis.plot([row["ci_low"], row["ci_high"]], [y, y], color=COLOURS[0], linewidth=2)
        axis.plot([row["theta"]], [y], "o", color=COLOURS[0])
    axis.axvline(0, color="#999", linewidth=0.8, linestyle="--")
    axis.set_yticks(ys, [r["system"] for r in rows])
    axis.set_xlabel("Bradley–Terry log-strength θ (95% bootstrap CI)")
    axis.set_title(f"{criterion}: strengths, penalised ({bt['resamples'] - bt['dropped']} resamples over {bt['over']}s)",
                   fontsize=9)
    return _svg(figure)
