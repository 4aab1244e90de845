"""Per-turn check items: a known bad dialogue written for the check, expected labels on some of its turns and
the share of them that must match (the researcher's tolerance), scored at submit; refusals name the field."""
import pytest
from django.core.exceptions import ValidationError

from studies.authoring import checks
from studies.models import AssignmentItem, Rating
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from studies.rating.check_rules import rules_text
from studies.rating.checks import check_passed, turns_match
from tests.studies.per_turn_helpers import study_make

pytestmark = pytest.mark.django_db

BAD_DIALOGUE = "user: I love hiking.\nbot: I love hiking.\nuser: Where do you hike?\nbot: Pizza is great.\n" \
               "user: Okay?\nbot: I love hiking."


def rule(**extra):
    return {"criterion": "problems", "response": 1,
            "turns": {"1": ["redundant"], "3": ["irrelevant"], "5": ["redundant"]}, **extra}


def draft_with_check(user, rules):
    study = study_make(user, publish=False, raters=2)
    checks.check_item_create(study=study, kind="gold", context=BAD_DIALOGUE, rules=rules)
    checks.study_checks_configure(study=study, per_assignment=1)
    return study


def rate(study, name, check_answer):
    from studies.authoring import services as authoring

    if study.status == "draft":
        authoring.study_publish(study=study)
        study.refresh_from_db()
    rater = rater_entry.rater_get_or_create(platform="invite", external_id=name)
    assignment = rater_entry.assignment_start(study=study, rater=rater, seed=len(name))
    for slot in AssignmentItem.objects.filter(assignment=assignment).select_related("item__conversation"):
        cid = slot.item.conversation_id
        turns = slot.item.conversation.turns
        given = check_answer if slot.item.check_kind else {i: [] for i in range(1, len(turns), 2)}
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers={"problems": {cid: given}})
    return answering.assignment_submit(assignment=assignment)


def test_per_turn_check_dialogue_passes_within_the_tolerance_and_fails_below_it(user):
    study = draft_with_check(user, [rule(min_match=0.6)])
    item = study.items.get(check_kind="gold")
    assert item.conversation.turns[3]["text"] == "Pizza is great."
    assert item.check_rules[0]["response"] == item.conversation_id and item.check_rules[0]["min_match"] == 0.6
    two_of_three = {1: ["redundant"], 3: ["irrelevant"], 5: []}
    one_of_three = {1: ["redundant"], 3: [], 5: []}
    good, bad = rate(study, "good", two_of_three), rate(study, "bad", one_of_three)
    assert (good.checks_shown, good.checks_passed, good.checks_failed) == (1, 1, False)
    assert (bad.checks_shown, bad.checks_passed, bad.checks_failed) == (1, 0, True)
    assert Rating.objects.filter(assignment=good, item=item).get().turns["3"] == ["irrelevant"]


def test_per_turn_check_without_tolerance_needs_every_listed_turn(user):
    study = draft_with_check(user, [rule()])
    almost = rate(study, "almost", {1: ["redundant"], 3: ["irrelevant"], 5: ["redundant", "irrelevant"]})
    exact = rate(study, "exact", {1: ["redundant"], 3: ["irrelevant"], 5: ["redundant"]})
    assert (almost.checks_passed, exact.checks_passed) == (0, 1)


@pytest.mark.parametrize(("bad", "field", "words"), [
    (rule(min_match=1.5), "rules[0].min_match", "at most 1"),
    (rule(min_match=0), "rules[0].min_match", "above 0"),
    ({**rule(), "turns": {"2": ["redundant"]}}, "rules[0].turns", "turn 2 is not a judged turn"),
    ({**rule(), "turns": {"1": ["rude"]}}, "rules[0].turns", "not one of the labels"),
    ({**rule(), "turns": {"x": []}}, "rules[0].turns", "not a turn index"),
    ({"criterion": "problems", "response": 2, "turns": {"1": []}}, "rules[0].response", "from 1 to 1"),
], ids=["tolerance-too-high", "tolerance-zero", "user-turn", "unknown-label", "not-an-index", "second-dialogue"])
def test_per_turn_check_rules_refused_naming_the_field(user, bad, field, words):
    study = study_make(user, publish=False)
    with pytest.raises(ValidationError) as refused:
        checks.check_item_create(study=study, kind="gold", context=BAD_DIALOGUE, rules=[bad])
    assert words in " ".join(refused.value.message_dict[field]), refused.value.message_dict
    assert not study.items.filter(check_kind="gold").exists()


def test_per_turn_check_rule_shown_in_the_raters_words():
    [line] = rules_text([{**rule(min_match=0.6), "response": 1}])
    assert "turn 2: redundant" in line and "turn 4: irrelevant" in line and "60%" in line


def test_per_turn_turns_match_share_and_check_passed():
    given = ((1, ("redundant",)), (3, ()), (5, ("irrelevant", "redundant")))
    assert turns_match(given, {"1": ["redundant"], "3": [], "5": ["redundant", "irrelevant"]}) == 1.0
    assert turns_match(given, {"1": [], "3": []}) == 0.5
    assert turns_match(None, {"1": []}) == 0.0
    rules = [{"criterion": "p", "response": 9, "turns": {"1": ["redundant"], "3": ["x"]}, "min_match": 0.5}]
    assert check_passed(rules, {("p", 9): given}, ["p"], 1)
    assert not check_passed([{**rules[0], "min_match": 1.0}], {("p", 9): given}, ["p"], 1)


def test_per_turn_rules_refused_where_no_criterion_is_per_turn_the_dialogue_judged_whole_instead(user):
    """A Likert dialogue study with no per-turn criterion takes a known bad dialogue judged whole, never rules
    on its turns."""
    study = study_make(user, publish=False, criteria=[{"name": "coherence"}])
    with pytest.raises(ValidationError) as refused:
        checks.check_item_create(study=study, kind="gold", context=BAD_DIALOGUE,
                                 rules=[{"criterion": "coherence", "response": 1, "turns": {"1": ["redundant"]}}])
    assert "turns" in " ".join(refused.value.messages) or "turns" in str(refused.value)
    item = checks.check_item_create(study=study, kind="gold", context=BAD_DIALOGUE,
                                    rules=[{"criterion": "coherence", "response": 1, "value": 1}])
    assert item.check_kind == "gold" and study.items.filter(check_kind="gold").count() == 1
