"""Rater onboarding (studies.onboarding): practice items defined with field-level errors, scored by
the check rules (value, range, ordering; best/worst; pairwise choices), the pass mark, a failing
rater holding no slot and unable to retry (reload, same worker, made-up worker id on the same
acceptance), a double submit stored once, passes remembered per experiment (and per researcher
where asked), and the slot after a pass."""
import pytest
from django.core.exceptions import ValidationError

from studies.authoring import services as authoring
from studies.designs.ratings import field_name
from studies.errors import AssignmentRefused, PracticeRequired, StudyStateError
from studies.models import Assignment, PracticeAnswer, PracticeAttempt, PracticeItem, Rater
from studies.onboarding import selectors as onboarding_selectors
from studies.onboarding import services as onboarding
from studies.onboarding.signals import practice_passed
from studies.rating import entry as rater_entry
from studies.rating import practice_gate
from tests.factories import consented_attempt

pytestmark = pytest.mark.django_db

CONTEXT = "A: Where do you live?\nB: In a small town."
TEXTS = ["I live in a small town too, near the sea.", "Potato keyboard seven."]


def add_practice(study, rules, *, texts=None, explanation="Response A answers; B is nonsense."):
    return onboarding.practice_item_create(study=study, context=CONTEXT, responses=texts or TEXTS, rules=rules,
                                           explanation=explanation)


def likert_post(item, study, values):
    """A practice form as the rater's browser posts it: one value per response and criterion."""
    return {field_name(rid, c.name, item.response_ids): str(v) for c in study.criteria.all()
            for rid, v in zip(item.response_ids, values, strict=True)}


@pytest.fixture
def practice_study(make_study):
    """A published MTurk Likert study with three practice items (exact value, range, ordering), pass mark 2."""
    study = make_study("likert", publish=False, platform="mturk", raters_per_item=2, items_per_assignment=3)
    add_practice(study, [{"response": 1, "value": 5}])
    add_practice(study, [{"response": 2, "min": 1, "max": 2}])
    add_practice(study, [{"greater": 1, "than": 2}])
    onboarding.onboarding_configure(study=study, pass_mark=2)
    authoring.study_publish(study=study)
    study.refresh_from_db()
    return study


def begin(study, worker="W1", acceptance="A1"):
    return consented_attempt(study=study, platform="mturk", external_id=worker, acceptance_id=acceptance,
                                             platform_data={"assignmentId": acceptance})


def answer_all(attempt, study, answers):
    for item, values in zip(onboarding_selectors.practice_items(study), answers, strict=True):
        answer, errors = onboarding.practice_answer(attempt=attempt, item=item, post=likert_post(item, study, values))
        assert errors == {}
    attempt.refresh_from_db()
    return attempt


# --- the researcher's definitions ------------------------------------------------------------------------

@pytest.mark.parametrize(("rules", "explanation", "field"), [
    ([{"response": 1, "value": 9}], "why", "rules[0].value"),
    ([{"response": 3, "value": 2}], "why", "rules[0].response"),
    ([{"response": 1, "min": 5, "max": 2}], "why", "rules[0].max"),
    ([{"best": 1}], "why", "rules[0].best"),
    ([{"response": 1, "value": 2}], "  ", "explanation"),
])
def test_practice_item_problems_name_the_field_and_write_nothing(make_study, rules, explanation, field):
    study = make_study("likert", publish=False)
    with pytest.raises(ValidationError) as error:
        add_practice(study, rules, explanation=explanation)
    assert field in error.value.message_dict
    assert not PracticeItem.objects.exists()


def test_onboarding_pass_mark_checked_against_the_number_of_practice_items(make_study):
    study = make_study("likert", publish=False)
    with pytest.raises(ValidationError) as error:
        onboarding.onboarding_configure(study=study, pass_mark=1)
    assert error.value.message_dict["pass_mark"] == ["add practice items first"]
    add_practice(study, [{"response": 1, "value": 5}])
    add_practice(study, [{"response": 2, "value": 1}])
    for bad in (0, 3, "two", ""):
        with pytest.raises(ValidationError) as error:
            onboarding.onboarding_configure(study=study, pass_mark=bad)
        assert "from 1 to 2" in error.value.message_dict["pass_mark"][0]
    assert onboarding.onboarding_configure(study=study, pass_mark="2").pass_mark == 2
    onboarding.practice_item_delete(item=PracticeItem.objects.get(study=study, position=0))
    assert study.onboarding.__class__.objects.get(study=study).pass_mark == 1  # never above what is left
    assert list(PracticeItem.objects.filter(study=study).values_list("position", flat=True)) == [0]


def test_practice_items_are_set_while_the_study_is_a_draft(practice_study):
    with pytest.raises(StudyStateError):
        add_practice(practice_study, [{"response": 1, "value": 5}])
    with pytest.raises(StudyStateError):
        onboarding.onboarding_configure(study=practice_study, pass_mark=1)


def test_practice_refused_where_check_items_are(make_study):
    study = make_study("bws_tuples", publish=False, tuple_size=4)
    with pytest.raises(ValidationError) as error:
        add_practice(study, [{"best": 1}], texts=["a", "b", "c", "d"])
    assert "practice items are not available" in error.value.message_dict["rules"][0]


# --- the gate: no slot before a pass -------------------------------------------------------------------------

def test_practice_required_before_a_slot_and_nothing_written(practice_study):
    with pytest.raises(PracticeRequired) as required:
        rater_entry.assignment_enter(study=practice_study, platform="mturk", external_id="w1", acceptance_id="A1")
    assert required.value.study == practice_study
    assert not Rater.objects.exists() and not Assignment.objects.exists()
    attempt = begin(practice_study)
    assert attempt.status == PracticeAttempt.Status.STARTED and attempt.pass_mark == 2
    assert not Rater.objects.exists() and not Assignment.objects.exists()


def test_practice_scores_value_range_and_ordering_rules(practice_study):
    attempt = begin(practice_study)
    # item 1: A must be 5 (it is 4); item 2: B within 1..2 (it is 2); item 3: A above B (3 > 1)
    attempt = answer_all(attempt, practice_study, [(4, 1), (3, 2), (3, 1)])
    agreed = list(PracticeAnswer.objects.filter(attempt=attempt).order_by("item__position")
                  .values_list("agreed", flat=True))
    assert agreed == [False, True, True]
    assert (attempt.shown, attempt.agreed, attempt.status) == (3, 2, PracticeAttempt.Status.PASSED)


def test_practice_incomplete_answer_names_the_field_and_stores_nothing(practice_study):
    attempt = begin(practice_study)
    item = onboarding_selectors.practice_items(practice_study)[0]
    post = likert_post(item, practice_study, (5, 1))
    missing = next(iter(post))
    del post[missing]
    answer, errors = onboarding.practice_answer(attempt=attempt, item=item, post=post)
    assert answer is None and missing in errors
    assert not PracticeAnswer.objects.exists()


def test_practice_double_submit_stores_once_and_cannot_be_changed(practice_study):
    attempt = begin(practice_study)
    item = onboarding_selectors.practice_items(practice_study)[0]
    first, _ = onboarding.practice_answer(attempt=attempt, item=item, post=likert_post(item, practice_study, (2, 1)))
    again, _ = onboarding.practice_answer(attempt=attempt, item=item, post=likert_post(item, practice_study, (2, 1)))
    changed, _ = onboarding.practice_answer(attempt=attempt, item=item, post=likert_post(item, practice_study, (5, 1)))
    assert first.pk == again.pk == changed.pk and not changed.agreed
    attempt.refresh_from_db()
    assert PracticeAnswer.objects.count() == 1 and (attempt.shown, attempt.agreed) == (1, 0)


def test_practice_failed_holds_no_slot_and_cannot_be_retried(practice_study):
    attempt = answer_all(begin(practice_study), practice_study, [(1, 5), (1, 5), (1, 5)])
    assert attempt.status == PracticeAttempt.Status.FAILED and attempt.agreed == 0
    assert not Assignment.objects.exists() and not Rater.objects.exists()
    # the same worker again, on this acceptance or a new one (a returned and re-accepted HIT)
    assert begin(practice_study, "W1", "A1").pk == attempt.pk
    assert begin(practice_study, "W1", "A9").pk == attempt.pk
    # a made-up worker id on the same acceptance finds the failed attempt
    assert begin(practice_study, "MADEUP7", "A1").pk == attempt.pk
    with pytest.raises(PracticeRequired):
        rater_entry.assignment_enter(study=practice_study, platform="mturk", external_id="W1", acceptance_id="A1")
    with pytest.raises(StudyStateError):
        onboarding.practice_continue(attempt=attempt)
    assert not Assignment.objects.exists()


def test_practice_acceptance_of_another_workers_started_practice_is_refused(practice_study):
    begin(practice_study, "W1", "A1")
    with pytest.raises(AssignmentRefused) as refused:
        begin(practice_study, "W2", "A1")
    assert refused.value.reason == AssignmentRefused.ALREADY_DONE
    assert PracticeAttempt.objects.count() == 1


def test_practice_passed_gives_the_slot_and_is_remembered(practice_study, django_capture_on_commit_callbacks):
    heard = []

    def receiver(sender, attempt, **kwargs):
        heard.append(attempt.external_id)
    practice_passed.connect(receiver)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            attempt = answer_all(begin(practice_study), practice_study, [(5, 1), (5, 1), (5, 1)])
    finally:
        practice_passed.disconnect(receiver)
    assert attempt.status == PracticeAttempt.Status.PASSED and heard == ["W1"]
    assignment = onboarding.practice_continue(attempt=attempt)
    assert assignment.rater.external_id == "W1" and assignment.acceptance_id == "A1"
    again = rater_entry.assignment_enter(study=practice_study, platform="mturk", external_id="W1", acceptance_id="A1")
    assert again.pk == assignment.pk
    assert not practice_gate.practice_needed(practice_study, "mturk", "W1")


def test_practice_pass_counts_per_experiment_and_per_researcher_when_asked(practice_study, make_study):
    attempt = answer_all(begin(practice_study), practice_study, [(5, 1), (5, 1), (5, 1)])
    assert attempt.status == PracticeAttempt.Status.PASSED
    other = make_study("likert", publish=False, platform="mturk")  # another experiment, same researcher
    add_practice(other, [{"response": 1, "value": 5}])
    assert practice_gate.practice_needed(other, "mturk", "W1")
    onboarding.onboarding_configure(study=other, pass_mark=1, owner_wide=True)
    assert not practice_gate.practice_needed(other, "mturk", "W1")
    assert practice_gate.practice_needed(other, "mturk", "W2")
    assert practice_gate.practice_needed(other, "invite", "invite-7")  # invitations are gated too


def test_practice_best_worst_rules_on_bws(make_study):
    study = make_study("bws", publish=False, platform="prolific")
    texts = ["Best answer here.", "A fine answer.", "An okay answer.", "Gibberish qwerty."]
    add_practice(study, [{"best": 1}, {"worst": 4}], texts=texts)
    authoring.study_publish(study=study)
    attempt = consented_attempt(study=study, platform="prolific", external_id="P1", acceptance_id="S1")
    item = onboarding_selectors.practice_items(study)[0]
    post = {field_name(rid, c.name, item.response_ids): str(rank) for c in study.criteria.all()
            for rid, rank in zip(item.response_ids, (1, 2, 3, 4), strict=True)}
    answer, errors = onboarding.practice_answer(attempt=attempt, item=item, post=post)
    assert errors == {} and answer.agreed
    attempt.refresh_from_db()
    assert attempt.status == PracticeAttempt.Status.PASSED


@pytest.mark.parametrize(("choice", "agreed"), [("left", True), ("right", False), ("tie", False)])
def test_practice_pairwise_choice_scored_as_ordering(make_study, choice, agreed):
    study = make_study("pairwise", publish=False, platform="prolific")
    add_practice(study, [{"greater": 1, "than": 2}])
    authoring.study_publish(study=study)
    attempt = consented_attempt(study=study, platform="prolific", external_id="P1", acceptance_id="S1")
    item = onboarding_selectors.practice_items(study)[0]
    post = {f"choice-{c.name}": choice for c in study.criteria.all()}
    post.update({f"reason-{c.name}": "Response A answers the question asked." for c in study.criteria.all()})
    answer, errors = onboarding.practice_answer(attempt=attempt, item=item, post=post)
    assert errors == {} and answer.agreed is agreed


def test_practice_pass_mark_is_every_item_until_the_researcher_sets_one(make_study):
    study = make_study("likert", publish=False, platform="mturk")
    add_practice(study, [{"response": 1, "min": 4}])
    add_practice(study, [{"greater": 1, "than": 2}])
    authoring.study_publish(study=study)
    assert onboarding_selectors.effective_pass_mark(study) == 2
    one_wrong = answer_all(begin(study), study, [(5, 1), (1, 5)])
    assert (one_wrong.agreed, one_wrong.pass_mark, one_wrong.status) == (1, 2, PracticeAttempt.Status.FAILED)


def test_practice_expected_answer_in_the_raters_words(practice_study):
    items = onboarding_selectors.practice_items(practice_study)
    assert [onboarding_selectors.expected_answer_text(i) for i in items] == [
        ["Response A: 5"], ["Response B: from 1 to 2"], ["Response A above Response B"]]
    item = items[0]
    item.rules = [{"criterion": "readability", "response": item.response_ids[1], "min": 4.5},
                  {"best": item.response_ids[0]}, {"response": item.response_ids[0], "label": "off-topic"},
                  {"response": item.response_ids[1], "labels": []}, {"response": item.response_ids[1], "odd": 1}]
    assert onboarding_selectors.expected_answer_text(item, {"readability": "How readable?"}) == [
        "How readable?: Response B: at least 4.5", "Response A ranked best", "Response A: off-topic",
        "Response B: none of these", "response Response B, odd 1"]


# --- practice with the judgement kinds: an expected label, an expected label set ------------------------------

def test_practice_scores_categorical_and_multilabel_rules(user, corpus):
    """Practice items expect labels through the same check rules as gold items (studies.designs.kinds)."""
    from django.http import QueryDict

    safety = {"name": "safety", "question": "Is it safe?", "kind": "categorical",
              "options": {"labels": ["safe", "unsafe", "unsure"]}}
    problems = {"name": "problems", "question": "Which problems?", "kind": "multilabel",
                "options": {"labels": ["repetition", "off-topic"]}}
    experiment = authoring.experiment_create(owner=user, title="Practice labels")
    study = authoring.study_create(experiment=experiment, title="labels", design="likert", platform="mturk",
                                   raters_per_item=2, items_per_assignment=3, criteria=[safety, problems])
    authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred"], reference_system="human")
    add_practice(study, [{"criterion": "safety", "response": 2, "label": "unsafe"},
                         {"criterion": "problems", "response": 2, "labels": ["off-topic", "repetition"]}])
    add_practice(study, [{"criterion": "problems", "response": 1, "labels": []}])  # "None of these"
    with pytest.raises(ValidationError) as refused:
        add_practice(study, [{"criterion": "safety", "response": 1, "label": "toxic"}])
    assert "rules[0].label" in refused.value.message_dict
    onboarding.onboarding_configure(study=study, pass_mark=2)
    authoring.study_publish(study=study)

    def post(item, safety_labels, problem_sets):
        form = QueryDict(mutable=True)
        for rid, label, labels in zip(item.response_ids, safety_labels, problem_sets, strict=True):
            form.setlist(field_name(rid, "safety", item.response_ids), [label])
            form.setlist(field_name(rid, "problems", item.response_ids), labels)
        return form

    first, second = onboarding_selectors.practice_items(study)
    attempt = begin(study, "W7", "A7")
    answer, errors = onboarding.practice_answer(
        attempt=attempt, item=first, post=post(first, ["safe", "unsafe"], [["__none__"], ["repetition", "off-topic"]]))
    assert errors == {} and answer.agreed
    assert answer.values[field_name(first.response_ids[1], "problems", first.response_ids)] == ["repetition", "off-topic"]
    answer, errors = onboarding.practice_answer(
        attempt=attempt, item=second, post=post(second, ["safe", "safe"], [["repetition"], ["__none__"]]))
    assert errors == {} and not answer.agreed  # response 1 was to have no problem ticked
    attempt.refresh_from_db()
    assert (attempt.shown, attempt.agreed, attempt.status) == (2, 1, PracticeAttempt.Status.FAILED)

    again = begin(study, "W8", "A8")
    _, errors = onboarding.practice_answer(attempt=again, item=first,
                                           post=post(first, ["safe", "dangerous"], [["__none__"], ["off-topic"]]))
    assert errors == {field_name(first.response_ids[1], "safety", first.response_ids): "“dangerous” is not one of the labels (safe, unsafe, unsure)"}
    assert not PracticeAnswer.objects.filter(attempt=again).exists()
