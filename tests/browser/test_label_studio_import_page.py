"""The import page in a real browser: a Label Studio task export uploaded with "Detect" is read as Label
Studio (never FED), its annotations become a closed study; a broken export says what it was read as."""
import json

import pytest

from studies.models import Study
from tests.browser.conftest import log_in
from tests.factories import UserFactory
from tests.studies.dataio_files import FIXTURES

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_label_studio_import_page_detects_the_format(live_server, page, screenshot, tmp_path):
    user = UserFactory(username="lena")
    user.set_password("pw-lena-123")
    user.save()
    log_in(page, live_server, "lena", "pw-lena-123")
    page.goto(f"{live_server.url}/import/")
    page.set_input_files("input[type=file]", str(FIXTURES / "label_studio_export.json"))
    page.click("form button[type=submit]")
    page.wait_for_load_state()
    body = page.inner_text("body")
    assert "Detected format: Label Studio task export" in body and "10 ratings" in body
    study = Study.objects.get(experiment__owner=user)
    assert study.status == Study.Status.CLOSED
    screenshot(page, "import-label-studio")
    broken = json.loads((FIXTURES / "label_studio_export.json").read_text())
    broken[0]["annotations"][0]["result"][0]["value"]["rating"] = "four"
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken))
    page.goto(f"{live_server.url}/import/")
    page.set_input_files("input[type=file]", str(path))
    page.click("form button[type=submit]")
    page.wait_for_load_state()
    body = page.inner_text("body")
    assert "Read as Label Studio task export (detected)" in body and "must be a finite number" in body
    assert "must be an object quality" not in body
