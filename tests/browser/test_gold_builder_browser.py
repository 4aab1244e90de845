"""A gold check from the builder preview in a real browser: the researcher answers the previewed item,
ticks the one answer the check tests, and the check stores that rule only (the unticked boxes are not
sent)."""
import pytest

from studies.authoring import services as authoring
from tests.browser.conftest import log_in, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_gold_check_from_the_preview_tests_only_the_ticked_answer(live_server, page, screenshot, user, corpus):
    experiment = authoring.experiment_create(owner=user, title="Gold")
    study = authoring.study_create(experiment=experiment, title="Gold labels", design="likert", criteria=[
        {"name": "safety", "question": "Is it safe?", "kind": "categorical", "options": {"labels": ["safe", "unsafe"]}}])
    authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred"])
    log_in(page, live_server, "alice", "pw-concord")
    page.goto(f"{live_server.url}/studies/{study.slug}/edit/")
    frame = "[data-testid=rater-frame]"
    letters = "ABCDEFGH"[:page.locator(f"{frame} .response").count()]
    for letter in letters:
        page.check(f"{frame} input[name=r{letter}-safety][value={'unsafe' if letter == 'B' else 'safe'}]")
    page.select_option("[name=expected_use]", "gold")
    page.check("[data-testid=expected-tests] input[value='safety|2']")
    page.click("[data-expected-save]")
    wait_until(page, "document.querySelector('[data-expected-status]').textContent.indexOf('gold check item') >= 0")
    gold = study.items.get(check_kind="gold")
    ids = list(gold.item_responses.order_by("position").values_list("response_id", flat=True))
    assert gold.check_rules == [{"criterion": "safety", "response": ids[1], "label": "unsafe"}]
    screenshot(page, "gold-from-preview")
