"""Figures as inline SVG: matplotlib (Agg backend) set up once, the palette, and an SVG that draws under
the site's Content-Security-Policy. The report's figures (``studies.reports.plots``), a design's own
(``studies.designs.pairwise_plots``) and the metrics app's draw with these."""
from __future__ import annotations

import io
import logging
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

# text.parse_math off: titles, system names and criteria are researchers' text, and "$x$" in one is a
# price or a name, not TeX (mathtext made "$5 or $\\frac" a 500 and "$x^2$" a superscript).
plt.rcParams.update({"svg.fonttype": "none", "font.size": 9, "axes.spines.top": False, "axes.spines.right": False,
                     "figure.dpi": 96, "text.parse_math": False})
COLOURS = ["#2453a6", "#d9822b", "#3a8f5c", "#9b3d8f", "#7a7f87", "#c23b3b"]
logger = logging.getLogger(__name__)

# SVG presentation attributes (SVG 2, "Presentation attributes"): the CSS properties an SVG element may carry as
# plain XML attributes. The site's Content-Security-Policy (no 'unsafe-inline' style) blocks ``style=""`` and
# ``<style>`` in an inline SVG, which left the figures black; presentation attributes are not styles to it.
PRESENTATION_ATTRIBUTES = frozenset({
    "alignment-baseline", "baseline-shift", "clip-path", "clip-rule", "color", "color-interpolation",
    "color-interpolation-filters", "color-rendering", "cursor", "direction", "display", "dominant-baseline", "fill",
    "fill-opacity", "fill-rule", "filter", "flood-color", "flood-opacity", "font-family", "font-size",
    "font-size-adjust", "font-stretch", "font-style", "font-variant", "font-weight", "image-rendering",
    "letter-spacing", "lighting-color", "marker-end", "marker-mid", "marker-start", "mask", "opacity", "overflow",
    "paint-order", "pointer-events", "shape-rendering", "stop-color", "stop-opacity", "stroke", "stroke-dasharray",
    "stroke-dashoffset", "stroke-linecap", "stroke-linejoin", "stroke-miterlimit", "stroke-opacity", "stroke-width",
    "text-anchor", "text-decoration", "text-rendering", "transform-origin", "unicode-bidi", "vector-effect",
    "visibility", "word-spacing", "writing-mode",
})
_STYLE_ATTRIBUTE = re.compile(r'\sstyle="([^"]*)"')
_STYLE_ELEMENT = re.compile(r"<style[^>]*>(.*?)</style>", re.S)



def _as_attributes(declarations: str) -> str:
    """``fill: #fff; stroke-width: 0.8`` -> `` fill="#fff" stroke-width="0.8"``; a property that has no
    presentation attribute is dropped (the CSP would block it anyway) and logged."""
    out = []
    for declaration in declarations.split(";"):
        name, colon, value = (part.strip() for part in declaration.partition(":"))
        if not colon:
            continue
        if name in PRESENTATION_ATTRIBUTES:
            out.append(f' {name}="{value}"')
        else:
            logger.warning("SVG style %s: %s has no presentation attribute; dropped", name, value)
    return "".join(out)


def csp_safe_svg(text: str) -> str:
    """matplotlib's SVG with every ``style`` attribute turned into presentation attributes and its one
    stylesheet rule (``*{stroke-linejoin: round; stroke-linecap: butt}``, inherited properties) moved onto
    the root element, so the figure draws the same inline under a CSP that forbids inline styles."""
    root = ""
    for rules in _STYLE_ELEMENT.findall(text):
        for selector, declarations in re.findall(r"([^{}]+)\{([^}]*)\}", rules):
            if selector.strip() == "*":
                root += _as_attributes(declarations)
            else:
                logger.warning("SVG stylesheet rule for %s dropped", selector.strip())
    text = _STYLE_ELEMENT.sub("", text)
    text = _STYLE_ATTRIBUTE.sub(lambda match: _as_attributes(match.group(1)), text)
    return text.replace("<svg", "<svg" + root, 1)


def _svg(figure: Figure) -> str:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg")
    plt.close(figure)
    text = buffer.getvalue()
    return csp_safe_svg(text[text.index("<svg"):])


def empty_figure(message: str, *, size: tuple[float, float] = (5, 1.6)) -> str:
    """A small figure that says why there is nothing to draw yet (the page never shows a broken image)."""
    figure, axis = plt.subplots(figsize=size)
    axis.set_axis_off()
    axis.text(0.5, 0.5, message, ha="center", va="center", transform=axis.transAxes, color="#555", wrap=True)
    return _svg(figure)
