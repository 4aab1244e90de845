"""Metric figures as SVG (matplotlib, no CDN): metric-vs-human scatter, training loss curves."""
from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from studies.reports.plots import COLOURS, _svg, label_text, plt

# Colours of systems: the report palette, then four more distinct ones, before any repeats.
SYSTEM_COLOURS = [*COLOURS, "#1a9bb0", "#b8860b", "#6b4fbb", "#e377c2"]


def system_colours(cells: list[dict]) -> dict[str, str]:
    """One colour per system for every panel of a report: the report's systems (all its cells) sorted by
    name, taking the palette in turn. A panel's own systems would shift colours whenever one lacks a system."""
    systems = sorted({str(p["system"]) for cell in cells for p in cell["points"]})
    return {system: SYSTEM_COLOURS[i % len(SYSTEM_COLOURS)] for i, system in enumerate(systems)}


def scatter_figure(cell: dict, metric_name: str, title: str | None = None, *,
                   colours: dict[str, str] | None = None) -> Figure:
    """Human (mean normalised score) against the metric per response, coloured by system (``colours``:
    the report's ``system_colours``, so a system has one colour in every panel; default: this cell's),
    with the least-squares line; titled by the condition's title (not its slug), the criterion and
    Spearman's ρ when it exists (it needs three responses with some variation)."""
    points = cell["points"]
    colours = colours or system_colours([cell])
    figure, axis = plt.subplots(figsize=(3.8, 3.4), layout="constrained")
    systems = sorted({str(p["system"]) for p in points})
    for system in systems:
        mine = [p for p in points if str(p["system"]) == system]
        axis.scatter([p["metric"] for p in mine], [p["human"] for p in mine], s=12, alpha=0.75,
                     color=colours.get(system, "#555555"), label=label_text(system, 22, 2))
    x = np.array([p["metric"] for p in points], dtype=float)
    y = np.array([p["human"] for p in points], dtype=float)
    if len(points) > 2 and np.ptp(x) > 0:
        slope, intercept = np.polyfit(x, y, 1)
        xs = np.linspace(x.min(), x.max(), 2)
        axis.plot(xs, slope * xs + intercept, color="#333", lw=1)
    rho = ((cell.get("response_level") or {}).get("spearman") or {}).get("r")
    correlation = f"ρ = {rho:.2f}" if isinstance(rho, (int, float)) and np.isfinite(rho) else "ρ: too few responses"
    heading = label_text(f"{title or cell['condition']} · {cell['criterion']}", 44)
    axis.set_title(f"{heading}\n{correlation}", fontsize=8)
    axis.set_xlabel(label_text(metric_name, 44), fontsize=8)
    axis.set_ylabel("human (mean normalised)", fontsize=8)
    if systems:
        figure.legend(loc="outside lower center", frameon=False, fontsize=6, ncols=min(3, len(systems)))
    return figure


def scatter(cell: dict, metric_name: str, title: str | None = None, *, colours: dict[str, str] | None = None) -> str:
    return _svg(scatter_figure(cell, metric_name, title, colours=colours))


def loss_curve(run) -> str:
    """Training loss per optimizer step (thin), its running mean (bold) and validation losses (dots)."""
    steps = [(h["step"], h["loss"]) for h in run.losses if "loss" in h]
    checks = [(h["step"], h["validation"]) for h in run.losses if "validation" in h]
    figure, axis = plt.subplots(figsize=(4.2, 2.6), layout="constrained")
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
