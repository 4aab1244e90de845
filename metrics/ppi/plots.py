"""The human + metric figure: each system's 95% interval, human-only beside prediction-powered (SVG)."""
from __future__ import annotations

from studies.reports.plots import COLOURS, _svg, label_text, plt


def intervals(criterion: dict, title: str, metric_name: str) -> str:
    """One row per system: the human-only interval (grey) above the prediction-powered one (colour), each
    with its point estimate; the axis is the criterion's normalised human score."""
    rows = criterion["systems"]
    figure, axis = plt.subplots(figsize=(4.6, 0.5 + 0.55 * max(len(rows), 1)), layout="constrained")
    for i, row in enumerate(rows):
        y = len(rows) - 1 - i
        axis.errorbar([row["human_estimate"]], [y + 0.16],
                      xerr=[[row["human_estimate"] - row["human_ci_low"]], [row["human_ci_high"] - row["human_estimate"]]],
                      fmt="o", color="#888", ms=3, capsize=2, lw=1.2, label="human only" if i == 0 else None)
        axis.errorbar([row["estimate"]], [y - 0.16], xerr=[[row["estimate"] - row["ci_low"]], [row["ci_high"] - row["estimate"]]],
                      fmt="s", color=COLOURS[0], ms=3, capsize=2, lw=1.6,
                      label=f"with {label_text(metric_name, 24)} (PPI++)" if i == 0 else None)
    axis.set_yticks(range(len(rows)), [label_text(r["system"], 18) for r in reversed(rows)], fontsize=7)
    axis.set_ylim(-0.6, len(rows) - 0.4)
    axis.set_xlabel(f"mean human score ({criterion['criterion']}), 95% intervals", fontsize=7)
    axis.tick_params(axis="x", labelsize=7)
    axis.set_title(label_text(f"{title} · {criterion['criterion']}", 60), fontsize=8)
    if rows:
        figure.legend(loc="outside lower center", frameon=False, fontsize=6, ncols=2)
    return _svg(figure)
