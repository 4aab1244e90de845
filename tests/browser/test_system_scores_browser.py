"""The report's first section in a real browser: "System scores" with each system's score, its interval and n,
and the tested pairs, above the ICC tables; on a 390 px phone every system scores table fits its box or
scrolls inside a focusable region, and the page itself never scrolls sideways."""
import pytest

from studies.authoring.demo import DEMO_EXPERIMENT, DEMO_PASSWORD, DEMO_USER, demo_load
from tests.browser.conftest import log_in
from tests.browser.test_narrow_screens import OFFENDERS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# [table width, its region's visible width, the region scrolls, the region is focusable] per table
TABLES = """Array.from(document.querySelectorAll('#system-scores table')).map((t) => {
  const region = t.closest('[role=region]');
  return [t.scrollWidth, region.clientWidth, getComputedStyle(region).overflowX, region.tabIndex];
})"""


def test_system_scores_come_first_on_the_report_with_intervals_and_n(live_server, page, screenshot):
    demo_load()
    log_in(page, live_server, DEMO_USER, DEMO_PASSWORD)
    # the figures load after: the tables are what is read here (a loaded machine draws them slowly)
    assert page.goto(f"{live_server.url}/experiments/{DEMO_EXPERIMENT}/report/", wait_until="domcontentloaded",
                     timeout=120_000).status == 200
    section = page.locator("#system-scores")
    assert section.locator("h2").inner_text() == "System scores"
    first_card = page.locator("main section.card").first
    assert first_card.get_attribute("id") == "system-scores"  # before the ICC tables and every other section
    rows = section.locator("[data-testid=system-scores-table] tbody tr")
    assert rows.count() >= 2
    cells = rows.first.locator("td")
    assert cells.nth(2).inner_text().startswith("[") and int(cells.nth(3).inner_text()) >= 2  # interval, n
    assert section.locator("[data-testid=system-differences]").count() >= 1
    assert "rater" in section.locator("[data-testid=system-scores-basis]").first.inner_text()
    screenshot(page, "system-scores")


def test_system_scores_fit_or_scroll_in_a_focusable_region_at_390px(live_server, browser):
    demo_load()
    context = browser.new_context(viewport={"width": 390, "height": 800}, is_mobile=True, has_touch=True)
    tab = context.new_page()
    try:
        log_in(tab, live_server, DEMO_USER, DEMO_PASSWORD)
        assert tab.goto(f"{live_server.url}/experiments/{DEMO_EXPERIMENT}/report/", wait_until="domcontentloaded",
                        timeout=120_000).status == 200
        tables = tab.evaluate(TABLES)
        assert tables
        for width, box, overflow, focusable in tables:
            assert width <= box or overflow in ("auto", "scroll"), tables
            assert focusable == 0, tables  # a keyboard can reach it to scroll it
        scroll, inner = tab.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert scroll <= inner, tab.evaluate(OFFENDERS)
        region = tab.locator("#system-scores [role=region]").first
        region.focus()
        assert tab.evaluate("document.activeElement.getAttribute('role')") == "region"
    finally:
        context.close()
