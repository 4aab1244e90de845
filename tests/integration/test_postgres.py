"""Against real PostgreSQL: constraints, a real data set, and concurrent starts that must never push
an item past its target (the study row lock)."""
import threading

import pytest
from django.db import IntegrityError, connection, connections, transaction

from studies import services
from studies.models import Assignment, AssignmentItem, Rating
from tests.conftest import shared_file

pytestmark = [pytest.mark.integration]


@pytest.mark.django_db
def test_runs_on_postgresql():
    assert connection.vendor == "postgresql"


@pytest.mark.django_db
def test_grade_import_on_postgresql():
    path = shared_file("grade", "dailydialog_EVAL.json")
    with path.open("rb") as stream:
        summary = services.dialogues_import(stream=stream, source_name=path.name)
    assert (summary.conversations, summary.ratings) == (300, 2990)
    assert Rating.objects.filter(assignment__study=summary.benchmark_study).count() == 2990


@pytest.mark.django_db
def test_check_constraints_hold_in_postgresql(make_study):
    study = make_study("likert")
    rater = services.rater_get_or_create(platform="invite", external_id="w")
    assignment = services.assignment_start(study=study, rater=rater)
    slot = assignment.assignment_items.first()
    with pytest.raises(IntegrityError), transaction.atomic():
        Rating.objects.create(assignment=assignment, item=slot.item, response_id=slot.response_order[0],
                              criterion=study.criteria.first())  # neither value nor rank


@pytest.mark.django_db(transaction=True)
def test_concurrent_starts_never_exceed_an_items_target(make_study):
    study = make_study("likert", raters_per_item=2, items_per_assignment=6)
    raters = [services.rater_get_or_create(platform="invite", external_id=f"w{i}") for i in range(8)]
    barrier = threading.Barrier(len(raters))
    outcomes: list[str] = []

    def start(rater):
        try:
            barrier.wait()
            services.assignment_start(study=study, rater=rater)
            outcomes.append("started")
        except services.AssignmentRefused:
            outcomes.append("refused")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=start, args=(r,)) for r in raters]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(outcomes) == ["refused"] * 6 + ["started"] * 2
    per_item = AssignmentItem.objects.filter(assignment__study=study).values_list("item_id", flat=True)
    assert len(per_item) == 12 and all(list(per_item).count(i) == 2 for i in set(per_item))
    assert Assignment.objects.filter(study=study).count() == 2


@pytest.mark.django_db
def test_reports_are_cached_in_the_shared_cache_and_follow_new_data(settings):
    import os

    from django.core.cache import cache, caches

    from studies import selectors
    from studies.demo import demo_load
    from studies.models import Rating, Study

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
