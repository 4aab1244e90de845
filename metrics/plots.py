"""Metric-vs-human scatter with the least-squares line, as SVG (matplotlib, no CDN)."""
from __future__ import annotations

import numpy as np

from studies.plots import COLOURS, _svg, plt


def scatter(cell: dict, metric_name: str) -> str:
    points = cell["points"]
    figure, axis = plt.subplots(figsize=(3.6, 3.0))
    figure.subplots_adjust(left=0.18, right=0.97, bottom=0.16, top=0.9)
    systems = sorted({p["system"] for p in points})
    for i, system in enumerate(systems):
        mine = [p for p in points if p["system"] == system]
        axis.scatter([p["metric"] for p in mine], [p["human"] for p in mine], s=12, alpha=0.75,
                     color=COLOURS[i % len(COLOURS)], label=system)
    x = np.array([p["metric"] for p in points])
    y = np.array([p["human"] for p in points])
    if len(points) > 2 and np.ptp(x) > 0:
        slope, intercept = np.polyfit(x, y, 1)
        xs = np.linspace(x.min(), x.max(), 2)
        axis.plot(xs, slope * xs + intercept, color="#333", lw=1)
    rho = cell["response_level"]["spearman"]["r"]
    axis.set_title(f"{cell['condition']} · {cell['criterion']}  ρ = {rho:.2f}" if rho == rho else cell["condition"], fontsize=8)
    axis.set_xlabel(metric_name, fontsize=8)
    axis.set_ylabel("human (mean normalised)", fontsize=8)
    axis.legend(frameon=False, fontsize=6)
    return _svg(figure)
