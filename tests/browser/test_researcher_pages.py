"""A researcher in a real browser: logs in, sees the demo experiment, opens its reliability report
with every figure drawn."""
import pytest

from studies.authoring.demo import DEMO_PASSWORD, DEMO_USER, demo_load
from tests.browser.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_report_opens_with_tables_and_drawn_figures(live_server, page, screenshot):
    demo_load()
    log_in(page, live_server, DEMO_USER, DEMO_PASSWORD)
    assert page.locator("table.studies tbody tr").count() == 4
    screenshot(page, "experiment-list")
    page.click("text=Reliability report")
    page.wait_for_load_state("networkidle")
    assert page.locator("h1").inner_text().startswith("Reliability report")
    assert page.locator("#table1 table.icc tbody tr").count() == 4  # 2 criteria x (ICC-C, ICC-A)
    images = page.locator("figure.plot img")
    assert images.count() == 6
    for i in range(images.count()):
        images.nth(i).scroll_into_view_if_needed()
        # naturalWidth > 0 only when the browser fetched and decoded the SVG
        assert images.nth(i).evaluate("img => img.complete && img.naturalWidth > 0"), images.nth(i).get_attribute("src")
    page.click("summary >> nth=0")
    assert page.locator("#table1 details table tbody tr").count() == 4 * 2 * 6
    screenshot(page, "reliability-report")
    page.click("text=Recompute without flagged raters")
    page.wait_for_url("**exclude_flagged=1")
    assert page.locator("text=Include all raters").is_visible()
