"""Walkthrough, Polish: the start page (every platform) and the researcher's cost estimate name the
currency: MTurk pays in US dollars; Prolific and invite studies in the study's ``currency`` rater
setting, by default pounds on Prolific (the currency Prolific rewards are set in by default) and US
dollars for invitation links."""
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from studies.authoring import planning
from studies.authoring import services as authoring
from studies.models import Study
from studies.rating import invites
from tests.factories import prolific_id

pytestmark = pytest.mark.django_db


def start_page(study) -> str:
    client = Client()
    if study.platform == "prolific":
        entered = client.get(f"/r/{study.slug}/", {"PROLIFIC_PID": prolific_id("c"), "SESSION_ID": prolific_id("s")})
    elif study.platform == "mturk":
        entered = client.get(f"/r/{study.slug}/", {"workerId": "A1CURRENCY", "assignmentId": "ASG1", "hitId": "HIT1",
                                                   "turkSubmitTo": "https://www.mturk.com"})
    else:
        entered = client.get(f"/r/{study.slug}/", {"invite": invites.invite_create(study=study).token})
    return client.get(entered["Location"]).content.decode()


@pytest.mark.parametrize(("platform", "currency", "shown"), [
    ("prolific", None, "£1.50"), ("prolific", "EUR", "€1.50"), ("prolific", "CHF", "1.50 CHF"),
    ("invite", None, "$1.50"), ("invite", "GBP", "£1.50"), ("mturk", None, "$1.50"),
])
def test_the_start_page_names_the_currency(make_study, platform, currency, shown):
    study = make_study("likert", platform=platform)
    Study.objects.filter(pk=study.pk).update(reward=Decimal("1.50"), estimated_minutes=6)
    if currency:
        authoring.study_rater_settings_set(study=study, values={"currency": currency})
    study.refresh_from_db()
    assert shown in start_page(study)


def test_the_cost_estimate_names_the_currency(make_study):
    study = make_study("likert", platform="invite")
    Study.objects.filter(pk=study.pk).update(reward=Decimal("2.00"), estimated_minutes=10)
    study.refresh_from_db()
    assert planning.pay_plan(study)["currency"] == "USD"
    mturk = make_study("likert", platform="mturk")
    Study.objects.filter(pk=mturk.pk).update(platform_config={"currency": "EUR"})
    mturk.refresh_from_db()
    assert planning.pay_plan(mturk)["currency"] == "USD"  # MTurk pays in US dollars, whatever is set


def test_a_currency_must_be_a_three_letter_code(make_study):
    study = make_study("likert", platform="prolific")
    with pytest.raises(ValidationError) as caught:
        authoring.study_rater_settings_set(study=study, values={"currency": "pounds"})
    assert "currency" in caught.value.message_dict


@pytest.fixture
def researcher(client, user):
    client.force_login(user)
    return client


def test_the_researchers_rater_settings_form_sets_and_keeps_the_currency(researcher, make_study):
    """The currency was settable by the API only, and saving the study page's rater settings
    (which had no currency field) cleared it."""
    study = make_study("likert", platform="prolific")
    Study.objects.filter(pk=study.pk).update(reward=Decimal("1.50"), estimated_minutes=6)
    url = f"/studies/{study.slug}/rater-settings/"
    page = researcher.get(f"/studies/{study.slug}/").content.decode()
    assert 'name="currency"' in page and "GBP, Prolific's default" in page
    researcher.post(url, {"currency": "eur", "completion_code": "C0DE1", "close_when_complete": "on"})
    study.refresh_from_db()
    assert study.platform_config["currency"] == "EUR" and "€1.50" in start_page(study)
    page = researcher.get(f"/studies/{study.slug}/").content.decode()
    assert 'value="EUR" data-testid="currency"' in page  # shown again, so saving other settings keeps it
    refused = researcher.post(url, {"currency": "EURO", "completion_code": "OTHER", "close_when_complete": "on"},
                              follow=True).content.decode()
    assert "currency" in refused and "three-letter currency code" in refused and "nothing was changed" in refused
    study.refresh_from_db()
    assert (study.platform_config["currency"], study.platform_config["completion_code"]) == ("EUR", "C0DE1")


def test_mturk_rewards_stay_in_dollars_on_the_form(researcher, make_study):
    study = make_study("likert", platform="mturk")
    page = researcher.get(f"/studies/{study.slug}/").content.decode()
    assert 'data-testid="currency-mturk"' in page and 'data-testid="currency"' not in page
    with pytest.raises(ValidationError) as caught:
        authoring.study_rater_settings_set(study=study, values={"currency": "EUR"})
    assert "USD" in caught.value.message_dict["currency"][0]
    authoring.study_rater_settings_set(study=study, values={"currency": "usd"})
