"""A scoring run's progress bar, updated live by the page while the scoring service runs (in the test's
thread, which shares the live server's database), reaches 100% and shows the run done, without a reload."""
import time

import pytest

from metrics.implementations.readability import Readability
from metrics.scoring import loop as scoring_loop
from metrics.scoring import services
from tests.browser.conftest import log_in, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_progress_bar_reaches_100_percent(live_server, page, screenshot, make_study, user, monkeypatch):
    user.set_password("pw-concord")
    user.save()
    study = make_study("likert")
    run = services.scoring_run_create(metric_model=services.metric_model_default(key="readability"), study=study,
                                      enqueue=False)
    monkeypatch.setattr(services, "BATCH", 4)
    monkeypatch.setattr(scoring_loop, "PROGRESS_EVERY_S", 0.0)
    real = Readability.score

    def slow(self, batch):
        time.sleep(0.4)  # slow enough for the page to see the run move
        return real(self, batch)

    monkeypatch.setattr(Readability, "score", slow)
    log_in(page, live_server, user.username, "pw-concord")
    page.goto(f"{live_server.url}/metrics/")
    bar = page.locator(f"tr[data-run='{run.pk}'] progress")
    assert bar.evaluate("el => el.value") == 0
    seen_midway = []

    def midway(done, total):
        if done == 16:  # the row in the database says 12/24 by now; the page must show it unprompted
            wait_until(page, f"document.querySelector(\"tr[data-run='{run.pk}'] progress\").value >= 50",
                                   timeout=10000)
            seen_midway.append(bar.evaluate("el => el.value"))
            screenshot(page, "scoring-run-progress")

    services.scoring_run_execute(run=run, on_progress=midway)
    wait_until(page, f"document.querySelector(\"tr[data-run='{run.pk}']\").dataset.status === 'done'", timeout=30000)
    assert 50 <= seen_midway[0] < 100
    assert bar.evaluate("el => el.value") == 100
    assert page.locator(f"tr[data-run='{run.pk}'] .run-numbers").inner_text() == "24/24 (100.0%)"
