"""The practice qualification was a second copy of QualificationType/QualificationGrant. Migration
crowd 0004 moves every practice qualification into QualificationType (purpose "passed_practice") and every
practice grant into QualificationGrant, with their MTurk ids and dates, beside the "took part" ones it leaves
alone; migrating back restores the old tables. Run on the real migrations, from the state before."""
from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("crowd", "0003_practice_qualification")]
AFTER = [("crowd", "0004_practice_into_qualification")]
THEN = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def migrated(target):
    executor = MigrationExecutor(connection)
    executor.migrate(target)
    executor.loader.build_graph()
    return executor.loader.project_state(target).apps


@pytest.mark.django_db(transaction=True)
def test_every_practice_grant_is_kept_by_the_merge_and_by_its_reverse():
    old = migrated(BEFORE)
    owner = old.get_model("auth", "User").objects.create(username="owner")
    experiment, other = (old.get_model("studies", "Experiment").objects.create(slug=s, title=s, owner=owner)
                         for s in ("exp", "other"))
    took_part = old.get_model("crowd", "QualificationType").objects.create(
        experiment=experiment, sandbox=True, qualification_type_id="3TOOKPART")
    old.get_model("crowd", "QualificationGrant").objects.create(qualification=took_part, worker_id="W0STARTED")
    practice = old.get_model("crowd", "PracticeQualification")
    grant = old.get_model("crowd", "PracticeGrant")
    expected = set()
    for exp, sandbox, qid, workers in ((experiment, True, "3PRACTICESANDBOX", ["W1", "W2"]),
                                       (experiment, False, "3PRACTICELIVE", ["W1"]), (other, True, "3OTHER", [])):
        row = practice.objects.create(experiment=exp, sandbox=sandbox, qualification_type_id=qid)
        practice.objects.filter(pk=row.pk).update(created_at=THEN)
        for worker in workers:
            grant.objects.create(qualification=row, worker_id=worker)
            expected.add((exp.slug, sandbox, qid, worker))
    grant.objects.update(granted_at=THEN)

    new = migrated(AFTER)
    types = new.get_model("crowd", "QualificationType").objects
    grants = new.get_model("crowd", "QualificationGrant").objects
    assert set(types.values_list("experiment__slug", "sandbox", "purpose", "qualification_type_id")) == {
        ("exp", True, "took_part", "3TOOKPART"), ("exp", True, "passed_practice", "3PRACTICESANDBOX"),
        ("exp", False, "passed_practice", "3PRACTICELIVE"), ("other", True, "passed_practice", "3OTHER")}
    moved = grants.filter(qualification__purpose="passed_practice")
    assert set(moved.values_list("qualification__experiment__slug", "qualification__sandbox",
                                 "qualification__qualification_type_id", "worker_id")) == expected
    assert set(moved.values_list("granted_at", flat=True)) == {THEN}
    assert set(types.filter(purpose="passed_practice").values_list("created_at", flat=True)) == {THEN}
    assert list(grants.filter(qualification__purpose="took_part").values_list("worker_id", flat=True)) == ["W0STARTED"]

    back = migrated(BEFORE)
    assert set(back.get_model("crowd", "PracticeGrant").objects.values_list(
        "qualification__experiment__slug", "qualification__sandbox", "qualification__qualification_type_id",
        "worker_id")) == expected
    assert back.get_model("crowd", "PracticeQualification").objects.count() == 3
    assert list(back.get_model("crowd", "QualificationType").objects.values_list("qualification_type_id", flat=True)) \
        == ["3TOOKPART"]
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
