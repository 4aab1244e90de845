"""Onboarding as ParlAI's: a minimum correct (the pass mark) and a maximum wrong (the practice ends as failed
at the first answer over it), retakes the researcher allows (answers cleared, the rater starts again), and a
soft block: a rater out of retakes is told and kept out of the experiment; the platform is told nothing."""
import pytest
from django.core.exceptions import ValidationError

from studies.authoring import services as authoring
from studies.errors import PracticeRequired, StudyStateError
from studies.models import Onboarding, PracticeAnswer, PracticeAttempt, RaterBlock
from studies.onboarding import selectors as onboarding_selectors
from studies.onboarding import services as onboarding
from studies.onboarding.signals import practice_passed
from studies.rating import entry as rater_entry
from tests.studies.test_onboarding import add_practice, begin, likert_post

pytestmark = pytest.mark.django_db



def three_item_study(make_study, *, pass_mark=2, max_wrong=None, retakes=0, platform="mturk"):
    study = make_study("likert", publish=False, platform=platform, raters_per_item=2, items_per_assignment=3)
    add_practice(study, [{"response": 1, "value": 5}])
    add_practice(study, [{"response": 2, "min": 1, "max": 2}])
    add_practice(study, [{"greater": 1, "than": 2}])
    onboarding.onboarding_configure(study=study, pass_mark=pass_mark, max_wrong=max_wrong, retakes=retakes)
    authoring.study_publish(study=study)
    study.refresh_from_db()
    return study


def answer(attempt, study, position, right: bool):
    item = onboarding_selectors.practice_items(study)[position]
    values = {0: ([5, 1], [1, 1]), 1: ([3, 1], [3, 5]), 2: ([4, 2], [1, 4])}[position][0 if right else 1]
    _, errors = onboarding.practice_answer(attempt=attempt, item=item, post=likert_post(item, study, values))
    assert errors == {}
    attempt.refresh_from_db()
    return attempt


def test_onboarding_settings_max_wrong_and_retakes_are_stored(make_study):
    study = three_item_study(make_study, max_wrong=1, retakes=2)
    settings = Onboarding.objects.get(study=study)
    assert (settings.pass_mark, settings.max_wrong, settings.retakes) == (2, 1, 2)


@pytest.mark.parametrize(("fields", "key"), [
    ({"max_wrong": 3}, "max_wrong"), ({"max_wrong": -1}, "max_wrong"), ({"max_wrong": "x"}, "max_wrong"),
    ({"retakes": 11}, "retakes"), ({"retakes": "two"}, "retakes"),
])
def test_onboarding_bad_limits_are_named_and_nothing_changes(make_study, fields, key):
    study = make_study("likert", publish=False)
    add_practice(study, [{"response": 1, "value": 5}])
    add_practice(study, [{"response": 1, "value": 5}])
    add_practice(study, [{"response": 1, "value": 5}])
    onboarding.onboarding_configure(study=study, pass_mark=3)
    with pytest.raises(ValidationError) as error:
        onboarding.onboarding_configure(study=study, pass_mark=2, **fields)
    assert set(error.value.message_dict) == {key}
    assert Onboarding.objects.get(study=study).pass_mark == 3


def test_onboarding_max_wrong_ends_the_practice_at_the_first_answer_over_it(make_study):
    study = three_item_study(make_study, pass_mark=1, max_wrong=0)
    attempt = answer(begin(study), study, 0, right=False)
    assert attempt.status == PracticeAttempt.Status.FAILED and attempt.shown == 1 and attempt.finished_at
    assert onboarding_selectors.attempt_next_position(attempt) == 1  # the rest was never shown
    with pytest.raises(StudyStateError):
        answer(attempt, study, 1, right=True)


def test_onboarding_wrong_answers_within_the_limit_still_pass_on_the_pass_mark(make_study):
    study = three_item_study(make_study, pass_mark=2, max_wrong=1)
    attempt = begin(study)
    for position, right in enumerate([True, False, True]):
        attempt = answer(attempt, study, position, right)
    assert attempt.status == PracticeAttempt.Status.PASSED and attempt.agreed == 2


def test_onboarding_without_max_wrong_fails_only_on_the_pass_mark(make_study):
    study = three_item_study(make_study, pass_mark=3)
    attempt = answer(begin(study), study, 0, right=False)
    assert attempt.status == PracticeAttempt.Status.STARTED  # every item is shown before the verdict
    attempt = answer(answer(attempt, study, 1, right=True), study, 2, right=True)
    assert attempt.status == PracticeAttempt.Status.FAILED and attempt.agreed == 2


def test_onboarding_retake_clears_the_answers_and_starts_again(make_study):
    study = three_item_study(make_study, pass_mark=3, max_wrong=0, retakes=1)
    attempt = answer(begin(study), study, 0, right=False)
    assert onboarding_selectors.retakes_left(attempt) == 1
    attempt = onboarding.practice_retake(attempt=attempt)
    assert (attempt.status, attempt.shown, attempt.agreed, attempt.retakes_used) == ("started", 0, 0, 1)
    assert not PracticeAnswer.objects.filter(attempt=attempt).exists()
    assert attempt.consented_at is not None  # consent is not asked twice
    for position in range(3):
        attempt = answer(attempt, study, position, right=True)
    assert attempt.status == PracticeAttempt.Status.PASSED


def test_onboarding_retakes_run_out(make_study):
    study = three_item_study(make_study, pass_mark=3, max_wrong=0, retakes=1)
    attempt = answer(begin(study), study, 0, right=False)
    attempt = answer(onboarding.practice_retake(attempt=attempt), study, 0, right=False)
    assert attempt.status == PracticeAttempt.Status.FAILED and onboarding_selectors.retakes_left(attempt) == 0
    with pytest.raises(StudyStateError, match="no retakes are left"):
        onboarding.practice_retake(attempt=attempt)


def test_onboarding_retake_refused_without_retakes_or_before_a_fail(make_study):
    study = three_item_study(make_study, pass_mark=3, max_wrong=0)
    attempt = begin(study)
    with pytest.raises(StudyStateError, match="only a failed practice"):
        onboarding.practice_retake(attempt=attempt)
    attempt = answer(attempt, study, 0, right=False)
    with pytest.raises(StudyStateError, match="no retakes are left"):
        onboarding.practice_retake(attempt=attempt)


def test_onboarding_soft_block_keeps_the_rater_out_and_tells_the_platform_nothing(make_study):
    study = three_item_study(make_study, pass_mark=3, max_wrong=0)
    sent = []

    def receiver(sender, attempt, **kwargs):
        sent.append(attempt)

    practice_passed.connect(receiver, dispatch_uid="soft-block-test")
    try:
        attempt = answer(begin(study), study, 0, right=False)
    finally:
        practice_passed.disconnect(dispatch_uid="soft-block-test")
    assert attempt.status == PracticeAttempt.Status.FAILED and sent == []
    # The same worker, again: the remembered fail, no slot; no block list row (what the platform would read).
    assert begin(study).pk == attempt.pk
    with pytest.raises(PracticeRequired):
        rater_entry.assignment_enter(study=study, platform="mturk", external_id="W1", acceptance_id="A1")
    assert not RaterBlock.objects.exists()


def test_onboarding_settings_copied_with_the_practice(make_study):
    study = three_item_study(make_study, max_wrong=1, retakes=2)
    target = make_study("likert", publish=False, experiment=study.experiment)
    onboarding.practice_copy(source=study, target=target)
    copied = Onboarding.objects.get(study=target)
    assert (copied.max_wrong, copied.retakes) == (1, 2)


def test_onboarding_fail_page_offers_a_retake_then_the_first_item(make_study, client):
    study = three_item_study(make_study, pass_mark=3, max_wrong=0, retakes=1, platform="invite")
    attempt = answer(begin(study), study, 0, right=False)
    page = client.get(f"/r/p/{attempt.token}/")
    html = page.content.decode()
    assert 'data-testid="practice-too-many-wrong"' in html and 'data-testid="practice-retake"' in html
    token = html.split('name="form_token" value="', 1)[1].split('"', 1)[0]
    moved = client.post(f"/r/p/{attempt.token}/retake/", {"form_token": token})
    assert moved.status_code == 302
    attempt.refresh_from_db()
    assert attempt.status == PracticeAttempt.Status.STARTED and attempt.retakes_used == 1
    assert client.get(f"/r/p/{attempt.token}/")["Location"].endswith(f"/r/p/{attempt.token}/items/0/")


def test_onboarding_fail_page_without_retakes_is_the_soft_block(make_study, client):
    study = three_item_study(make_study, pass_mark=3, max_wrong=0, platform="invite")
    attempt = answer(begin(study), study, 0, right=False)
    html = client.get(f"/r/p/{attempt.token}/").content.decode()
    assert 'data-testid="practice-soft-block"' in html and 'data-testid="practice-retake"' not in html
    refused = client.post(f"/r/p/{attempt.token}/retake/", {"form_token": "forged"})
    assert refused.status_code == 403
    attempt.refresh_from_db()
    assert attempt.retakes_used == 0 and attempt.status == PracticeAttempt.Status.FAILED


def test_onboarding_settings_through_the_api_and_refused_to_another_researcher(make_study, api, other_user):
    from rest_framework.test import APIClient

    from tests.factories import token_for
    study = make_study("likert", publish=False)
    add_practice(study, [{"response": 1, "value": 5}])
    add_practice(study, [{"response": 1, "value": 5}])
    url = f"/api/studies/{study.slug}/practice/settings/"
    intruder = APIClient()
    intruder.credentials(HTTP_AUTHORIZATION=f"Token {token_for(other_user)}")
    assert intruder.put(url, {"pass_mark": 1, "max_wrong": 0, "retakes": 3}, format="json").status_code == 404
    done = api.put(url, {"pass_mark": 1, "max_wrong": 0, "retakes": 3}, format="json")
    assert done.status_code == 200, done.content
    assert (done.json()["max_wrong"], done.json()["retakes"]) == (0, 3)
    assert api.get(f"/api/studies/{study.slug}/practice/").json()["retakes"] == 3


def test_onboarding_retake_over_the_rater_api(make_study):
    from rest_framework.test import APIClient

    from tests.api.test_rater_api_practice import answers, practice_client, session
    study = make_study("likert", publish=False, platform="mturk", raters_per_item=2, items_per_assignment=3)
    for n in range(2):
        onboarding.practice_item_create(study=study, context=f"A: Where do you live?\nB: In town {n}.",
                                        responses=["I live in a small town too.", "Potato keyboard seven."],
                                        rules=[{"response": 1, "min": 4}], explanation="A answers.")
    onboarding.onboarding_configure(study=study, pass_mark=2, max_wrong=0, retakes=1)
    authoring.study_publish(study=study)
    client, base = practice_client(session(study, "W5", "A5"))
    early = client.post(base + "retake/")
    assert early.status_code == 409 and early.json()["type"].endswith("practice_not_failed")
    items = client.get(base + "items/").json()["results"]
    client.put(base + "items/0/answer/", {"answers": answers(items[0], agree=False)}, format="json")
    failed = client.get(base).json()
    assert (failed["status"], failed["answered"], failed["retakes_left"]) == ("failed", 1, 1)
    again = client.post(base + "retake/")
    assert again.status_code == 200 and again.json()["status"] == "started" and again.json()["retakes_left"] == 0
    client.put(base + "items/0/answer/", {"answers": answers(items[0], agree=False)}, format="json")
    out = client.post(base + "retake/")
    assert out.status_code == 409 and out.json()["type"].endswith("practice_failed")
    stranger = APIClient()  # without the attempt's key: nothing
    assert stranger.post(base + "retake/").status_code in (401, 403, 404)
