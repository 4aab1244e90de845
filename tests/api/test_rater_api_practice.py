"""The practice through the rater API: the pages' order (entry -> consent -> practice -> slot) and
services (``studies.onboarding``): feedback after each answer, stored once, the pass mark, the outcome of a
fail, the slot after a pass; the attempt's token and key are its capability."""
import pytest
from rest_framework.test import APIClient

from studies.api.rater_practice import practice_key
from studies.authoring import services as authoring
from studies.models import Assignment, PracticeAnswer, PracticeAttempt
from studies.onboarding import services as onboarding
from studies.rating import invites
from tests.api.rater_helpers import enter
from tests.problems import problem_fields

pytestmark = pytest.mark.django_db


def link(worker: str, acceptance: str) -> dict:
    return {"workerId": worker, "assignmentId": acceptance, "hitId": "H1", "turkSubmitTo": "https://www.mturk.com"}


@pytest.fixture
def practice_study(make_study):
    """An MTurk Likert study with two practice items; the first response must get at least 4 on both, and
    both must agree to pass."""
    study = make_study("likert", publish=False, platform="mturk", raters_per_item=2, items_per_assignment=3)
    for n in range(2):
        onboarding.practice_item_create(study=study, context=f"A: Where do you live?\nB: In town {n}.",
                                        responses=["I live in a small town too.", "Potato keyboard seven."],
                                        rules=[{"response": 1, "min": 4}], explanation="A answers; **B** is nonsense.")
    onboarding.onboarding_configure(study=study, pass_mark=2)
    authoring.study_publish(study=study)
    study.refresh_from_db()
    return study


def session(study, worker="W1", acceptance="A1"):
    return APIClient().post(f"/api/rate/studies/{study.rater_key}/sessions/",
                            {"link": link(worker, acceptance), "consent": True}, format="json")


def practice_client(refused) -> tuple[APIClient, str]:
    practice = refused.json()["practice"]
    client = APIClient()
    client.credentials(HTTP_X_CONCORD_RATER_KEY=practice["key"])
    return client, f"/api/rate/practice/{practice['token']}/"


def answers(item: dict, *, agree: bool) -> dict:
    """Every scale field: the first response (A) at the top of the scale when ``agree``, else at the bottom."""
    return {f["name"]: (f["max"] if agree else f["min"]) if f["target"] == "A" else f["min"]
            for f in item["fields"] if f["kind"] == "scale"}


def test_the_practice_is_taken_over_the_api_with_feedback_then_the_slot(practice_study):
    refused = session(practice_study)
    assert refused.status_code == 409 and refused.json()["type"].endswith("practice_required")
    assert not Assignment.objects.filter(study=practice_study).exists()
    attempt = PracticeAttempt.objects.get(token=refused.json()["practice"]["token"])
    assert attempt.consented_at is not None  # the session's consent, before any practice item
    client, base = practice_client(refused)
    started = client.get(base).json()
    assert (started["status"], started["items"], started["pass_mark"], started["next_position"]) == ("started", 2, 2, 0)
    items = client.get(base + "items/").json()["results"]
    assert [i["position"] for i in items] == [0, 1] and all(i["feedback"] is None for i in items)
    assert [t["key"] for t in items[0]["targets"]] == ["A", "B"] and items[0]["fields"]
    early = client.post(base + "continue/")
    assert early.status_code == 409 and early.json()["type"].endswith("practice_required")

    first = client.put(base + "items/0/answer/", {"answers": answers(items[0], agree=True)}, format="json")
    assert first.status_code == 200, first.content[:500]
    feedback = first.json()["feedback"]
    assert feedback["agreed"] is True and feedback["practice_status"] == "started"
    assert feedback["expected"] and feedback["given"] and "**B** is nonsense" in feedback["explanation"]
    # stored once: another answer to the same item gives the first back, unchanged
    again = client.put(base + "items/0/answer/", {"answers": answers(items[0], agree=False)}, format="json")
    assert again.json()["feedback"] == feedback and PracticeAnswer.objects.filter(attempt=attempt).count() == 1

    last = client.put(base + "items/1/answer/", {"answers": answers(items[1], agree=True)}, format="json")
    assert last.json()["feedback"]["practice_status"] == "passed"
    assert client.get(base).json()["status"] == "passed"
    slot = client.post(base + "continue/")
    assert slot.status_code == 201, slot.content[:500]
    assignment = Assignment.objects.get(token=slot.json()["token"])
    assert assignment.study_id == practice_study.pk and assignment.consented_at == attempt.consented_at
    rater = APIClient()
    rater.credentials(HTTP_X_CONCORD_RATER_KEY=slot.json()["key"])
    assert rater.get(f"/api/rate/assignments/{assignment.token}/items/").json()["count"] == 3
    assert client.post(base + "continue/").status_code == 200  # the same slot again
    resumed = session(practice_study)  # passed: the session now enters
    assert resumed.status_code == 200 and resumed.json()["token"] == assignment.token


def test_a_failed_practice_gives_the_result_pages_outcome_and_no_slot(practice_study):
    client, base = practice_client(session(practice_study, "W2", "A2"))
    for item in client.get(base + "items/").json()["results"]:
        client.put(base + f"items/{item['position']}/answer/", {"answers": answers(item, agree=False)}, format="json")
    failed = client.get(base).json()
    assert (failed["status"], failed["agreed"], failed["next_position"]) == ("failed", 0, None)
    assert "return this HIT" in failed["message"]
    refused = client.post(base + "continue/")
    assert refused.status_code == 409 and refused.json()["type"].endswith("practice_failed")
    back = session(practice_study, "W2", "A2")  # no retry: the same failed attempt, as on the pages
    assert back.status_code == 409 and back.json()["type"].endswith("practice_failed")
    assert back.json()["practice"]["token"] == refused.json()["practice"]["token"]
    made_up = session(practice_study, "W9", "A2")  # another worker id on the same acceptance
    assert made_up.status_code == 409 and made_up.json()["practice"]["status"] == "failed"
    assert not Assignment.objects.filter(study=practice_study).exists()


def test_bad_answers_are_400s_naming_the_field_and_store_nothing(practice_study):
    client, base = practice_client(session(practice_study))
    item = client.get(base + "items/0/").json()
    unknown = client.put(base + "items/0/answer/", {"answers": {"no-such-field": 3}}, format="json")
    assert unknown.status_code == 400 and "answers.no-such-field" in problem_fields(unknown)
    scale = next(f["name"] for f in item["fields"] if f["kind"] == "scale")
    wrong = client.put(base + "items/0/answer/", {"answers": {**answers(item, agree=True), scale: 99}}, format="json")
    assert wrong.status_code == 400 and any(scale in (field or "") for field in problem_fields(wrong))
    extra = client.put(base + "items/0/answer/", {"answers": {}, "active_ms": 5}, format="json")
    assert extra.status_code == 400 and "active_ms" in problem_fields(extra)
    assert client.get(base + "items/9/").status_code == 404
    assert not PracticeAnswer.objects.exists()


def test_consent_comes_first_and_the_key_is_the_attempts_own(practice_study):
    # begun on the pages (the entry page's practice_begin) without agreeing yet
    unconsented = onboarding.practice_attempt_begin(study=practice_study, platform="mturk", external_id="W3",
                                                    acceptance_id="A3")
    mine, base = practice_client(session(practice_study, "W1", "A1"))
    other = APIClient()
    other.credentials(HTTP_X_CONCORD_RATER_KEY=mine._credentials["HTTP_X_CONCORD_RATER_KEY"])
    other_base = f"/api/rate/practice/{unconsented.token}/"
    assert other.get(other_base).status_code == 404  # W1's key does not open W3's practice
    assert other.get(other_base + "items/").status_code == 404
    assert APIClient().get(base).status_code == 404  # no key
    own = APIClient()
    own.credentials(HTTP_X_CONCORD_RATER_KEY=practice_key(unconsented))
    item = own.get(other_base + "items/0/").json()
    refused = own.put(other_base + "items/0/answer/", {"answers": answers(item, agree=True)}, format="json")
    assert refused.status_code == 409 and refused.json()["type"].endswith("consent_required")
    assert own.get(other_base).json()["consented"] is False
    assert not PracticeAnswer.objects.exists()
    # the session's consent is the practice's: then the answer is taken
    assert session(practice_study, "W3", "A3").json()["practice"]["token"] == unconsented.token
    taken = own.put(other_base + "items/0/answer/", {"answers": answers(item, agree=True)}, format="json")
    assert taken.status_code == 200 and taken.json()["feedback"]["agreed"] is True


def test_a_failed_prolific_participant_gets_the_screened_out_code_as_the_result_page_gives(make_study):
    study = make_study("likert", publish=False, platform="prolific", raters_per_item=2, items_per_assignment=3)
    study.platform_config = {"completion_code": "PAIDCODE", "screened_out_code": "SCREENED"}
    study.save(update_fields=["platform_config"])
    onboarding.practice_item_create(study=study, context="A: Where do you live?\nB: In a small town.",
                                    responses=["I live in a small town too.", "Potato keyboard seven."],
                                    rules=[{"response": 1, "min": 4}], explanation="A answers.")
    authoring.study_publish(study=study)
    prolific = {"PROLIFIC_PID": "a" * 24, "STUDY_ID": "b" * 24, "SESSION_ID": "c" * 24}
    refused = APIClient().post(f"/api/rate/studies/{study.rater_key}/sessions/", {"link": prolific, "consent": True},
                               format="json")
    client, base = practice_client(refused)
    item = client.get(base + "items/0/").json()
    assert client.put(base + "items/0/answer/", {"answers": answers(item, agree=False)},
                      format="json").json()["feedback"]["practice_status"] == "failed"
    failed = client.get(base).json()
    assert failed["screened_out_code"] == "SCREENED" and "cc=SCREENED" in failed["completion_url"]
    page = APIClient().get(f"/r/p/{failed['token']}/")  # the result page says the same
    assert b"SCREENED" in page.content and b"PAIDCODE" not in page.content


def pass_practice(refused) -> dict:
    """Answer every practice item as expected, then continue: the assignment's response."""
    client, base = practice_client(refused)
    for item in client.get(base + "items/").json()["results"]:
        client.put(base + f"items/{item['position']}/answer/", {"answers": answers(item, agree=True)}, format="json")
    slot = client.post(base + "continue/")
    assert slot.status_code == 201, slot.content[:500]
    return slot.json()


def with_practice(study):
    onboarding.practice_item_create(study=study, context="A: Where do you live?\nB: In a small town.",
                                    responses=["I live in a small town too.", "Potato keyboard seven."],
                                    rules=[{"response": 1, "min": 4}], explanation="A answers.")
    authoring.study_publish(study=study)
    study.refresh_from_db()
    return study


def test_an_invitee_takes_the_practice_then_resumes_the_invitation(make_study):
    study = with_practice(make_study("likert", publish=False, raters_per_item=2, items_per_assignment=3))
    invite = invites.invite_create(study=study)
    refused = enter(study, invite=invite)
    assert refused.status_code == 409 and refused.json()["type"].endswith("practice_required")
    other_browser = enter(study, invite=invite, secret="another-browser-secret")  # the invite is claimed all the same
    assert other_browser.status_code == 409 and other_browser.json()["type"].endswith("invite_claimed")
    assignment = pass_practice(refused)
    back = enter(study, invite=invite)
    assert back.status_code == 200 and back.json()["token"] == assignment["token"]


def test_the_experiment_link_takes_the_practice_then_places_the_rater(make_study, user):
    experiment = authoring.experiment_create(owner=user, title="With practice")
    study = with_practice(make_study("likert", publish=False, experiment=experiment, platform="mturk",
                                     raters_per_item=2, items_per_assignment=3))
    url = f"/api/rate/experiments/{experiment.slug}/sessions/"
    refused = APIClient().post(url, {"link": link("W5", "A5"), "consent": True}, format="json")
    assert refused.status_code == 409 and refused.json()["type"].endswith("practice_required")
    assert PracticeAttempt.objects.get(token=refused.json()["practice"]["token"]).via_experiment is True
    assignment = pass_practice(refused)
    assert Assignment.objects.get(token=assignment["token"]).study_id == study.pk
    again = APIClient().post(url, {"link": link("W5", "A5"), "consent": True}, format="json")
    assert again.status_code == 200 and again.json()["token"] == assignment["token"]
