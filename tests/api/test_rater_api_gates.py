"""The rater API's gates are the pages': attention checks scored at submit with the screened-out
code the done page gives, platform identities bound to their acceptance, the practice gate, the time limit."""
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from studies.authoring import checks
from studies.authoring import services as authoring
from studies.models import Assignment
from studies.onboarding import services as onboarding
from tests.api.rater_helpers import base, enter, questionnaire_answers, rater_client, valid_answers
from tests.problems import problem_fields

pytestmark = pytest.mark.django_db

SAFETY = {"name": "safety", "question": "Is this response safe?", "kind": "categorical",
          "options": {"labels": ["safe", "unsafe", "unsure"]}}
PID, STUDY_ID = "a" * 24, "b" * 24


def prolific_link(session_id: str) -> dict:
    return {"PROLIFIC_PID": PID, "STUDY_ID": STUDY_ID, "SESSION_ID": session_id}


@pytest.fixture
def gold_study(user, corpus):
    """A Prolific Likert study with a gold item whose first response must be labelled unsafe (one per rater)."""
    experiment = authoring.experiment_create(owner=user, title="Gold")
    study = authoring.study_create(experiment=experiment, title="gold", design="likert", raters_per_item=2,
                                   items_per_assignment=2, criteria=[{"name": "readability"}, SAFETY],
                                   platform="prolific",
                                   platform_config={"completion_code": "PAIDCODE", "screened_out_code": "SCREENED"})
    authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred"], reference_system="human")
    checks.check_item_create(study=study, kind="gold", context="A: Where do you live?\nB: In a small town.",
                             responses=["You are worthless.", "I like towns.", "Quiet at night."],
                             rules=[{"criterion": "safety", "response": 1, "label": "unsafe"}])
    checks.study_checks_configure(study=study, per_assignment=1)
    authoring.study_publish(study=study)
    study.refresh_from_db()
    return study


def prolific_session(study, session_id: str):
    return APIClient().post(f"/api/rate/studies/{study.rater_key}/sessions/",
                            {"link": prolific_link(session_id), "consent": True}, format="json")


def rate(study, session_id: str, *, label: int) -> dict:
    """Enter as the Prolific participant, answer every item with the ``label``-th safety label, submit."""
    session = prolific_session(study, session_id).json()
    client = rater_client(session)
    for item in client.get(base(session) + "items/").json()["results"]:
        put = client.put(base(session) + f"items/{item['position']}/answer/",
                         {"answers": valid_answers(item, label=label)}, format="json")
        assert put.status_code == 200, put.content[:500]
    done = client.post(base(session) + "submit/", {"questionnaire": questionnaire_answers(session)}, format="json")
    assert done.status_code == 200, done.content[:500]
    return done.json()


def test_a_failed_attention_check_screens_out_with_the_studys_code_as_the_done_page_does(gold_study):
    failed = rate(gold_study, "c" * 24, label=0)  # "safe" everywhere: the gold item's unsafe response missed
    assignment = Assignment.objects.get(token=failed["token"])
    assert (assignment.checks_shown, assignment.checks_passed, assignment.checks_failed) == (1, 0, True)
    assert failed["screened_out"] is True and failed["completion_code"] == "SCREENED"
    assert "cc=SCREENED" in failed["completion_url"]
    # the done page gives the same code to the same rater
    page = APIClient().get(f"/r/a/{failed['token']}/done/")
    assert b"SCREENED" in page.content and b"PAIDCODE" not in page.content


def test_a_passed_attention_check_gets_the_completion_code(gold_study, corpus):
    # label 1 ("unsafe") everywhere: the gold rule holds
    passed = rate(gold_study, "d" * 24, label=1)
    assignment = Assignment.objects.get(token=passed["token"])
    assert (assignment.checks_passed, assignment.checks_failed) == (1, False)
    assert passed["screened_out"] is False and passed["completion_code"] == "PAIDCODE"


def test_a_platform_identity_is_bound_to_its_acceptance(gold_study):
    first = prolific_session(gold_study, "c" * 24)
    again = prolific_session(gold_study, "c" * 24)
    assert first.status_code == 201 and again.status_code == 200 and again.json()["token"] == first.json()["token"]
    other_session = prolific_session(gold_study, "e" * 24)  # the same participant, another submission
    assert other_session.status_code == 409 and other_session.json()["type"].endswith("already_done")
    bad = APIClient().post(f"/api/rate/studies/{gold_study.rater_key}/sessions/",
                           {"link": {**prolific_link("c" * 24), "PROLIFIC_PID": "not-an-id"}, "consent": True},
                           format="json")
    assert bad.status_code == 400 and "24 hexadecimal" in problem_fields(bad)["link.PROLIFIC_PID"][0]
    invite_link = APIClient().post(f"/api/rate/studies/{gold_study.rater_key}/sessions/",  # no identity here
                                   {"link": {"invite": "x" * 20}, "consent": True}, format="json")
    assert invite_link.status_code == 400 and "link.invite" in problem_fields(invite_link)
    assert Assignment.objects.filter(study=gold_study).count() == 1


def test_the_practice_gate_holds_and_nothing_is_written(make_study):
    study = make_study("likert", publish=False, platform="mturk", raters_per_item=2, items_per_assignment=3)
    onboarding.practice_item_create(study=study, context="A: Where do you live?\nB: In a small town.",
                                    responses=["I live in a small town too.", "Potato keyboard seven."],
                                    rules=[{"response": 1, "min": 4}], explanation="A answers; B is nonsense.")
    onboarding.onboarding_configure(study=study, pass_mark=1)
    authoring.study_publish(study=study)
    link = {"workerId": "W1", "assignmentId": "A1", "hitId": "H1", "turkSubmitTo": "https://www.mturk.com"}
    refused = APIClient().post(f"/api/rate/studies/{study.rater_key}/sessions/", {"link": link, "consent": True},
                               format="json")
    assert refused.status_code == 409 and refused.json()["type"].endswith("practice_required")
    assert not Assignment.objects.filter(study=study).exists()


def test_an_assignment_past_its_time_limit_takes_no_answer(make_study):
    study = make_study("likert", raters_per_item=1, items_per_assignment=2)
    authoring.study_rater_settings_set(study=study, values={"time_limit_minutes": 30})
    session = enter(study).json()
    client = rater_client(session)
    item = client.get(base(session) + "items/0/").json()
    Assignment.objects.filter(token=session["token"]).update(started_at=timezone.now() - timedelta(hours=1))
    late = client.put(base(session) + "items/0/answer/", {"answers": valid_answers(item)}, format="json")
    assert late.status_code == 409
    assert client.get(base(session)).json()["status"] == "abandoned"


def mturk_link(worker: str, acceptance: str) -> dict:
    return {"workerId": worker, "assignmentId": acceptance, "hitId": "HIT1", "turkSubmitTo": "https://www.mturk.com"}


def test_the_experiment_link_places_new_raters_evenly_and_resumes_a_returning_one(make_study, user):
    experiment = authoring.experiment_create(owner=user, title="Two conditions")
    first_condition = make_study("likert", experiment=experiment, platform="mturk", raters_per_item=1)
    second_condition = make_study("rme", experiment=experiment, platform="mturk", raters_per_item=1)
    url = f"/api/rate/experiments/{experiment.slug}/sessions/"
    one = APIClient().post(url, {"link": mturk_link("W1", "A1"), "consent": True}, format="json")
    two = APIClient().post(url, {"link": mturk_link("W2", "A2"), "consent": True}, format="json")
    back = APIClient().post(url, {"link": mturk_link("W1", "A1"), "consent": True}, format="json")
    assert (one.status_code, two.status_code, back.status_code) == (201, 201, 200)
    assert back.json()["token"] == one.json()["token"]
    placed = {Assignment.objects.get(token=r.json()["token"]).study_id for r in (one, two)}
    assert placed == {first_condition.pk, second_condition.pk}  # the least-filled condition each time
    other_hit = APIClient().post(url, {"link": mturk_link("W1", "A9"), "consent": True}, format="json")
    assert other_hit.status_code == 409 and other_hit.json()["type"].endswith("already_done")
    assert Assignment.objects.filter(study__experiment=experiment).count() == 2


def test_the_experiment_link_of_invited_studies_and_an_unknown_one_are_refused(make_study, user):
    experiment = authoring.experiment_create(owner=user, title="Invited")
    make_study("likert", experiment=experiment)
    refused = APIClient().post(f"/api/rate/experiments/{experiment.slug}/sessions/",
                               {"link": {"invite": "x" * 20}, "consent": True}, format="json")
    assert refused.status_code == 400 and "invitation" in problem_fields(refused)["link"][0]
    unknown = APIClient().post("/api/rate/experiments/no-such-experiment/sessions/",
                               {"link": mturk_link("W1", "A1"), "consent": True}, format="json")
    assert unknown.status_code == 404 and unknown["Content-Type"] == "application/problem+json"
    assert not Assignment.objects.exists()
