"""Aggregated labels in a real browser: the report shows every target's aggregated label with its
probability and the raters' competence; the items browser shows the aggregated label under each
response; the review queue says which raters the disputed items leave out."""
import pytest

from studies.reports import aggregation_selectors
from tests.browser.conftest import log_in
from tests.studies.review_fixtures import rate_all, review_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def rated(user, corpus):
    study = review_study(user, corpus)
    return study, rate_all(study)


def test_aggregated_labels_on_the_report_with_probability_and_competence(live_server, page, screenshot, rated):
    study, _ = rated
    (found,) = aggregation_selectors.study_aggregation(study)
    log_in(page, live_server, "alice", "pw-concord")
    page.goto(f"{live_server.url}/studies/{study.slug}/report/")
    box = page.locator("[data-testid=aggregated-labels-safety]")
    box.locator("summary").click()
    rows = box.locator("[data-testid=aggregated-label-row]")
    assert rows.count() == len(found["targets"])
    first = found["targets"][0]
    assert first["label"] in rows.first.inner_text() and f"{first['probability']:.3f}" in rows.first.inner_text()
    assert page.locator("[data-testid=competence-safety] tbody tr").count() == 5
    screenshot(page, "aggregated-labels-report")


def test_aggregated_labels_in_the_items_browser_under_each_response(live_server, page, screenshot, rated):
    study, _ = rated
    (found,) = aggregation_selectors.study_aggregation(study)
    labels = {t["label"] for t in found["targets"]}
    log_in(page, live_server, "alice", "pw-concord")
    page.goto(f"{live_server.url}/studies/{study.slug}/browse/")
    line = page.locator("[data-testid=aggregated-line]").first
    assert "Aggregated" in line.inner_text() and "Dawid–Skene" in line.inner_text()
    cells = line.locator("[data-testid=aggregated-label]")
    assert cells.count() >= 1
    for index in range(cells.count()):
        text = cells.nth(index).inner_text()
        assert text == "—" or (text.split(" (p ")[0] in labels and "(p " in text)
    screenshot(page, "aggregated-labels-browser")


def test_aggregated_labels_review_queue_says_which_raters_the_disputed_items_leave_out(live_server, page, rated):
    study, _ = rated
    log_in(page, live_server, "alice", "pw-concord")
    page.goto(f"{live_server.url}/studies/{study.slug}/review/")
    scope = page.locator("[data-testid=disputed-scope]")
    assert "answers of 5 raters" in scope.inner_text()
    assert page.locator("[data-testid=aggregated-labels-safety]").count() == 1
