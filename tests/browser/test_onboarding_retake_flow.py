"""Onboarding retakes in a real browser: an invitee answers the first practice item wrongly, the practice
ends there (at most 0 wrong), the fail page offers a retake; the second try passes and goes on to the study.
Out of retakes, the fail page is the soft block (told, no retake button)."""
import re

import pytest

from studies.authoring import services as authoring
from studies.models import Assignment, PracticeAttempt
from studies.onboarding import services as onboarding
from studies.rating import invites
from tests.browser.test_onboarding_flow import answer
from tests.browser.test_onboarding_invite_flow import agree

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def retake_study(make_study):
    study = make_study("likert", publish=False, platform="invite", raters_per_item=2, items_per_assignment=3)
    onboarding.practice_item_create(study=study, context="A: Can I book a table for two?\nB: Of course, when?",
                                    responses=["Tonight at eight, please.", "Purple seventeen banana."],
                                    rules=[{"response": 2, "max": 2}], explanation="B is off-topic: **1 or 2**.")
    onboarding.practice_item_create(study=study, context="A: Where is the station?",
                                    responses=["Second street on the left.", "I like trains."],
                                    rules=[{"greater": 1, "than": 2}], explanation="A gives the way; B does not.")
    onboarding.onboarding_configure(study=study, pass_mark=2, max_wrong=0, retakes=1)
    authoring.study_publish(study=study)
    return study


def test_onboarding_retake_flow_in_the_browser(live_server, browser, screenshot, retake_study):
    invite = invites.invite_create(study=retake_study)
    link = live_server.url + f"/r/{retake_study.slug}/?invite={invite.token}"
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    tab = context.new_page()
    try:
        tab.goto(link)
        agree(tab)
        answer(tab, (3, 5))  # B rated 5: wrong, and no wrong answer is allowed
        tab.click("[data-testid=practice-next]")
        assert tab.locator("[data-testid=practice-too-many-wrong]").count() == 1
        assert "1 more time" in tab.inner_text("[data-testid=practice-retakes-left]")
        screenshot(tab, "practice-retake-offered-phone")
        tab.click("[data-testid=practice-retake]")
        tab.wait_for_url(re.compile(r".*/r/p/[^/]+/items/0/$"))  # consent is not asked again
        answer(tab, (4, 1))
        tab.click("[data-testid=practice-next]")
        answer(tab, (5, 2))
        tab.click("[data-testid=practice-next]")
        tab.click("[data-testid=practice-continue]")
        tab.wait_for_url(re.compile(r".*/r/a/[^/]+/items/0/$"))
        attempt = PracticeAttempt.objects.get()
        assert attempt.status == "passed" and attempt.retakes_used == 1 and Assignment.objects.count() == 1
    finally:
        context.close()


def test_onboarding_out_of_retakes_is_a_soft_block_in_the_browser(live_server, browser, retake_study):
    invite = invites.invite_create(study=retake_study)
    tab = browser.new_context().new_page()
    try:
        tab.goto(live_server.url + f"/r/{retake_study.slug}/?invite={invite.token}")
        agree(tab)
        for _ in range(2):  # the first try and the one retake, both wrong at once
            answer(tab, (3, 5))
            tab.click("[data-testid=practice-next]")
            if tab.locator("[data-testid=practice-retake]").count():
                tab.click("[data-testid=practice-retake]")
                tab.wait_for_url(re.compile(r".*/r/p/[^/]+/items/0/$"))
        assert tab.locator("[data-testid=practice-soft-block]").count() == 1
        assert tab.locator("[data-testid=practice-retake]").count() == 0
        assert not Assignment.objects.exists()
    finally:
        tab.context.close()
