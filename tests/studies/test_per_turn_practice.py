"""Practice for per-turn studies: a dialogue written for practice, expected labels per turn with the share that
must match, scored like a check (the rater's answer never becomes a rating); the practice page shows it turn by
turn."""
import pytest
from django.core.exceptions import ValidationError

from studies.authoring import services as authoring
from studies.models import PracticeAttempt, Rating
from studies.onboarding import services as onboarding
from tests.factories import consented_attempt
from tests.studies.per_turn_helpers import study_make
from tests.studies.test_per_turn_checks import BAD_DIALOGUE, rule

pytestmark = pytest.mark.django_db


@pytest.fixture
def practising(user):
    study = study_make(user, publish=False)
    study.platform = "mturk"
    study.save(update_fields=["platform"])
    item = onboarding.practice_item_create(study=study, context=BAD_DIALOGUE, responses=None,
                                           rules=[rule(min_match=0.6)],
                                           explanation="Turn 2 repeats the user; turn 4 is off topic.")
    onboarding.onboarding_configure(study=study, pass_mark=1)
    authoring.study_publish(study=study)
    study.refresh_from_db()
    return study, item


def attempt_of(study, worker):
    return consented_attempt(study=study, platform="mturk", external_id=worker, acceptance_id=f"A-{worker}",
                             platform_data={"assignmentId": f"A-{worker}"})


def test_per_turn_practice_item_is_the_written_dialogue_itself(practising):
    study, item = practising
    assert item.response_ids == [item.conversation_id]
    assert item.conversation.turns[3]["text"] == "Pizza is great."
    assert item.rules[0]["turns"] == {"1": ["redundant"], "3": ["irrelevant"], "5": ["redundant"]}


@pytest.mark.parametrize(("post", "passed"), [
    ({"rA-problems.t1": "redundant", "rA-problems.t3": "irrelevant"}, True),  # two of three turns: within 0.6
    ({"rA-problems.t1": "redundant"}, False),  # one of three
], ids=["within-tolerance", "below-tolerance"])
def test_per_turn_practice_scored_with_the_tolerance_and_never_a_rating(practising, post, passed):
    study, item = practising
    attempt = attempt_of(study, f"w-{passed}")
    answer, errors = onboarding.practice_answer(attempt=attempt, item=item, post=post)
    assert errors == {} and answer.agreed is passed
    attempt.refresh_from_db()
    assert attempt.status == (PracticeAttempt.Status.PASSED if passed else PracticeAttempt.Status.FAILED)
    assert not Rating.objects.exists()


def test_per_turn_practice_refuses_a_turn_field_it_does_not_show(practising):
    study, item = practising
    attempt = attempt_of(study, "forger")
    answer, errors = onboarding.practice_answer(attempt=attempt, item=item, post={"rA-problems.t2": "redundant"})
    assert answer is None and "not a judged turn" in errors["rA-problems.t2"]


def test_per_turn_practice_rule_on_a_user_turn_is_refused_by_name(user):
    study = study_make(user, publish=False)
    with pytest.raises(ValidationError) as refused:
        onboarding.practice_item_create(study=study, context=BAD_DIALOGUE, responses=None,
                                        rules=[{**rule(), "turns": {"0": []}}], explanation="x")
    assert "turn 0 is not a judged turn" in " ".join(refused.value.message_dict["rules[0].turns"])


def test_per_turn_practice_page_shows_the_dialogue_turn_by_turn(client, practising):
    study, item = practising
    attempt = attempt_of(study, "reader")
    html = client.get(f"/r/p/{attempt.token}/items/0/").content.decode()
    assert 'name="rA-problems.t1"' in html and 'name="rA-problems.t5"' in html
    assert "Pizza is great." in html and 'name="rA-problems.t0"' not in html
