"""Report figures as inline SVG (matplotlib, Agg backend; no JavaScript, no CDN).

Each ``*_figure`` function takes plain rows from ``studies.analysis.report`` and returns a matplotlib
Figure (tests inspect it); the function of the same name without ``_figure`` returns the SVG string.

Readability rules: conditions are named by their titles (``titles``: slug -> title), never by
slug; long labels wrap at word boundaries (``label_text``), and only a label longer than three lines is
shortened, in the middle, because the conditions of one experiment often share a long prefix and differ at
the end; long category labels sit on a horizontal axis (one per row) so they cannot collide; the
constrained layout makes room for labels and for legends placed outside the axes."""
from __future__ import annotations

import math
import textwrap
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from studies.figures import COLOURS, _svg, csp_safe_svg, empty_figure  # noqa: E402, F401  (re-used by name)

LABEL_WIDTH = 26  # characters per line of a wrapped label
LABEL_LINES = 3
LINE_INCHES = 0.17  # height of one 8-9 pt text line, for sizing figures to their labels


def label_text(text: str, width: int = LABEL_WIDTH, max_lines: int = LABEL_LINES) -> str:
    """``text`` wrapped at word boundaries to ``width`` characters a line; beyond ``max_lines`` lines the
    middle is replaced by an ellipsis, keeping the start and the end (where conditions differ)."""
    text = " ".join(str(text).split())
    lines = textwrap.wrap(text, width, break_on_hyphens=False) or [""]
    if len(lines) <= max_lines:
        return "\n".join(lines)
    tail = text[-(width - 2):]
    tail = tail.split(" ", 1)[1] if " " in tail and text[-(width - 1)] != " " else tail  # whole words only
    return "\n".join([*lines[: max_lines - 1], f"… {tail.strip()}"])


def _lines(label: str) -> int:
    return label.count("\n") + 1


def _titled(titles: dict[str, str] | None, slug: str) -> str:
    return (titles or {}).get(slug) or slug


def _in_condition_order(conditions: list[str], titles: dict[str, str] | None) -> list[str]:
    """The experiment's order (``titles`` is built from it), so a condition keeps its colour and place
    in every figure; conditions without a title go last."""
    hint = list(titles or {})
    return sorted(conditions, key=lambda c: hint.index(c) if c in hint else len(hint))


def _legend_below(figure: Figure, axis, *, ncols: int = 2) -> None:
    handles, labels = axis.get_legend_handles_labels()
    if handles:
        figure.legend(handles, labels, loc="outside lower center", frameon=False, fontsize=8,
                      ncols=min(ncols, len(handles)))


def score_distributions_figure(stats: list[dict[str, Any]], conditions: list[str], criterion: str,
                               titles: dict[str, str] | None = None) -> Figure | None:
    """Horizontal box plots of normalised scores per system (precomputed quartiles), one panel per
    condition (three a row), systems on the shared vertical axis; None when there is nothing to draw."""
    rows = [s for s in stats if s["criterion"] == criterion]
    if not conditions or not rows:
        return None
    systems = sorted({s["system"] for s in rows}, key=str)
    system_labels = [label_text(s, 22, 2) for s in systems]
    panel_titles = [label_text(_titled(titles, c), 30) for c in conditions]
    ncols = 2 if len(conditions) == 4 else min(len(conditions), 3)
    nrows = math.ceil(len(conditions) / ncols)
    row_inches = max(0.32, LINE_INCHES * max(map(_lines, system_labels)) + 0.12) * len(systems)
    title_inches = LINE_INCHES * max(map(_lines, panel_titles)) + 0.15
    figure, axes = plt.subplots(nrows, ncols, figsize=(1.4 + 2.8 * ncols, nrows * (row_inches + title_inches + 0.55)),
                                sharey=True, squeeze=False, layout="constrained")
    for index, axis in enumerate(axes.flat):
        if index >= len(conditions):
            axis.set_axis_off()
            continue
        condition = conditions[index]
        boxes = [s for s in rows if s["condition"] == condition]
        if boxes:
            axis.bxp([{**s, "label": s["system"], "fliers": []} for s in boxes],
                     positions=[systems.index(s["system"]) for s in boxes], orientation="horizontal",
                     showmeans=True, widths=0.6, patch_artist=True, manage_ticks=False,
                     boxprops={"facecolor": "#dbe5f5"}, medianprops={"color": COLOURS[0]},
                     meanprops={"marker": "D", "markersize": 3, "markerfacecolor": COLOURS[1], "markeredgecolor": "none"})
        else:
            axis.text(0.5, 0.5, "no ratings", ha="center", va="center", transform=axis.transAxes, color="#555")
        axis.set_title(panel_titles[index], fontsize=8)
        axis.tick_params(axis="x", labelsize=7)
        axis.tick_params(axis="y", labelsize=8)
        axis.xaxis.set_major_locator(MaxNLocator(nbins=6, steps=[1, 2, 5, 10]))  # few round ticks: log ratios are long
    axes[0][0].set_yticks(range(len(systems)), system_labels)
    axes[0][0].set_ylim(len(systems) - 0.5, -0.5)
    figure.supxlabel(f"{criterion} (normalised score; ◆ mean)", fontsize=8)
    return figure


def score_distributions(stats: list[dict[str, Any]], conditions: list[str], criterion: str,
                        titles: dict[str, str] | None = None) -> str:
    figure = score_distributions_figure(stats, conditions, criterion, titles)
    return _svg(figure) if figure else empty_figure(f"{criterion}: no submitted ratings yet")


def icc_bars_figure(table: list[dict[str, Any]], titles: dict[str, str] | None = None,
                    forms: tuple[str, ...] = ("ICC(C,k)", "ICC(A,k)")) -> Figure | None:
    """ICC per condition (rows, by title) with 95% CI error bars, one panel per criterion; None when no
    cell has an ICC yet."""
    rows = [r for r in table if "icc" in r and all(r["icc"][f]["value"] is not None for f in forms)]
    if not rows:
        return None
    conditions = list(dict.fromkeys(r["condition"] for r in rows))
    criteria = list(dict.fromkeys(r["criterion"] for r in rows))
    labels = [label_text(_titled(titles, c)) for c in conditions]
    row_inches = max(0.22 * len(forms) + 0.18, LINE_INCHES * max(map(_lines, labels)) + 0.12)
    figure, axes = plt.subplots(1, len(criteria), figsize=(2.2 + 2.4 * len(criteria), row_inches * len(conditions) + 1.1),
                                sharey=True, squeeze=False, layout="constrained")
    height = 0.8 / len(forms)
    lows = [0.0]
    for axis, criterion in zip(axes[0], criteria, strict=True):
        cells = {r["condition"]: r for r in rows if r["criterion"] == criterion}
        for f, form in enumerate(forms):
            ys, values, low, high = [], [], [], []
            for i, condition in enumerate(conditions):
                if condition not in cells:
                    continue
                entry = cells[condition]["icc"][form]
                ci = entry.get("ci95") or [None, None]
                ys.append(i + (f - (len(forms) - 1) / 2) * height)
                values.append(entry["value"])
                low.append(entry["value"] - ci[0] if ci[0] is not None else 0)
                high.append(ci[1] - entry["value"] if ci[1] is not None else 0)
                lows.append(ci[0] if ci[0] is not None else entry["value"])
            axis.barh(ys, values, height, xerr=[low, high], capsize=2, color=COLOURS[f], label=form,
                      error_kw={"lw": 0.8})
        axis.axvline(0, color="#999", lw=0.6)
        axis.set_title(criterion, fontsize=9)
        axis.set_xlabel("ICC (95% CI)", fontsize=8)
    axes[0][0].set_yticks(range(len(conditions)), labels, fontsize=8)
    axes[0][0].set_ylim(len(conditions) - 0.5, -0.5)
    for axis in axes[0]:
        axis.set_xlim(max(-1.0, min(lows) - 0.05), 1.0)
    _legend_below(figure, axes[0][0], ncols=len(forms))
    return figure


def icc_bars(table: list[dict[str, Any]], titles: dict[str, str] | None = None,
             forms: tuple[str, ...] = ("ICC(C,k)", "ICC(A,k)")) -> str:
    figure = icc_bars_figure(table, titles, forms)
    return _svg(figure) if figure else empty_figure("ICC cannot be computed yet: it needs at least two raters on one item")


def completion_histogram_figure(completion: list[dict[str, Any]], titles: dict[str, str] | None = None) -> Figure | None:
    """Completion time (minutes) per condition, one outline histogram per condition; None without times."""
    if not any(row["minutes"] for row in completion):
        return None
    figure, axis = plt.subplots(figsize=(5.5, 3.4), layout="constrained")
    for i, row in enumerate(completion):
        if row["minutes"]:
            axis.hist(row["minutes"], bins=10, histtype="step", linewidth=1.6, color=COLOURS[i % len(COLOURS)],
                      label=label_text(f"{_titled(titles, row['condition'])} (mean {row['mean_minutes']:.1f} min)", 34))
    axis.set_xlabel("minutes to complete")
    axis.set_ylabel("raters")
    axis.yaxis.set_major_locator(MaxNLocator(integer=True))
    _legend_below(figure, axis)
    return figure


def completion_histogram(completion: list[dict[str, Any]], titles: dict[str, str] | None = None) -> str:
    figure = completion_histogram_figure(completion, titles)
    return _svg(figure) if figure else empty_figure("no completion times recorded yet")


def system_ranking_figure(systems: list[dict[str, Any]], criterion: str,
                          titles: dict[str, str] | None = None) -> Figure | None:
    """Mean per-rater z-score per system with 95% CIs, one series of points per condition (legend by
    title, below the axes); None when the criterion has no ratings."""
    rows = pd.DataFrame([r for r in systems if r["criterion"] == criterion])
    if rows.empty:
        return None
    order = rows.groupby("system")["mean_z"].mean().sort_values(ascending=False).index.tolist()
    conditions = _in_condition_order(list(dict.fromkeys(rows["condition"])), titles)
    labels = [label_text(s, 22, 2) for s in order]
    legend_lines = sum(_lines(label_text(_titled(titles, c), 34)) for c in conditions[1::2] or conditions)
    figure, axis = plt.subplots(figsize=(5.5, max(0.4, LINE_INCHES * max(map(_lines, labels)) + 0.1) * len(order)
                                         + 1.0 + LINE_INCHES * legend_lines), layout="constrained")
    for c, condition in enumerate(conditions):
        part = rows[rows["condition"] == condition]
        y = part["system"].map(order.index) + (c - (len(conditions) - 1) / 2) * 0.15
        low = (part["mean_z"] - part["low"]).fillna(0)
        high = (part["high"] - part["mean_z"]).fillna(0)
        axis.errorbar(part["mean_z"], y, xerr=[low, high], fmt="o", ms=4, capsize=2,
                      color=COLOURS[c % len(COLOURS)], label=label_text(_titled(titles, condition), 34))
    axis.set_yticks(range(len(order)), labels)
    axis.set_ylim(len(order) - 0.5, -0.5)
    axis.axvline(0, color="#bbb", lw=0.8)
    axis.set_xlabel(f"{criterion}: mean z-score (95% CI)")
    _legend_below(figure, axis)
    return figure


def system_ranking(systems: list[dict[str, Any]], criterion: str, titles: dict[str, str] | None = None) -> str:
    figure = system_ranking_figure(systems, criterion, titles)
    return _svg(figure) if figure else empty_figure(f"{criterion}: no submitted ratings yet")
