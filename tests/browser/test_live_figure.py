"""The live-reliability figures on the study page, under the site's Content-Security-Policy (no inline
styles): the browser must draw them in colour, not as black squares. The test reads the pixels of
the figure as Chromium drew it."""
import io

import pytest
from PIL import Image

from studies.authoring.demo import DEMO_PASSWORD, DEMO_USER, demo_load
from studies.reports.plots import COLOURS
from tests.browser.conftest import log_in, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))


def _share(pixels: list[tuple[int, ...]], test) -> float:
    return sum(1 for p in pixels if test(p[:3])) / len(pixels)


def _near(colour: tuple[int, int, int], tolerance: int = 40):
    return lambda p: all(abs(a - b) <= tolerance for a, b in zip(p, colour, strict=True))


def test_the_live_figures_are_drawn_in_colour_under_the_csp(live_server, page, screenshot):
    demo_load()
    refused = []
    page.on("console", lambda message: refused.append(message.text) if "Content Security Policy" in message.text else None)
    log_in(page, live_server, DEMO_USER, DEMO_PASSWORD)
    response = page.goto(f"{live_server.url}/studies/demo-likert/")
    policy = response.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "unsafe-inline" not in policy
    wait_until(page, "document.querySelectorAll('#live figure.live-figure svg').length === 2")
    figures = page.locator("#live figure.live-figure svg")
    figures.nth(0).scroll_into_view_if_needed()
    screenshot(page, "study-live-figures")
    for i in range(figures.count()):
        shot = Image.open(io.BytesIO(figures.nth(i).screenshot())).convert("RGB")
        pixels = list(shot.get_flattened_data()) if hasattr(shot, "get_flattened_data") else list(shot.getdata())
        assert shot.width > 200 and shot.height > 150
        white = _share(pixels, lambda p: min(p) >= 245)
        dark = _share(pixels, lambda p: max(p) <= 60)
        consistency, agreement = (_share(pixels, _near(_rgb(c))) for c in COLOURS[:2])
        # a blocked style attribute fills every shape black: the background must be white, black only text and
        # axes, and both curves drawn in their own colours
        assert white > 0.6 and dark < 0.08, (i, white, dark)
        assert consistency > 0.002 and agreement > 0.002, (i, consistency, agreement)
    assert not refused, refused
