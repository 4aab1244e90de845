"""Walkthrough, Reports: the ratings export has columns for the raters' attention checks and the flag
the report's "exclude flagged raters" uses, so an analysis outside Concord can drop the same raters."""
import csv
import io

import pytest

from studies.models import Assignment
from studies.reports.export_selectors import RATINGS_EXPORT_FIELDS
from tests.studies.test_report import _submit

pytestmark = pytest.mark.django_db


def test_the_export_names_each_raters_checks_and_flag(client, user, make_study):
    study = make_study("likert", raters_per_item=2, items_per_assignment=6)
    careful, careless = _submit(study, "careful"), _submit(study, "careless")
    Assignment.objects.filter(pk=careful.pk).update(checks_shown=2, checks_passed=2)
    Assignment.objects.filter(pk=careless.pk).update(checks_shown=2, checks_passed=0, checks_failed=True)
    assert {"checks_shown", "checks_passed", "failed_checks", "screened_out"} <= set(RATINGS_EXPORT_FIELDS)
    client.force_login(user)
    response = client.get(f"/studies/{study.slug}/export.csv?raw_ids=1")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode()
                                           if response.streaming else response.content.decode())))
    by_rater = {}
    for row in rows:
        by_rater.setdefault(row["rater"], set()).add((row["checks_shown"], row["checks_passed"], row["failed_checks"],
                                                      row["screened_out"]))
    assert by_rater == {"careful": {("2", "2", "False", "False")}, "careless": {("2", "0", "True", "True")}}


def test_best_worst_tuple_rows_carry_their_raters_checks(client, user, make_study):
    """The tuple rows of the export (one per member) left the check columns empty."""
    from studies.rating import answers as answering
    from studies.rating import entry as rater_entry

    study = make_study("bws_tuples", raters_per_item=2, items_per_assignment=2)
    criteria = list(study.criteria.values_list("name", flat=True))
    flags = {"careful": (2, 2, False), "careless": (2, 0, True)}
    for name, (shown, passed, failed) in flags.items():
        assignment = rater_entry.assignment_start(
            study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id=name), seed=len(name))
        for slot in assignment.assignment_items.all():
            order = slot.response_order
            answering.ratings_record(assignment=assignment, item_id=slot.item_id,
                                     answers={c: {"best": order[0], "worst": order[-1]} for c in criteria})
        answering.assignment_submit(assignment=assignment)
        Assignment.objects.filter(pk=assignment.pk).update(checks_shown=shown, checks_passed=passed,
                                                           checks_failed=failed)
    client.force_login(user)
    response = client.get(f"/studies/{study.slug}/export.csv?raw_ids=1")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode()
                                           if response.streaming else response.content.decode())))
    assert rows and {row["design"] for row in rows} == {"bws_tuples"}
    assert "assignment" not in rows[0]
    seen = {(row["rater"], row["checks_shown"], row["checks_passed"], row["failed_checks"], row["screened_out"])
            for row in rows}
    assert seen == {("careful", "2", "2", "False", "False"), ("careless", "2", "0", "True", "True")}
