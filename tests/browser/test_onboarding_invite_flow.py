"""Onboarding for invitation links in a real browser: an invitee opens their link, practises and fails
(told politely, no platform code, no slot; reopening the invitation shows the same result, not a second
try, and another browser cannot use the link), and another invitee passes and goes on to the study."""
import re

import pytest

from studies.authoring import services as authoring
from studies.models import Assignment, PracticeAttempt, Rater
from studies.onboarding import services as onboarding
from studies.rating import invites
from tests.browser.test_onboarding_flow import answer

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]



def agree(tab):
    """Consent comes first: the start page, then the first practice item."""
    assert tab.locator("[data-testid=practice-first]").count() == 1
    tab.check("input[name=agree]")
    tab.click("button:has-text('Start')")
    tab.wait_for_url(re.compile(r".*/r/p/[^/]+/items/0/$"))


@pytest.fixture
def invite_practice_study(make_study):
    study = make_study("likert", publish=False, platform="invite", raters_per_item=2, items_per_assignment=3)
    onboarding.practice_item_create(study=study, context="A: Can I book a table for two?\nB: Of course, when?",
                                    responses=["Tonight at eight, please.", "Purple seventeen banana."],
                                    rules=[{"response": 2, "max": 2}], explanation="B is off-topic: **1 or 2**.")
    onboarding.practice_item_create(study=study, context="A: Where is the station?",
                                    responses=["Second street on the left.", "I like trains."],
                                    rules=[{"greater": 1, "than": 2}], explanation="A gives the way; B does not.")
    onboarding.onboarding_configure(study=study, pass_mark=2)
    authoring.study_publish(study=study)
    return study


def test_onboarding_invitee_fails_then_another_passes_in_the_browser(live_server, browser, screenshot,
                                                                     invite_practice_study):
    failing, passing = (invites.invite_create(study=invite_practice_study) for _ in range(2))
    link = live_server.url + f"/r/{invite_practice_study.slug}/?invite=" + "{}"
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    tab = context.new_page()
    try:
        tab.goto(link.format(failing.token))
        agree(tab)
        assert "Practice 1 of 2" in tab.inner_text("body")
        answer(tab, (3, 5))
        tab.click("[data-testid=practice-next]")
        answer(tab, (1, 5))
        tab.click("[data-testid=practice-next]")
        result = tab.inner_text("[data-testid=practice-result]")
        assert "Thank you for your time" in result and "you may close this page" in result
        assert tab.locator("[data-testid=completion-code]").count() == 0 and "HIT" not in result
        screenshot(tab, "practice-invite-failed-phone")
        tab.goto(link.format(failing.token))  # reopening the invitation: the same result, no second try
        assert tab.get_attribute("[data-testid=practice-result]", "data-result") == "failed"
        other = browser.new_context().new_page()
        other.goto(link.format(failing.token))
        assert "already in use" in other.inner_text("body")
        other.context.close()
        assert not Assignment.objects.exists() and not Rater.objects.exists()
        tab.goto(link.format(passing.token))
        agree(tab)
        answer(tab, (4, 1))
        tab.click("[data-testid=practice-next]")
        answer(tab, (5, 2))
        tab.click("[data-testid=practice-next]")
        tab.click("[data-testid=practice-continue]")
        tab.wait_for_url(re.compile(r".*/r/a/[^/]+/items/0/$"))  # consent was given before the practice
        assignment = Assignment.objects.get()
        assert assignment.rater.external_id == f"invite-{passing.pk}"
        tab.goto(link.format(passing.token))  # the invitation now resumes the slot
        assert f"/r/a/{assignment.token}/" in tab.url
        assert PracticeAttempt.objects.filter(status="failed").count() == 1
    finally:
        context.close()
