"""Against real PostgreSQL: parallel submits of one item (a double click, a retried request) store
one rating per response and criterion, whether the answers are the same or changed; the submit
locks the assignment row while it reads the slot (SELECT ... FOR UPDATE OF)."""
import pytest

from studies import services
from studies.models import AssignmentItem, Rating
from tests.integration.concurrency import at_once

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def submit_in_parallel(assignment, slot, values):
    def submit(value):
        answers = {c: dict.fromkeys(slot.response_order, value) for c in ("readability", "coherence")}
        return services.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers)
    return at_once(values, submit)


@pytest.mark.parametrize("values", [[4] * 6, [1, 2, 3, 4, 5, 6]])
def test_parallel_submits_of_one_item_store_one_rating_each(make_study, values):
    study = make_study("likert", raters_per_item=2, items_per_assignment=2)
    assignment = services.assignment_start(study=study, rater=services.rater_get_or_create(
        platform="invite", external_id="double"))
    slot = assignment.assignment_items.get(position=0)
    assert submit_in_parallel(assignment, slot, values) == [8] * len(values)
    stored = Rating.objects.filter(assignment=assignment)
    assert stored.count() == 8
    assert len(set(stored.values_list("value", flat=True))) == 1  # one submit's answers, whole
    assert stored.first().value in values
    assert AssignmentItem.objects.get(pk=slot.pk).answered_at is not None
