"""The Crowd page plans as many places as the study page says raters are needed (the
walkthrough: "the crowd page plans 9 places where the study page says 6"). MTurk's default of 9
assignments per HIT rounded the places up to whole HITs; the last HIT now holds the remainder."""
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from botocore.stub import ANY

from crowd import publishing
from crowd.platforms import mturk as mturk_platform
from studies.authoring import editing, planning

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("platform", "sandbox"), [("mturk", True), ("prolific", False)])
def test_the_crowd_page_plans_the_places_the_study_page_says(client, user, make_study, platform, sandbox):
    study = make_study("likert", platform=platform, raters_per_item=6)  # 6 items x 6 raters / 6 per rater = 6
    study, _ = editing.study_update(study=study, values={"reward": "0.50"})
    publication = publishing.publication_configure(study=study, platform=platform, sandbox=sandbox)
    assert planning.pay_plan(study)["places"] == 6
    assert publishing.publication_estimate(publication).places == 6
    client.force_login(user)
    assert "Raters needed: 6 " in client.get(f"/studies/{study.slug}/").content.decode()
    assert "for 6 place(s)" in client.get(f"/studies/{study.slug}/crowd/").content.decode()


def test_mturk_hits_hold_exactly_the_places_needed(mturk_stub, make_study):
    study = make_study("likert", platform="mturk", raters_per_item=20)  # 20 places: HITs of 9, 9 and 2
    study, _ = editing.study_update(study=study, values={"reward": "0.50"})
    publication = publishing.publication_configure(study=study, platform="mturk", sandbox=True)
    settings = publishing.effective_settings(publication)
    assert (settings["hits"], settings["assignments_per_hit"], settings["places"]) == (3, 9, 20)
    assert publishing.publication_estimate(publication).total == Decimal("0.60") * 20  # 0.50 + 20 % fee, 20 places
    mturk_stub.add_response("get_account_balance", {"AvailableBalance": "100.00"}, {})
    mturk_stub.add_response("create_qualification_type", {"QualificationType": {"QualificationTypeId": "3Q"}}, None)
    mturk_stub.add_response("create_hit_type", {"HITTypeId": "3HT"}, None)
    for index, size in enumerate((9, 9, 2)):
        mturk_stub.add_response("create_hit_with_hit_type", {"HIT": {
            "HITId": f"3HIT{index}", "MaxAssignments": size, "HITStatus": "Assignable",
            "Expiration": datetime(2026, 11, 25, tzinfo=UTC)}},
            {"HITTypeId": "3HT", "MaxAssignments": size, "LifetimeInSeconds": ANY, "Question": ANY,
             "RequesterAnnotation": ANY, "UniqueRequestToken": f"concord-{publication.pk}-hit-{index}"})
    published = mturk_platform.mturk_publish(publication=publication)
    assert sum(published.hits.values_list("max_assignments", flat=True)) == 20


def test_mturk_hits_set_by_the_researcher_are_filled_whole(make_study):
    study = make_study("likert", platform="mturk", raters_per_item=6)
    publication = publishing.publication_configure(study=study, platform="mturk", sandbox=True,
                                                   settings={"hits": 2, "assignments_per_hit": 5})
    assert publishing.publication_estimate(publication).places == 10  # what they asked for
