"""Against real PostgreSQL: parallel submits of one item (a double click, a retried request) store
one rating per response and criterion, whether the answers are the same or changed; the submit
locks the assignment row while it reads the slot (SELECT ... FOR UPDATE OF)."""
import pytest

from studies.models import AssignmentItem, Rating
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from tests.integration.concurrency import at_once

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def submit_in_parallel(assignment, slot, values):
    def submit(value):
        answers = {c: dict.fromkeys(slot.response_order, value) for c in ("readability", "coherence")}
        return answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers)
    return at_once(values, submit)


@pytest.mark.parametrize("values", [[4] * 6, [1, 2, 3, 4, 5, 6]])
def test_parallel_submits_of_one_item_store_one_rating_each(make_study, values):
    study = make_study("likert", raters_per_item=2, items_per_assignment=2)
    assignment = rater_entry.assignment_start(study=study, rater=rater_entry.rater_get_or_create(
        platform="invite", external_id="double"))
    slot = assignment.assignment_items.get(position=0)
    assert submit_in_parallel(assignment, slot, values) == [8] * len(values)
    stored = Rating.objects.filter(assignment=assignment)
    assert stored.count() == 8
    assert len(set(stored.values_list("value", flat=True))) == 1  # one submit's answers, whole
    assert stored.first().value in values
    assert AssignmentItem.objects.get(pk=slot.pk).answered_at is not None


def test_parallel_best_worst_picks_of_one_tuple_store_one_pick_per_criterion(make_study):
    """bws_tuples picks go through the same assignment lock (answering.answer_slot_lock)."""
    from studies.models import BestWorstChoice

    study = make_study("bws_tuples", raters_per_item=2, items_per_assignment=2)
    assignment = rater_entry.assignment_start(study=study, rater=rater_entry.rater_get_or_create(
        platform="invite", external_id="double-tuple"))
    slot = assignment.assignment_items.get(position=0)
    order = slot.response_order
    picks = [(order[0], order[-1]), (order[1], order[0]), (order[-1], order[1])] * 2

    def submit(pick):
        answers = {c: {"best": pick[0], "worst": pick[1]} for c in ("readability", "coherence")}
        return answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers)

    at_once(picks, submit)
    stored = BestWorstChoice.objects.filter(assignment=assignment)
    assert stored.count() == 2
    assert len(set(stored.values_list("best_id", "worst_id"))) == 1  # one submit's picks, whole
    assert tuple(stored.values_list("best_id", "worst_id")[0]) in picks


def test_parallel_pairwise_choices_of_one_item_store_one_choice_per_criterion(make_study):
    from studies.models import Comparison

    study = make_study("pairwise", raters_per_item=2, items_per_assignment=2)
    assignment = rater_entry.assignment_start(study=study, rater=rater_entry.rater_get_or_create(
        platform="invite", external_id="double-pair"))
    slot = assignment.assignment_items.get(position=0)
    choices = ["left", "right", "tie"] * 2

    def submit(choice):
        answers = {c.name: {"choice": choice, "reason": ""} for c in study.criteria.all()}
        return answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers)

    at_once(choices, submit)
    stored = Comparison.objects.filter(assignment=assignment)
    assert stored.count() == study.criteria.count()
    assert len(set(stored.values_list("choice", flat=True))) == 1
