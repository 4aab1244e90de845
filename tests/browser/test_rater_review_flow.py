"""Rater review in a real browser: the rater's page shows every flag with its figure and
threshold and the rater's answers; the queue excludes a rater with a reason, the rater's page reverts
it; the queue lists the most disputed items and the report names the label aggregation it used."""
import pytest

from studies.models import Assignment
from tests.browser.conftest import log_in
from tests.studies.review_fixtures import SPAMMER, rate_all, review_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def rated(user, corpus):
    study = review_study(user, corpus)
    return study, rate_all(study)


def test_review_rater_page_shows_each_flag_with_its_threshold_and_the_answers(live_server, page, screenshot, rated):
    study, done = rated
    log_in(page, live_server, "alice", "pw-concord")
    page.goto(f"{live_server.url}/studies/{study.slug}/raters/{done[SPAMMER].rater_id}/")
    straight = page.locator("[data-testid=flag-straight_lining]")
    assert "above 0.8" in straight.inner_text() and "flagged" in straight.inner_text()
    assert "0 of 1" in page.locator("[data-testid=flag-checks]").inner_text()
    assert page.locator("[data-testid=competence] tbody tr").count() == 1
    assert page.locator("[data-testid=rater-item]").count() == Assignment.objects.get(pk=done[SPAMMER].pk) \
        .assignment_items.count()
    assert page.locator("[data-testid=checks]").inner_text().count("failed") == 1
    screenshot(page, "rater-review-rater-page")


def test_review_queue_excludes_a_rater_and_the_rater_page_reverts_it(live_server, page, screenshot, rated):
    study, done = rated
    spam = done[SPAMMER]
    log_in(page, live_server, "alice", "pw-concord")
    page.goto(f"{live_server.url}/studies/{study.slug}/")
    page.click("[data-testid=review-link]")
    page.wait_for_url(f"**/studies/{study.slug}/review/")
    rows = page.locator("[data-testid=queue-rater]")
    assert rows.count() == 1
    rows.first.locator("[data-testid=reason]").fill("one label and one number for everything")
    rows.first.locator("[data-testid=exclude]").click()
    page.wait_for_load_state("networkidle")
    assert "Exclude from results: one label and one number for everything" in page.locator("[data-testid=verdict]").inner_text()
    spam.refresh_from_db()
    assert spam.excluded
    screenshot(page, "rater-review-queue-excluded")
    page.locator("[data-testid=queue-rater] h3 a").click()
    assert page.locator("[data-testid=excluded]").is_visible()
    page.click("[data-testid=revert]")
    page.wait_for_load_state("networkidle")
    assert page.locator("[data-testid=excluded]").count() == 0
    assert "reverted by alice" in page.locator("[data-testid=decision]").first.inner_text()
    spam.refresh_from_db()
    assert not spam.excluded


def test_review_queue_lists_disputed_items_and_the_report_names_the_aggregation(live_server, page, screenshot, rated):
    study, _ = rated
    log_in(page, live_server, "alice", "pw-concord")
    page.goto(f"{live_server.url}/studies/{study.slug}/review/")
    disputed = page.locator("[data-testid=disputed-item]")
    assert 0 < disputed.count() <= 10
    assert "SD of scores" in disputed.first.inner_text() or "most common answer" in disputed.first.inner_text()
    assert "Dawid–Skene (1979)" in page.locator("[data-testid=aggregation-safety]").inner_text()
    page.click("text=Report")
    page.wait_for_load_state("networkidle")
    section = page.locator("[data-testid=aggregation-safety]")
    assert "labels aggregated by Dawid–Skene (1979)" in section.inner_text()
    assert section.locator("[data-testid=method-mace]").inner_text().count("of 1") == 1
    screenshot(page, "rater-review-report-aggregation")
