"""The experiment link in a real browser: two raters open the same /r/x/<experiment>/ address from
Prolific, land in different conditions, rate, and take the study's fixed completion code back."""
import re

import pytest

from studies.authoring import services
from studies.models import Assignment, Rating, Study
from tests.browser.test_rater_flow import answer_item
from tests.factories import prolific_id

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_two_raters_by_the_experiment_link_fill_both_conditions(live_server, browser, screenshot, make_study, user):
    experiment = services.experiment_create(owner=user, title="Two Likert wordings")
    conditions = [make_study("likert", platform="prolific", experiment=experiment, raters_per_item=2,
                             items_per_assignment=1) for _ in range(2)]
    Study.objects.filter(pk__in=[s.pk for s in conditions]).update(platform_config={"completion_code": "C0NC0RD1"})
    for worker in ("pa", "pb"):
        context = browser.new_context(viewport={"width": 1200, "height": 900})
        page = context.new_page()
        page.goto(f"{live_server.url}/r/x/{experiment.slug}/?PROLIFIC_PID={prolific_id(worker)}&STUDY_ID=e8bc163c82eee18733288c7d&SESSION_ID={prolific_id('x-' + worker + '')}")
        page.check("input[name=agree]")
        page.click("button:has-text('Start')")
        page.wait_for_url(re.compile(r".*/items/0/$"))
        answer_item(page, "likert", 0)
        page.click("form#item-form button[type=submit]")
        page.wait_for_load_state("networkidle")
        page.check("input[name=prior_rating_experience][value=no]")
        page.check("input[name=prior_agent_experience][value=yes]")
        page.click("button:has-text('Submit')")
        assert page.get_by_test_id("completion-code").inner_text() == "C0NC0RD1"
        link = page.get_by_role("link", name="Return to Prolific").get_attribute("href")
        assert link == "https://app.prolific.com/submissions/complete?cc=C0NC0RD1"
        screenshot(page, f"experiment-link-done-{worker}")
        context.close()
    placed = dict(Assignment.objects.values_list("rater__external_id", "study_id"))
    assert set(placed.values()) == {s.pk for s in conditions}  # one rater in each condition
    assert set(Assignment.objects.values_list("status", flat=True)) == {"submitted"}
    assert Rating.objects.count() == 2 * 4 * 2  # two raters x four responses x two criteria
