"""The new-study page's live preview in a real browser at 1280 px: filling the form re-renders the rater's
page for a sample item beside it (nothing saved), the status line announces each refresh in one short
line, a refused form names its field, and the page with the preview shown has no axe violation."""
import pytest

from studies.authoring import services as authoring
from studies.models import Study
from tests.browser.conftest import log_in, wait_until
from tests.browser.test_a11y_axe import _violations
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DESKTOP = {"width": 1280, "height": 900}


def refreshed_after(tab, action) -> None:
    """Do ``action`` and wait for the preview the server renders after it."""
    before = tab.get_attribute("[data-builder-preview]", "data-refreshed") or "0"
    action()
    wait_until(tab, f"Number(document.querySelector('[data-builder-preview]').getAttribute('data-refreshed') || 0)"
                    f" > {before}")


def test_a11y_new_study_preview_updates_and_announces_at_desktop_width(browser, live_server, screenshot):
    user = UserFactory(username="ada")
    authoring.experiment_create(owner=user, title="Preview", slug="preview")
    tab = browser.new_context(viewport=DESKTOP).new_page()
    log_in(tab, live_server, "ada", "pw-concord")
    tab.goto(f"{live_server.url}/experiments/preview/studies/new/")
    status = tab.locator("[data-testid=preview-status]")
    assert status.get_attribute("role") == "status"  # a polite live region: one line, not the whole page
    assert tab.locator("[data-testid=preview-waiting]").is_visible()

    tab.fill("#id_title", "Cooking advice")
    refreshed_after(tab, lambda: tab.check("input[name=design][value=likert]"))
    refreshed_after(tab, lambda: tab.fill("[name=likert_points]", "5"))
    refreshed_after(tab, lambda: tab.fill("[name=c-0-question]", "Is the advice useful?"))
    frame = tab.locator("[data-testid=rater-frame]")
    assert "Is the advice useful?" in frame.inner_text()
    rows = tab.locator("[data-testid=builder] [data-row]").count()
    assert frame.locator("input[type=radio]").count() == 5 * 2 * rows  # 5 points, two sample responses
    assert status.text_content() == "Preview updated (item 1 of 1)."
    assert _violations(tab) == []
    screenshot(tab, "new-study-preview-1280")

    refreshed_after(tab, lambda: tab.fill("[name=likert_points]", "40"))
    assert "Points on the scale (Likert)" in tab.locator("[data-testid=preview-refused]").inner_text()
    assert status.text_content() == "Preview updated: 1 problem to fix."
    assert Study.objects.count() == 0  # the preview saved nothing
