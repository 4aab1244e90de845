"""The live label figures (studies.reports.live_labels) on the study page of the categorical demo, as
Chromium draws them under the site's Content-Security-Policy: bars in the labels' colours on white, not
black squares (a blocked style attribute fills every shape black), beside the counts and α table."""
import io

import pytest
from PIL import Image

from studies.authoring.demo import DEMO_CORPUS, DEMO_PASSWORD, DEMO_USER, demo_load, demo_user
from studies.authoring.kinds_demo import kinds_demo_load
from studies.models import Corpus
from studies.reports.plots import COLOURS
from tests.browser.conftest import log_in, wait_until
from tests.browser.test_live_figure import _near, _rgb, _share

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_categorical_live_label_figures_drawn_in_colour_under_the_csp(live_server, page, screenshot):
    demo_load()
    kinds_demo_load(owner=demo_user(), corpus=Corpus.objects.get(slug=DEMO_CORPUS))
    refused = []
    page.on("console", lambda message: refused.append(message.text) if "Content Security Policy" in message.text else None)
    log_in(page, live_server, DEMO_USER, DEMO_PASSWORD)
    page.goto(f"{live_server.url}/studies/demo-safety-labels/")
    wait_until(page, "document.querySelectorAll('#live figure.live-labels-figure svg').length === 2")
    assert page.get_attribute("[data-testid=live-labels-safety]", "data-kind") == "categorical"
    assert "Krippendorff's α (nominal)" in page.inner_text("[data-testid=live-labels-safety-alpha]")
    figures = page.locator("#live figure.live-labels-figure svg")
    figures.nth(0).scroll_into_view_if_needed()
    screenshot(page, "study-live-label-figures")
    for i in range(figures.count()):
        shot = Image.open(io.BytesIO(figures.nth(i).screenshot())).convert("RGB")
        pixels = list(shot.get_flattened_data()) if hasattr(shot, "get_flattened_data") else list(shot.getdata())
        white = _share(pixels, lambda p: min(p) >= 245)
        dark = _share(pixels, lambda p: max(p) <= 60)
        first, second = (_share(pixels, _near(_rgb(c))) for c in COLOURS[:2])
        assert white > 0.5 and dark < 0.1, (i, white, dark)
        assert first > 0.002 and second > 0.002, (i, first, second)
    assert not refused, refused
