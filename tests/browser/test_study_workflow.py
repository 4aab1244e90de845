"""A researcher in a real browser edits a draft's settings, duplicates it and deletes the copy,
without Django admin or JSON."""
import pytest

from studies.authoring import services
from studies.models import Study
from tests.browser.conftest import log_in
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_edit_duplicate_and_delete_a_draft(live_server, page, screenshot):
    user = UserFactory(username="researcher", password="pw-concord")
    experiment = services.experiment_create(owner=user, title="Workflow", slug="workflow")
    study = services.study_create(experiment=experiment, title="BWS draft", design="bws")
    log_in(page, live_server, "researcher", "pw-concord")
    page.goto(f"{live_server.url}/studies/{study.slug}/")
    page.click("text=Edit settings")
    page.wait_for_url(f"{live_server.url}/studies/{study.slug}/edit/")
    page.wait_for_load_state("load")
    assert page.locator("label", has_text="Responses ranked per item (BWS)").count() == 1
    assert page.locator("text=Bws tuple size").count() == 0
    # Only the chosen design's settings show; choosing another design shows its own.
    assert page.locator("[data-field=bws_tuple_size]").is_visible()
    assert page.locator("[data-field=likert_points]").is_hidden()
    page.check("input[name=design][value=likert]")
    assert page.locator("[data-field=likert_points]").is_visible() and page.locator("[data-field=bws_tuple_size]").is_hidden()
    page.check("input[name=design][value=bws]")
    page.fill("#id_title", "BWS pilot")
    page.fill("#id_reward", "1.50")
    page.fill("#id_estimated_minutes", "9")
    page.fill("#id_consent_text", "I agree to take part.")
    screenshot(page, "study-edit")
    page.click("text=Save settings")
    page.wait_for_url(f"{live_server.url}/studies/{study.slug}/")
    assert page.locator("h1").inner_text().startswith("BWS pilot")
    assert page.locator("[data-testid=hourly-rate]").inner_text() == "$10.00 an hour"  # an invitation study: US dollars unless its currency says otherwise
    study.refresh_from_db()
    assert (str(study.reward), study.estimated_minutes, study.consent_text) == ("1.50", 9, "I agree to take part.")

    page.click("button:has-text('Duplicate')")
    page.wait_for_url(lambda url: url.endswith("/") and f"/studies/{study.slug}/" not in url)
    assert page.locator("h1").inner_text().startswith("BWS pilot (copy)")
    copy = Study.objects.exclude(pk=study.pk).get()
    assert (copy.reward, copy.consent_text) == (study.reward, study.consent_text)
    screenshot(page, "study-duplicated")

    page.check("input[name=confirm]")
    page.click("button:has-text('Delete draft')")
    page.wait_for_url(f"{live_server.url}/")
    assert page.locator("text=Draft “BWS pilot (copy)” deleted.").is_visible()
    assert list(Study.objects.values_list("pk", flat=True)) == [study.pk]
