"""Against real PostgreSQL: constraints, a real data set, and concurrent starts that must never push
an item past its target (the study row lock)."""
import pytest
from django.db import IntegrityError, connection, transaction

from studies.authoring import services as authoring
from studies.corpora import services as corpus_imports
from studies.errors import AssignmentRefused
from studies.models import Assignment, AssignmentItem, Rating
from studies.rating import entry as rater_entry
from tests.conftest import shared_file
from tests.integration.concurrency import at_once

pytestmark = [pytest.mark.integration]


@pytest.mark.django_db
def test_runs_on_postgresql():
    assert connection.vendor == "postgresql"


@pytest.mark.django_db
def test_grade_import_on_postgresql():
    path = shared_file("grade", "dailydialog_EVAL.json")
    with path.open("rb") as stream:
        summary = corpus_imports.dialogues_import(stream=stream, source_name=path.name)
    assert (summary.conversations, summary.ratings) == (300, 2990)
    assert Rating.objects.filter(assignment__study=summary.benchmark_study).count() == 2990


@pytest.mark.django_db
def test_check_constraints_hold_in_postgresql(make_study):
    study = make_study("likert")
    rater = rater_entry.rater_get_or_create(platform="invite", external_id="w")
    assignment = rater_entry.assignment_start(study=study, rater=rater)
    slot = assignment.assignment_items.first()
    with pytest.raises(IntegrityError), transaction.atomic():
        Rating.objects.create(assignment=assignment, item=slot.item, response_id=slot.response_order[0],
                              criterion=study.criteria.first())  # neither value nor rank


@pytest.mark.django_db(transaction=True)
def test_concurrent_starts_never_exceed_an_items_target(make_study):
    study = make_study("likert", raters_per_item=2, items_per_assignment=6)
    raters = [rater_entry.rater_get_or_create(platform="invite", external_id=f"w{i}") for i in range(8)]
    outcomes = ["refused" if isinstance(o, AssignmentRefused) else o if isinstance(o, Exception) else "started"
                for o in at_once(raters, lambda rater: rater_entry.assignment_start(study=study, rater=rater))]
    assert sorted(outcomes) == ["refused"] * 6 + ["started"] * 2
    per_item = AssignmentItem.objects.filter(assignment__study=study).values_list("item_id", flat=True)
    assert len(per_item) == 12 and all(list(per_item).count(i) == 2 for i in set(per_item))
    assert Assignment.objects.filter(study=study).count() == 2


@pytest.mark.django_db
def test_reports_are_cached_in_the_shared_cache_and_follow_new_data(settings):
    import os

    from django.core.cache import cache, caches

    from studies.authoring.demo import demo_load
    from studies.models import Rating, Study
    from studies.reports import selectors

    if not os.environ.get("CACHE_URL", "").startswith("rediscache://"):
        pytest.skip("CACHE_URL=rediscache://... is not set")
    assert "redis" in type(caches["default"]).__module__
    cache.clear()
    studies = Study.objects.filter(experiment=demo_load())
    first = selectors.reliability_report(studies)
    assert selectors.reliability_report(studies).as_dict() == first.as_dict()  # read back from Redis
    Rating.objects.filter(assignment__study__slug="demo-likert").update(value=1)  # new data, new version
    changed = selectors.reliability_report(studies)
    cell = next(c for c in changed.tables["table1"] if c["condition"] == "demo-likert")
    assert "error" in cell or cell["icc"]["ICC(C,k)"]["value"] != first.tables["table1"][0]["icc"]["ICC(C,k)"]["value"]


def _race(calls: int, work) -> list[str]:
    """Run ``work(i)`` in ``calls`` threads released together; outcomes as text (never an exception)."""
    def text(outcome) -> str:
        if isinstance(outcome, AssignmentRefused):
            return f"refused:{outcome.reason}"
        if isinstance(outcome, Exception):
            return f"error:{type(outcome).__name__}:{outcome}"
        return outcome
    return [text(outcome) for outcome in at_once(range(calls), work)]


@pytest.mark.django_db(transaction=True)
def test_the_same_new_worker_in_two_conditions_at_once_never_500s(make_study, user):
    from studies.models import Rater

    for round_ in range(5):
        experiment = authoring.experiment_create(owner=user, title=f"Race {round_}")
        conditions = [make_study("likert", platform="mturk", experiment=experiment),
                      make_study("rme", platform="mturk", experiment=experiment)]
        worker = f"RACER{round_}"

        def enter(i, conditions=conditions, worker=worker):
            rater_entry.assignment_enter(study=conditions[i % 2], platform="mturk", external_id=worker,
                                      acceptance_id=f"ASG{i % 2}")
            return f"started:{i % 2}"

        outcomes = _race(6, enter)
        assert not [o for o in outcomes if o.startswith("error")], outcomes
        started = {o for o in outcomes if o.startswith("started")}
        assert len(started) == 1 and len(outcomes) == 6  # one condition won, its repeats resumed
        assert {o for o in outcomes if o.startswith("refused")} <= {"refused:other_condition"}
        assert Rater.objects.filter(external_id=worker).count() == 1
        assert Assignment.objects.filter(rater__external_id=worker).count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_double_click_on_the_last_free_slot_resumes_instead_of_full(make_study):
    for round_ in range(5):
        study = make_study("likert", platform="prolific", raters_per_item=1, items_per_assignment=6)  # one slot

        def enter(i, study=study, round_=round_):
            return str(rater_entry.assignment_enter(study=study, platform="prolific", external_id=f"p{round_}",
                                                 acceptance_id=f"s{round_}").pk)

        outcomes = _race(4, enter)
        assert len(set(outcomes)) == 1 and outcomes[0].isdigit(), outcomes  # all four got the same assignment
        assert Assignment.objects.filter(study=study).count() == 1
