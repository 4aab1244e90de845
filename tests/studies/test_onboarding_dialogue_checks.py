"""Checks and practice for dialogue-unit studies: a known bad dialogue written as a gold check (its rules
number the dialogue 1), placed among the dialogues, scored on the rater's rating of the whole dialogue; a
practice dialogue with feedback before the task. Practice for designs that rank or anchor dialogues is still
refused, saying why (their check items: ``test_dialogue_set_checks``)."""
import pytest
from django.core.exceptions import ValidationError

from studies.authoring import checks
from studies.authoring import services as authoring
from studies.authoring.builder import expected_answer_save
from studies.designs.ratings import field_name
from studies.models import AssignmentItem, PracticeAttempt, StudyItem
from studies.onboarding import selectors as onboarding_selectors
from studies.onboarding import services as onboarding
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from studies.rating.check_rules import rules_display
from tests.factories import consented_attempt

pytestmark = pytest.mark.django_db

BAD_DIALOGUE = "User: Where is the station?\nBot: Bananas are yellow.\nUser: The station?\nBot: I like bananas."


@pytest.fixture
def dialogue_study(user, corpus):
    experiment = authoring.experiment_create(owner=user, title="Dialogue checks")
    study = authoring.study_create(experiment=experiment, title="whole dialogues", design="likert", unit="dialogue",
                                   raters_per_item=2, items_per_assignment=3)
    authoring.study_items_build(study=study, corpus=corpus)
    return study


def add_bad_dialogue_check(study):
    return checks.check_item_create(study=study, kind="gold", context=BAD_DIALOGUE,
                                    rules=[{"criterion": "coherence", "response": 1, "max": 2}])


def test_onboarding_dialogue_check_is_a_whole_written_dialogue(dialogue_study):
    item = add_bad_dialogue_check(dialogue_study)
    assert item.check_kind == "gold" and item.conversation.turns[1] == {"speaker": "Bot", "text": "Bananas are yellow."}
    assert not item.item_responses.exists()  # the dialogue itself is judged
    assert item.check_rules == [{"criterion": "coherence", "response": item.conversation_id, "max": 2.0}]
    assert rules_display(item) == [{"criterion": "coherence", "response": 1, "max": 2.0}]


def test_onboarding_dialogue_check_rules_number_the_one_dialogue(dialogue_study):
    with pytest.raises(ValidationError) as error:
        checks.check_item_create(study=dialogue_study, kind="gold", context=BAD_DIALOGUE,
                                 rules=[{"response": 2, "max": 2}])
    assert "from 1 to 1" in error.value.message_dict["rules[0].response"][0]
    with pytest.raises(ValidationError) as error:
        checks.check_item_create(study=dialogue_study, kind="gold", context="", rules=[{"response": 1, "max": 2}])
    assert "context" in error.value.message_dict
    assert not StudyItem.objects.filter(study=dialogue_study, check_kind__gt="").exists()


def rate(study, name, check_value):
    """A rater's assignment: every dialogue rated 4, the check dialogue ``check_value`` on both criteria."""
    rater = rater_entry.rater_get_or_create(platform="invite", external_id=name)
    assignment = rater_entry.assignment_start(study=study, rater=rater, seed=len(name))
    slots = list(AssignmentItem.objects.filter(assignment=assignment).select_related("item"))
    assert any(slot.item.check_kind for slot in slots)  # the check is placed among the dialogues
    for slot in slots:
        cid = slot.item.conversation_id
        assert slot.response_order == [cid]
        value = check_value if slot.item.check_kind else 4
        answering.ratings_record(assignment=assignment, item_id=slot.item_id,
                                 answers={c: {cid: value} for c in ("readability", "coherence")})
    return answering.assignment_submit(assignment=assignment)


def test_onboarding_dialogue_check_scores_the_rating_of_the_whole_dialogue(dialogue_study):
    add_bad_dialogue_check(dialogue_study)
    checks.study_checks_configure(study=dialogue_study, per_assignment=1)
    authoring.study_publish(study=dialogue_study)
    careful = rate(dialogue_study, "careful", check_value=1)
    careless = rate(dialogue_study, "careless", check_value=5)
    assert (careful.checks_shown, careful.checks_passed, careful.checks_failed) == (1, 1, False)
    assert (careless.checks_shown, careless.checks_passed, careless.checks_failed) == (1, 0, True)


def test_onboarding_dialogue_check_saved_from_the_preview(dialogue_study):
    item = dialogue_study.items.order_by("position").first()
    post = {field_name(item.conversation_id, c, [item.conversation_id]): "1" for c in ("readability", "coherence")}
    post["expected_test"] = ["coherence|1"]
    saved, new = expected_answer_save(study=dialogue_study, item=item, post=post, use="gold")
    assert new and saved.check_rules == [{"criterion": "coherence", "response": saved.conversation_id, "value": 1.0}]
    again, new = expected_answer_save(study=dialogue_study, item=item, post=post, use="gold")  # a double click
    assert not new and again.pk == saved.pk


def test_onboarding_dialogue_practice_with_feedback(dialogue_study):
    practice = onboarding.practice_item_create(study=dialogue_study, context=BAD_DIALOGUE,
                                               rules=[{"criterion": "coherence", "response": 1, "max": 2}],
                                               explanation="The bot never answers: **incoherent**.", responses=None)
    assert practice.response_ids == [practice.conversation_id]
    assert onboarding_selectors.expected_answer_text(practice) == ["coherence: Dialogue A: at most 2"]
    onboarding.onboarding_configure(study=dialogue_study, pass_mark=1)
    authoring.study_publish(study=dialogue_study)
    attempt = consented_attempt(study=dialogue_study, platform="invite", external_id="p1")
    cid = practice.conversation_id
    post = {field_name(cid, c, [cid]): "5" for c in ("readability", "coherence")}
    answer, errors = onboarding.practice_answer(attempt=attempt, item=practice, post=post)
    attempt.refresh_from_db()
    assert errors == {} and answer.agreed is False and attempt.status == PracticeAttempt.Status.FAILED
    other = consented_attempt(study=dialogue_study, platform="invite", external_id="p2")
    post = {field_name(cid, c, [cid]): "1" for c in ("readability", "coherence")}
    answer, _ = onboarding.practice_answer(attempt=other, item=practice, post=post)
    other.refresh_from_db()
    assert answer.agreed is True and other.status == PracticeAttempt.Status.PASSED


def test_onboarding_dialogue_practice_page_shows_the_dialogue(dialogue_study, client):
    onboarding.practice_item_create(study=dialogue_study, context=BAD_DIALOGUE, responses=None,
                                    rules=[{"criterion": "coherence", "response": 1, "max": 2}], explanation="Why.")
    authoring.study_publish(study=dialogue_study)
    attempt = consented_attempt(study=dialogue_study, platform="invite", external_id="p3")
    html = client.get(f"/r/p/{attempt.token}/items/0/").content.decode()
    assert "Bananas are yellow." in html and 'name="rA-coherence"' in html


def test_onboarding_dialogue_practice_still_refused_where_dialogues_are_ranked(user, corpus):
    """Check items of ranked dialogues are written (``test_dialogue_set_checks``); their practice is not yet."""
    experiment = authoring.experiment_create(owner=user, title="ranked")
    study = authoring.study_create(experiment=experiment, title="ranked", design="bws", unit="dialogue",
                                   design_config={"tuple_size": 3})
    with pytest.raises(ValidationError) as error:  # before the items: nothing to rank the written dialogue among
        checks.check_item_create(study=study, kind="gold", context=BAD_DIALOGUE, rules=[{"worst": 1}])
    assert "build the study's items first" in " ".join(error.value.message_dict["context"])
    assert "practice items are not available yet for dialogue-unit studies that rank" in onboarding.practice_problem(study)
