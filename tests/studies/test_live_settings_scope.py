"""The ICC target and the close rule act only on ICCs, so a study page of a
design without live ICCs (pairwise A/B choices, best-worst tuples) does not offer them, says so, and
a POST of them is refused with a message naming the field, changing nothing."""
import pytest
from django.core.exceptions import ValidationError

from studies.reports import live_services

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("design", ["pairwise", "bws_tuples"])
def test_a_design_without_iccs_offers_no_icc_target_or_close_rule(client, user, make_study, design):
    study = make_study(design, raters_per_item=2, items_per_assignment=1)
    client.force_login(user)
    page = client.get(f"/studies/{study.slug}/").content.decode()
    assert 'name="close_when_reached"' not in page and 'name="form"' not in page
    assert "Save live settings" not in page
    assert 'data-testid="live-icc-not-applicable"' in page
    response = client.post(f"/studies/{study.slug}/live/", {"target": "0.5", "form": "ICC(C,k)",
                                                            "close_when_reached": "on"}, follow=True)
    assert "live_config: " in response.content.decode()
    study.refresh_from_db()
    assert study.live_config == {}
    with pytest.raises(ValidationError, match="live_config"):
        live_services.study_live_config_set(study=study, target=0.5, close_when_reached=True)


def test_a_rating_design_still_offers_them(client, user, make_study):
    study = make_study("likert")
    client.force_login(user)
    page = client.get(f"/studies/{study.slug}/").content.decode()
    assert 'name="close_when_reached"' in page and "Save live settings" in page
    assert 'data-testid="live-icc-not-applicable"' not in page
