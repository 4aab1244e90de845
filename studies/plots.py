"""Report figures as inline SVG (matplotlib, Agg backend; no JavaScript, no CDN).

Each function takes plain rows from ``studies.analysis.report`` and returns an SVG string."""
from __future__ import annotations

import io
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

plt.rcParams.update({"svg.fonttype": "none", "font.size": 9, "axes.spines.top": False, "axes.spines.right": False,
                     "figure.dpi": 96})
COLOURS = ["#2453a6", "#d9822b", "#3a8f5c", "#9b3d8f", "#7a7f87", "#c23b3b"]


def _svg(figure) -> str:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg")  # fixed margins: one draw, no tight-bbox pass
    plt.close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def empty_figure(message: str, *, size: tuple[float, float] = (5, 1.6)) -> str:
    """A small figure that says why there is nothing to draw yet (the page never shows a broken image)."""
    figure, axis = plt.subplots(figsize=size)
    axis.set_axis_off()
    axis.text(0.5, 0.5, message, ha="center", va="center", transform=axis.transAxes, color="#555", wrap=True)
    return _svg(figure)


def score_distributions(stats: list[dict[str, Any]], conditions: list[str], criterion: str) -> str:
    """Box plots of normalised scores per system (precomputed quartiles), one panel per condition."""
    if not conditions or not any(s["criterion"] == criterion for s in stats):
        return empty_figure(f"{criterion}: no submitted ratings yet")
    figure, axes = plt.subplots(1, len(conditions), figsize=(2.6 * len(conditions), 2.8), squeeze=False)
    figure.subplots_adjust(left=0.08 if len(conditions) > 2 else 0.2, right=0.98, bottom=0.28, top=0.88, wspace=0.3)
    for axis, condition in zip(axes[0], conditions, strict=True):
        boxes = sorted((s for s in stats if s["condition"] == condition and s["criterion"] == criterion),
                       key=lambda s: s["system"])
        if boxes:
            axis.bxp([{**s, "label": s["system"], "fliers": []} for s in boxes], showmeans=True, widths=0.6,
                     patch_artist=True, boxprops={"facecolor": "#dbe5f5"}, medianprops={"color": COLOURS[0]},
                     meanprops={"marker": "D", "markersize": 3, "markerfacecolor": COLOURS[1], "markeredgecolor": "none"})
        axis.set_title(condition, fontsize=9)
        axis.tick_params(axis="x", labelrotation=30)
    axes[0][0].set_ylabel(f"{criterion} (normalised)")
    return _svg(figure)


def icc_bars(table: list[dict[str, Any]], forms: tuple[str, ...] = ("ICC(C,k)", "ICC(A,k)")) -> str:
    """ICC per condition and criterion with 95% CI error bars."""
    rows = [r for r in table if "icc" in r and all(r["icc"][f]["value"] is not None for f in forms)]
    if not rows:
        return empty_figure("ICC cannot be computed yet: it needs at least two raters on one item")
    labels = [f"{r['condition']}\n{r['criterion']}" for r in rows]
    figure, axis = plt.subplots(figsize=(max(4, 0.9 * len(rows) + 1), 3.0))
    figure.subplots_adjust(left=0.08, right=0.98, bottom=0.25, top=0.95)
    width = 0.8 / len(forms)
    for f, form in enumerate(forms):
        values = [r["icc"][form]["value"] for r in rows]
        ci = [r["icc"][form].get("ci95") or [None, None] for r in rows]
        low = [v - c[0] if c[0] is not None else 0 for v, c in zip(values, ci, strict=True)]
        high = [c[1] - v if c[1] is not None else 0 for v, c in zip(values, ci, strict=True)]
        axis.bar([i + f * width for i in range(len(rows))], values, width, yerr=[low, high], capsize=3,
                 color=COLOURS[f], label=form)
    axis.set_xticks([i + width * (len(forms) - 1) / 2 for i in range(len(rows))], labels, fontsize=7)
    lows = [(r["icc"][forms[0]].get("ci95") or [0])[0] for r in rows]
    axis.set_ylim(min([0, *(x for x in lows if x is not None)]), 1)
    axis.set_ylabel("ICC (95% CI)")
    axis.legend(frameon=False, fontsize=8)
    return _svg(figure)


def completion_histogram(completion: list[dict[str, Any]]) -> str:
    """Completion time (minutes) per condition."""
    if not any(row["minutes"] for row in completion):
        return empty_figure("no completion times recorded yet")
    figure, axis = plt.subplots(figsize=(5, 2.8))
    figure.subplots_adjust(left=0.12, right=0.98, bottom=0.18, top=0.95)
    for i, row in enumerate(completion):
        if row["minutes"]:
            axis.hist(row["minutes"], bins=10, histtype="step", linewidth=1.6, color=COLOURS[i % len(COLOURS)],
                      label=f"{row['condition']} (mean {row['mean_minutes']:.1f})")
    axis.set_xlabel("minutes to complete")
    axis.set_ylabel("raters")
    if axis.get_legend_handles_labels()[0]:
        axis.legend(frameon=False, fontsize=8)
    else:
        axis.text(0.5, 0.5, "no completion times recorded", ha="center", va="center", transform=axis.transAxes)
    return _svg(figure)


def system_ranking(systems: list[dict[str, Any]], criterion: str) -> str:
    """Mean per-rater z-score per system with 95% CIs, one series of points per condition."""
    rows = pd.DataFrame([r for r in systems if r["criterion"] == criterion])
    if rows.empty:
        return empty_figure(f"{criterion}: no submitted ratings yet")
    order = rows.groupby("system")["mean_z"].mean().sort_values(ascending=False).index.tolist()
    conditions = list(dict.fromkeys(rows["condition"]))
    figure, axis = plt.subplots(figsize=(5.5, 0.45 * len(order) + 1.2))
    figure.subplots_adjust(left=0.2, right=0.75, bottom=0.8 / (0.45 * len(order) + 1.2), top=0.97)
    for c, condition in enumerate(conditions):
        part = rows[rows["condition"] == condition]
        y = part["system"].map(order.index) + (c - (len(conditions) - 1) / 2) * 0.15
        low = (part["mean_z"] - part["low"]).fillna(0)
        high = (part["high"] - part["mean_z"]).fillna(0)
        axis.errorbar(part["mean_z"], y, xerr=[low, high], fmt="o", ms=4, capsize=2,
                      color=COLOURS[c % len(COLOURS)], label=condition)
    axis.set_yticks(range(len(order)), order)
    axis.invert_yaxis()
    axis.axvline(0, color="#bbb", lw=0.8)
    axis.set_xlabel(f"{criterion}: mean z-score (95% CI)")
    axis.legend(frameon=False, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    return _svg(figure)
