"""Metric figures as SVG (matplotlib, no CDN): metric-vs-human scatter, training loss curves."""
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


def loss_curve(run) -> str:
    """Training loss per optimizer step (thin), its running mean (bold) and validation losses (dots)."""
    steps = [(h["step"], h["loss"]) for h in run.losses if "loss" in h]
    checks = [(h["step"], h["validation"]) for h in run.losses if "validation" in h]
    figure, axis = plt.subplots(figsize=(4.2, 2.6))
    figure.subplots_adjust(left=0.15, right=0.97, bottom=0.18, top=0.88)
    if steps:
        x, y = np.array(steps).T
        axis.plot(x, y, color=COLOURS[0], lw=0.6, alpha=0.4, label="training (step)")
        window = max(1, len(y) // 20)
        axis.plot(x[window - 1:], np.convolve(y, np.ones(window) / window, mode="valid"), color=COLOURS[0], lw=1.5,
                  label=f"training (mean of {window})")
    if checks:
        axis.plot(*np.array(checks).T, "o-", color=COLOURS[1], ms=4, lw=1, label="validation")
    axis.set_title(f"run {run.pk}: {run.stage} {run.status}", fontsize=8)
    axis.set_xlabel("optimizer step", fontsize=8)
    axis.set_ylabel("loss", fontsize=8)
    if steps or checks:
        axis.legend(frameon=False, fontsize=6)
    return _svg(figure)
