"""The rater settings and the experiment link through the API: what the study page sets, a client can set."""
import pytest
from rest_framework.test import APIClient

from tests.factories import token_for
from tests.problems import problem_fields

pytestmark = pytest.mark.django_db


def test_rater_settings_are_set_read_and_refused_by_field(api, make_study):
    study = make_study("likert", platform="prolific")
    url = f"/api/studies/{study.slug}/rater-settings/"
    done = api.post(url, {"completion_code": "C1AB2CD3", "screened_out_code": "C9SCREEN", "time_limit_minutes": "45",
                          "close_when_complete": False}, format="json")
    assert done.status_code == 200
    assert done.json()["settings"] == {"completion_code": "C1AB2CD3", "screened_out_code": "C9SCREEN",
                                       "time_limit_minutes": 45, "close_when_complete": False}
    bad = api.post(url, {"completion_code": "has spaces", "closes_at": "2000-01-01T00:00:00Z"}, format="json")
    assert bad.status_code == 400 and {"completion_code", "closes_at"} <= set(problem_fields(bad))
    study.refresh_from_db()
    assert study.platform_config["completion_code"] == "C1AB2CD3"  # the refused request changed nothing
    assert api.get(url).json()["settings"]["screened_out_code"] == "C9SCREEN"


def test_rater_settings_and_the_experiment_link_are_hidden_from_other_researchers(other_user, make_study):
    study = make_study("likert", platform="prolific")
    stranger = APIClient()
    stranger.credentials(HTTP_AUTHORIZATION=f"Token {token_for(other_user)}")
    assert stranger.get(f"/api/studies/{study.slug}/rater-settings/").status_code == 404
    assert stranger.get(f"/api/experiments/{study.experiment.slug}/link/").status_code == 404


def test_the_experiment_link_names_its_conditions_or_why_they_cannot_share_it(api, make_study):
    first = make_study("likert", platform="prolific")
    second = make_study("rme", platform="prolific", experiment=first.experiment)
    link = api.get(f"/api/experiments/{first.experiment.slug}/link/").json()
    assert link["url"].endswith(f"/r/x/{first.experiment.slug}/") and link["problem"] is None
    assert link["conditions"] == [first.slug, second.slug] and link["platform"] == "prolific"
    make_study("bws", platform="mturk", experiment=first.experiment)
    mixed = api.get(f"/api/experiments/{first.experiment.slug}/link/").json()
    assert mixed["problem"] and "Mechanical Turk" in mixed["problem"]
