"""The study-workflow API (studies/api/workflow_views.py): settings, duplicate, delete, pause,
resume, re-open, pay plan, collaborators and the item browser, with the usual 404 for others."""
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from studies.authoring import services as authoring
from studies.models import Study
from studies.rating import answers as answering
from studies.rating import closing
from studies.rating import entry as rater_entry
from studies.reports import selectors
from tests.factories import UserFactory, token_for
from tests.problems import problem_fields
from tests.studies.test_services import answer_all, rater

pytestmark = pytest.mark.django_db


def client_for(user):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_for(user)}")
    return client


def test_settings_change_text_always_and_structure_only_in_an_unstarted_draft(api, make_study):
    draft = make_study("likert", publish=False)
    response = api.patch(f"/api/studies/{draft.slug}/settings/", {
        "design_config": {"points": 5}, "criteria": [{"name": "fluency", "question": "Fluent?"}],
        "reward": "0.75", "estimated_minutes": 5, "closes_at": (timezone.now() + timedelta(days=1)).isoformat(),
        "questionnaire": [{"name": "age", "kind": "text", "question": "Age?", "required": False}]}, format="json")
    assert response.status_code == 200, response.json()
    body = response.json()["study"]
    assert body["design_config"] == {"points": 5, "labels": []} and body["criteria"][0]["name"] == "fluency"
    assert (body["reward"], body["estimated_minutes"], body["paused"]) == ("0.75", 5, False)
    assert body["deadline"] is not None and body["questionnaire"][0]["name"] == "age"
    published = make_study("bws")
    response = api.patch(f"/api/studies/{published.slug}/settings/", {"design_config": {"tuple_size": 3},
                                                                      "instructions": "x"}, format="json")
    assert response.status_code == 400 and "published" in problem_fields(response)["design"][0]
    published.refresh_from_db()
    assert published.instructions == "" and published.design_config["tuple_size"] == 4
    response = api.patch(f"/api/studies/{published.slug}/settings/",
                         {"closes_at": "2001-01-01T00:00:00Z", "raters_per_item": 7}, format="json")
    assert response.status_code == 400 and "closes_at" in problem_fields(response)
    response = api.patch(f"/api/studies/{published.slug}/settings/", {"raters_per_item": 7, "time_limit_minutes": 20},
                         format="json")
    assert response.status_code == 200 and (response.json()["study"]["raters_per_item"],
                                            response.json()["study"]["time_limit_minutes"]) == (7, 20)


def test_duplicate_delete_and_the_state_operations(api, make_study):
    study = make_study("likert")
    response = api.post(f"/api/studies/{study.slug}/duplicate/", {"title": "Second run"}, format="json")
    assert response.status_code == 201 and response.json()["status"] == "draft"
    copy = Study.objects.get(slug=response.json()["slug"])
    assert copy.title == "Second run" and copy.items.count() == study.items.count()
    assert api.post(f"/api/studies/{study.slug}/delete/").status_code == 409  # a state conflict
    other = authoring.experiment_create(owner=study.experiment.owner, title="Next year", slug="next-year")
    response = api.post(f"/api/studies/{study.slug}/duplicate/", {"experiment": "next-year"}, format="json")
    assert response.status_code == 201 and response.json()["experiment"] == "next-year"
    assert other.studies.count() == 1
    response = api.post(f"/api/studies/{study.slug}/duplicate/", {"experiment": "not-mine"}, format="json")
    assert response.status_code == 400 and "experiment" in problem_fields(response)
    assert api.post(f"/api/studies/{copy.slug}/delete/").status_code == 204
    assert api.get(f"/api/studies/{copy.slug}/").status_code == 404
    assert api.post(f"/api/studies/{study.slug}/pause/").json()["paused"] is True
    assert api.get(f"/api/studies/{study.slug}/").json()["paused"] is True
    assert api.post(f"/api/studies/{study.slug}/resume/").json()["paused"] is False
    assert api.post(f"/api/studies/{study.slug}/reopen/").status_code == 409  # a state conflict
    closing.study_close(study=study)
    assert api.post(f"/api/studies/{study.slug}/reopen/").json()["status"] == "published"


def test_pay_plan_reports_rate_and_cost(api, make_study):
    study = make_study("likert", raters_per_item=2, items_per_assignment=3)
    api.patch(f"/api/studies/{study.slug}/settings/", {"reward": "1.00", "estimated_minutes": 4}, format="json")
    plan = api.get(f"/api/studies/{study.slug}/pay-plan/").json()
    # 6 items x 2 raters / 3 per rater = 4 places; $1 for 4 minutes is $15 an hour
    assert (plan["places"], plan["hourly_rate"], plan["total_rewards"], plan["source"]) == (4, "15.00", "4.00", "estimate")
    assignment = rater_entry.assignment_start(study=study, rater=rater("w1"))
    answer_all(assignment)
    answering.assignment_submit(assignment=assignment, total_seconds=300)
    plan = api.get(f"/api/studies/{study.slug}/pay-plan/").json()
    assert (plan["source"], plan["minutes"], Decimal(plan["hourly_rate"])) == ("pilot", 5.0, Decimal("12.00"))


def test_collaborators_by_owner_only_and_invisible_to_others(api, user, make_study, other_user):
    study = make_study("likert")
    slug = study.experiment.slug
    carol = UserFactory(username="carol", email="carol@example.org")
    response = api.post(f"/api/experiments/{slug}/collaborators/", {"user": "CAROL"}, format="json")
    assert response.status_code == 200 and response.json() == {"owner": "alice", "collaborators": ["carol"]}
    as_carol = client_for(carol)
    assert as_carol.get(f"/api/studies/{study.slug}/").status_code == 200
    response = as_carol.post(f"/api/experiments/{slug}/collaborators/", {"user": "bob"}, format="json")
    assert response.status_code == 400 and "owner" in problem_fields(response)["user"][0]
    assert client_for(other_user).get(f"/api/experiments/{slug}/collaborators/").status_code == 404
    response = api.post(f"/api/experiments/{slug}/collaborators/remove/", {"user": "carol@example.org"}, format="json")
    assert response.json()["collaborators"] == []
    assert as_carol.get(f"/api/studies/{study.slug}/").status_code == 404


def test_browser_pages_items_with_pseudonyms_unless_raw_ids(api, make_study, other_user):
    study = make_study("likert", raters_per_item=1, items_per_assignment=6)
    assignment = rater_entry.assignment_start(study=study, rater=rater("worker-7"))
    answer_all(assignment, value=2)
    answering.assignment_submit(assignment=assignment, total_seconds=60)
    body = api.get(f"/api/studies/{study.slug}/browse/").json()
    assert (body["count"], body["next"], len(body["results"])) == (6, None, 6)
    second = api.get(f"/api/studies/{study.slug}/browse/", {"limit": 4, "offset": 4}).json()
    assert [r["position"] for r in second["results"]] == [r["position"] for r in body["results"]][4:]
    assert second["previous"] and second["next"] is None
    line = body["results"][0]["ratings"][0]
    assert line["rater"] == selectors.rater_pseudonym(study.experiment_id, assignment.rater_id)
    assert line["values"] == [2.0] * len(body["results"][0]["responses"]) and "straight-lining" in line["flags"]
    body = api.get(f"/api/studies/{study.slug}/browse/?raw_ids=1&rater={assignment.rater_id}").json()
    assert body["results"][0]["ratings"][0]["rater"] == "invite:worker-7"
    assert api.get(f"/api/studies/{study.slug}/browse/?rater=999999").json()["count"] == 0
    assert client_for(other_user).get(f"/api/studies/{study.slug}/browse/").status_code == 404
