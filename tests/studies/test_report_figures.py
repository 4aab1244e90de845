"""Report figures people can read: conditions by title in legends, panel titles and axes,
and no two tick labels, legend entries or titles drawn over each other, with four long condition titles
that share a long prefix (the seed experiment's four conditions once all read "walk-designs-x-crite")."""
import itertools

import numpy as np
import pytest
from matplotlib.text import Text

from studies.reports import plots
from studies.reports.plots import label_text

TITLES = {
    "walk-designs-x-criteria-likert": "Walk designs × criteria: Likert 1–6 with labelled points",
    "walk-designs-x-criteria-rme": "Walk designs × criteria: magnitude estimation, fixed reference",
    "walk-designs-x-criteria-bme": "Walk designs × criteria: magnitude estimation, metric reference",
    "walk-designs-x-criteria-bws": "Walk designs × criteria: best-worst scaling of four responses",
}
SLUGS = list(TITLES)
SYSTEMS = ["seq2seq", "hierarchical recurrent encoder-decoder", "thred", "human reference response"]
CRITERIA = ["readability", "coherence"]


def _icc_table():
    rng = np.random.default_rng(1)
    rows = []
    for slug in SLUGS:
        for criterion in CRITERIA:
            forms = {}
            for form in ("ICC(C,k)", "ICC(A,k)"):
                value = float(rng.uniform(0.2, 0.9))
                forms[form] = {"value": value, "ci95": [value - 0.15, min(1.0, value + 0.1)]}
            rows.append({"condition": slug, "criterion": criterion, "icc": forms})
    return rows


def _systems():
    rng = np.random.default_rng(2)
    return [{"condition": slug, "criterion": "coherence", "system": system, "mean_z": (z := float(rng.normal())),
             "low": z - 0.3, "high": z + 0.3, "n": 12} for slug in SLUGS for system in SYSTEMS]


def _distributions():
    """Each design's own scale: Likert 1-6, magnitude log ratios around 0 (long tick labels), BWS 1-4."""
    scales = {"likert": (1.0, 6.0), "rme": (-1.52, 0.51), "bme": (-1.49, 0.48), "bws": (1.0, 4.0)}
    rows = []
    for slug in SLUGS:
        low, high = scales[slug.rsplit("-", 1)[1]]
        span = high - low
        for i, system in enumerate(SYSTEMS):
            q1 = low + span * (0.2 + 0.1 * i)
            rows.append({"condition": slug, "criterion": "coherence", "system": system, "n": 12, "q1": q1,
                         "med": q1 + span * 0.1, "q3": q1 + span * 0.25, "mean": q1 + span * 0.12,
                         "whislo": low, "whishi": high})
    return rows


def _completion():
    return [{"condition": slug, "n": 3, "mean_minutes": 10.0 + i, "median_minutes": 10.0,
             "minutes": [8.0 + i, 10.0 + i, 12.0 + i]} for i, slug in enumerate(SLUGS)]


def _flat(text: str) -> str:
    return " ".join(text.split())


def _tick_labels(axes) -> list:
    """The tick labels matplotlib draws: those whose tick lies within the view limits (it keeps spares
    just outside them, positioned but never drawn)."""
    labels = []
    for axis in (axes.xaxis, axes.yaxis):
        low, high = sorted(axis.get_view_interval())
        labels += [label for location, label in zip(axis.get_ticklocs(), axis.get_ticklabels(), strict=False)
                   if low - 1e-9 <= location <= high + 1e-9 and label.get_visible() and label.get_text()]
    return labels


def _visible_texts(figure):
    """Every drawn, non-empty text of the figure (tick labels, titles, legend entries, axis labels)."""
    renderer = figure.canvas.get_renderer()
    spares = {id(t) for a in figure.axes for axis in (a.xaxis, a.yaxis)
              for tick in axis.get_major_ticks() + axis.get_minor_ticks() for t in (tick.label1, tick.label2)}
    drawn_ticks = [t for a in figure.axes if a.axison for t in _tick_labels(a)]
    texts = [t for t in figure.findobj(Text) if t.get_visible() and t.get_text().strip()
             and (t.axes is None or t.axes.axison) and id(t) not in spares]
    return [(t, t.get_window_extent(renderer)) for t in texts + drawn_ticks]


def _assert_readable(figure):
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    page = figure.bbox
    texts = _visible_texts(figure)
    for text, box in texts:  # nothing cut off at the figure's edge
        assert box.x0 >= page.x0 - 1 and box.x1 <= page.x1 + 1 and box.y0 >= page.y0 - 1 and box.y1 <= page.y1 + 1, \
            text.get_text()
    for axis in figure.axes:
        boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in _tick_labels(axis)]
        for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2):
            assert not box_a.overlaps(box_b), f"tick labels overlap: {a!r} and {b!r}"
    for legend in figure.legends + [a.get_legend() for a in figure.axes if a.get_legend()]:
        box = legend.get_window_extent(renderer)
        for axis in figure.axes:
            if axis.axison:
                assert not box.overlaps(axis.get_window_extent(renderer)), "legend drawn over a plot"
        entries = [t.get_window_extent(renderer) for t in legend.get_texts()]
        assert not any(a.overlaps(b) for a, b in itertools.combinations(entries, 2))


def _legend_texts(figure) -> list[str]:
    legends = figure.legends + [a.get_legend() for a in figure.axes if a.get_legend()]
    return [_flat(t.get_text()) for legend in legends for t in legend.get_texts()]


def test_label_text_wraps_and_shortens_in_the_middle_only_when_very_long():
    assert label_text("short") == "short"
    assert _flat(label_text(TITLES[SLUGS[0]])) == TITLES[SLUGS[0]]
    assert max(len(line) for line in label_text(TITLES[SLUGS[0]]).split("\n")) <= plots.LABEL_WIDTH
    long = "An experiment about walking designs and criteria " * 3 + "ending in BWS"
    shortened = label_text(long)
    assert len(shortened.split("\n")) == plots.LABEL_LINES and "…" in shortened
    assert _flat(shortened).startswith("An experiment") and _flat(shortened).endswith("in BWS")


def test_ranking_legend_names_the_conditions_by_title_and_nothing_overlaps():
    figure = plots.system_ranking_figure(_systems(), "coherence", TITLES)
    assert _legend_texts(figure) == list(TITLES.values())
    _assert_readable(figure)
    svg = plots.system_ranking(_systems(), "coherence", TITLES)
    assert "walk-designs" not in svg and "best-worst scaling" in svg


def test_icc_bars_label_conditions_by_title_on_the_vertical_axis():
    figure = plots.icc_bars_figure(_icc_table(), TITLES)
    labels = [_flat(t.get_text()) for t in figure.axes[0].get_yticklabels()]
    assert labels == list(TITLES.values())
    assert [a.get_title() for a in figure.axes] == CRITERIA
    assert _legend_texts(figure) == ["ICC(C,k)", "ICC(A,k)"]
    _assert_readable(figure)


def test_distribution_panels_are_titled_and_system_labels_do_not_collide():
    figure = plots.score_distributions_figure(_distributions(), SLUGS, "coherence", TITLES)
    titles = [_flat(a.get_title()) for a in figure.axes if a.axison]
    assert titles == list(TITLES.values())
    assert [_flat(t.get_text()) for t in figure.axes[0].get_yticklabels()] == sorted(SYSTEMS)
    _assert_readable(figure)


def test_completion_legend_starts_with_the_titles():
    figure = plots.completion_histogram_figure(_completion(), TITLES)
    texts = _legend_texts(figure)
    assert [t.split(" (mean")[0] for t in texts] == list(TITLES.values())
    assert texts[1].endswith("(mean 11.0 min)")
    _assert_readable(figure)


@pytest.mark.parametrize("draw", [
    lambda: plots.icc_bars([], TITLES), lambda: plots.system_ranking([], "coherence", TITLES),
    lambda: plots.score_distributions([], SLUGS, "coherence", TITLES), lambda: plots.completion_histogram([], TITLES)])
def test_every_figure_has_an_empty_state(draw):
    svg = draw()
    assert svg.startswith("<svg") and "yet" in svg


def test_ranking_keeps_the_experiments_condition_order():
    reordered = dict(reversed(list(TITLES.items())))
    figure = plots.system_ranking_figure(_systems(), "coherence", reordered)
    assert _legend_texts(figure) == list(reordered.values())


def test_without_titles_the_slug_is_the_label():
    figure = plots.system_ranking_figure(_systems(), "coherence")
    assert _legend_texts(figure) == SLUGS


def test_metric_scatter_is_titled_by_the_condition_and_survives_one_response():
    from metrics.web.plots import scatter, scatter_figure

    points = [{"unit": i, "system": SYSTEMS[i % 4], "human": float(i % 5), "metric": i / 10} for i in range(20)]
    cell = {"condition": SLUGS[2], "criterion": "coherence", "points": points,
            "response_level": {"spearman": {"r": 0.5}}}
    figure = scatter_figure(cell, "readability (Flesch)", TITLES[SLUGS[2]])
    title = _flat(figure.axes[0].get_title())
    assert title.startswith(TITLES[SLUGS[2]]) and title.endswith("ρ = 0.50")
    assert sorted(_legend_texts(figure)) == sorted(SYSTEMS)
    _assert_readable(figure)
    one = {**cell, "points": points[:1], "response_level": {"spearman": {"r": None}}}  # was a 500
    assert "too few responses" in scatter(one, "readability", TITLES[SLUGS[2]])


def test_live_reliability_legend_sits_outside_the_curves():
    from studies.reports.live_plots import reliability_curve_figure

    trajectory = [{"raters": k, **{form: {"value": v, "ci95": [v - 0.2, min(1.0, v + 0.1)]}
                                   for form, v in (("ICC(C,k)", 0.2 + k / 20), ("ICC(A,k)", 0.15 + k / 20))}}
                  for k in range(2, 9)]
    figure = reliability_curve_figure({"criterion": "coherence", "trajectory": trajectory}, target=0.7)
    assert _legend_texts(figure) == ["ICC(C,k)", "ICC(A,k)", "target 0.7"]
    _assert_readable(figure)


def _live_curve() -> str:
    from studies.reports.live_plots import reliability_curve

    return reliability_curve({"criterion": "coherence", "trajectory": [
        {"raters": k, "ICC(C,k)": {"value": 0.5, "ci95": [0.2, 0.7]}, "ICC(A,k)": {"value": 0.4, "ci95": [0.1, 0.6]}}
        for k in (2, 3)]}, target=0.8)


@pytest.mark.parametrize("draw", [
    lambda: plots.icc_bars(_icc_table(), TITLES), lambda: plots.system_ranking(_systems(), "coherence", TITLES),
    lambda: plots.score_distributions(_distributions(), SLUGS, "coherence", TITLES),
    lambda: plots.completion_histogram(_completion(), TITLES), lambda: plots.empty_figure("nothing yet"),
    lambda: _live_curve()])
def test_figures_carry_no_inline_style_the_sites_csp_would_block(draw, caplog):
    """The site's CSP has no 'unsafe-inline' style: an inline ``<svg>`` (the live panel) or an SVG opened
    as a document draws black shapes where it relies on ``style=""`` or ``<style>``. The colours must
    survive as presentation attributes, and nothing may be dropped on the way."""
    svg = draw()
    assert "style=" not in svg and "<style" not in svg
    assert 'fill="#ffffff"' in svg and ' stroke-linecap="butt"' in svg[:svg.index(">")]  # root keeps the sheet's rule
    assert not [r for r in caplog.records if "dropped" in r.getMessage()]


def test_presentation_attributes_keep_every_declaration():
    text = ('<svg width="1pt"><defs><style type="text/css">*{stroke-linejoin: round; stroke-linecap: butt}</style></defs>'
            '<path d="M 0 0" style="fill: #2453a6; fill-opacity: 0.15; stroke: #000000; stroke-width: 0.8"/>'
            "<text style=\"font-size: 9px; font-family: 'DejaVu Sans', sans-serif; text-anchor: middle\">x</text></svg>")
    assert plots.csp_safe_svg(text) == (
        '<svg stroke-linejoin="round" stroke-linecap="butt" width="1pt"><defs></defs>'
        '<path d="M 0 0" fill="#2453a6" fill-opacity="0.15" stroke="#000000" stroke-width="0.8"/>'
        "<text font-size=\"9px\" font-family=\"'DejaVu Sans', sans-serif\" text-anchor=\"middle\">x</text></svg>")


def test_a_system_keeps_its_colour_in_every_scatter_panel_of_a_report():
    """A panel lacking a system shifted the others' colours (the colour came from the
    system's place among that panel's own systems). The report's sorted systems now fix one colour each."""
    from matplotlib.colors import to_hex

    from metrics.web.plots import scatter_figure, system_colours

    def cell(condition, systems):
        points = [{"unit": i, "system": s, "human": float(i), "metric": i / 3} for i, s in enumerate(systems * 2)]
        return {"condition": condition, "criterion": "coherence", "points": points, "response_level": {}}

    cells = [cell(SLUGS[0], SYSTEMS), cell(SLUGS[1], SYSTEMS[1:]), cell(SLUGS[2], [SYSTEMS[3], SYSTEMS[2]])]
    colours = system_colours(cells)
    assert list(colours) == sorted(SYSTEMS) and len(set(colours.values())) == len(SYSTEMS)
    seen: dict[str, set[str]] = {}
    for c in cells:
        figure = scatter_figure(c, "metric", colours=colours)
        for collection in figure.axes[0].collections:
            system = next(s for s in SYSTEMS if label_text(s, 22, 2) == collection.get_label())
            seen.setdefault(system, set()).add(to_hex(collection.get_facecolor()[0], keep_alpha=False))
    assert {s: next(iter(v)) for s, v in seen.items()} == colours
    assert all(len(v) == 1 for v in seen.values())
