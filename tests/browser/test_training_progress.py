"""A training run's row on /metrics/ follows the trainer live (steps, loss, best validation, status)
while the run executes in the test's thread, and ends done with its registered model."""
import time

import pytest

from metrics.training import services as training
from ml.trainers import Callback
from tests.browser.conftest import log_in, wait_until
from tests.factories import UserFactory
from tests.ml.toy import tiny_encoder_dir, toy_ddpp

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


class Slow(Callback):
    def __init__(self, page, run, screenshot):
        self.page, self.run, self.screenshot, self.seen = page, run, screenshot, []

    def on_step(self, state, loss, parts):
        time.sleep(0.3)  # slow enough for the page to see the run move
        if state.step == 8:
            selector = f"tr[data-run='{self.run.pk}']"
            wait_until(self.page, f"document.querySelector(\"{selector} progress\").value >= 40", timeout=10000)
            self.seen.append((self.page.locator(f"{selector} progress").evaluate("el => el.value"),
                              self.page.locator(f"{selector} .run-loss").inner_text()))
            self.screenshot(self.page, "training-run-progress")


def test_training_progress_and_loss_update_without_a_reload(live_server, page, screenshot, tmp_path, monkeypatch, settings):
    settings.ARTIFACTS_DIR = tmp_path / "artifacts"
    monkeypatch.setattr(training, "PROGRESS_EVERY_S", 0.0)
    staff = UserFactory(username="trainer", is_staff=True)
    staff.set_password("pw-concord")
    staff.save()
    run = training.training_run_create(
        metric="quantidce", stage="mlr", model_name="browser-mlr", encoder=str(tiny_encoder_dir(tmp_path / "enc")),
        train_data=str(toy_ddpp(tmp_path / "t.json", 24)), validation_data=str(toy_ddpp(tmp_path / "v.json", 6, seed=5)),
        epochs=2, learning_rate=1e-3, max_length=32, enqueue=False)
    log_in(page, live_server, "trainer", "pw-concord")
    page.goto(f"{live_server.url}/metrics/")
    row = f"tr[data-run='{run.pk}']"
    assert page.locator(f"{row} .run-status").inner_text() == "queued"
    slow = Slow(page, run, screenshot)
    training.training_run_execute(run=run, callbacks=[slow])
    wait_until(page, f"document.querySelector(\"{row}\").dataset.status === 'done'", timeout=30000)
    percent, loss = slow.seen[0]
    assert 40 <= percent < 100 and float(loss) > 0
    assert page.locator(f"{row} .run-numbers").inner_text() == "16/16 (100.0%)"
    assert float(page.locator(f"{row} .run-validation").inner_text()) > 0
