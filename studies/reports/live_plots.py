"""The live-reliability figure: ICC(C,k) and ICC(A,k) with 95% CI bands against the number of
raters so far, and the target line (inline SVG, matplotlib as in ``studies.reports.plots``)."""
from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from studies.reports.plots import COLOURS, _svg, plt


def reliability_curve_figure(entry: dict[str, Any], *, target: float) -> Figure:
    """One criterion's trajectory; the legend sits below the axes (constrained layout), never over the
    curves it explains."""
    points = entry["trajectory"]
    raters = [p["raters"] for p in points]
    figure, axis = plt.subplots(figsize=(3.6, 2.7), layout="constrained")
    bottoms = [0.0]  # the axis starts at 0 or at the lowest bound drawn, whichever is lower (never below -1)
    for colour, form in zip(COLOURS, ("ICC(C,k)", "ICC(A,k)"), strict=False):
        values = [p[form]["value"] for p in points]
        lows = [p[form]["ci95"][0] for p in points]
        highs = [p[form]["ci95"][1] for p in points]
        axis.plot(raters, [float("nan") if v is None else v for v in values], marker="o", markersize=3,
                  color=colour, label=form)
        axis.fill_between(raters, [float("nan") if v is None else max(v, -1) for v in lows],
                          [float("nan") if v is None else v for v in highs], color=colour, alpha=0.15, linewidth=0)
        # degenerate data (e.g. every rater gives one answer throughout) can leave points without a bound
        bottoms += [max(v, -1) for v in (*lows, *values) if v is not None]
    axis.axhline(target, color=COLOURS[2], linestyle="--", linewidth=1, label=f"target {target:g}")
    axis.set_ylim(min(bottoms), 1)
    axis.set_xlabel("raters so far")
    axis.set_ylabel("reliability (95% CI)")
    axis.set_title(entry["criterion"], fontsize=9)
    axis.xaxis.set_major_locator(MaxNLocator(integer=True))  # raters come whole
    figure.legend(fontsize=7, frameon=False, loc="outside lower center", ncols=3)
    return figure


def reliability_curve(entry: dict[str, Any], *, target: float) -> str:
    return _svg(reliability_curve_figure(entry, target=target))


def label_shares_figure_object(entry: dict[str, Any]) -> Figure:
    """One label criterion's shares so far: per system (rows) one horizontal bar per label, share of the
    system's answers (0 to 1; a multi-label answer may count for several labels), legend below."""
    systems = [row["system"] for row in entry["shares"]]
    labels = entry["labels"]
    height = 0.8 / max(len(labels), 1)
    figure, axis = plt.subplots(figsize=(4.2, 1.2 + 0.22 * len(systems) * len(labels)), layout="constrained")
    for j, label in enumerate(labels):
        shares = [row["labels"][j]["share"] for row in entry["shares"]]
        axis.barh([i - 0.4 + height * (j + 0.5) for i in range(len(systems))], shares, height=height,
                  color=COLOURS[j % len(COLOURS)], label=label)
    axis.set_yticks(range(len(systems)), systems, fontsize=8)
    axis.invert_yaxis()  # first system on top, as in the table
    axis.set_xlim(0, 1)
    axis.set_xlabel("share of answers so far")
    axis.set_title(entry["criterion"], fontsize=9)
    figure.legend(fontsize=7, frameon=False, loc="outside lower center", ncols=min(len(labels), 4))
    return figure


def label_shares_figure(entry: dict[str, Any]) -> str:
    return _svg(label_shares_figure_object(entry))
