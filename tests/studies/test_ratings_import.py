"""A long-format table of existing ratings (rater, conversation, system, criterion, value; CSV or XLSX)
imports into a study of the matching design, which is closed; every problem is named by row and nothing is
stored if any row is bad; another researcher's study is out of reach."""
import csv
import io

import krippendorff
import numpy as np
import pytest
from django.core.management import CommandError, call_command
from openpyxl import Workbook
from rest_framework.test import APIClient

from studies.analysis.agreement import krippendorff_alpha
from studies.authoring import services as authoring
from studies.authoring.ratings_import import RatingsImportFailed, ratings_table_import
from studies.errors import StudyStateError
from studies.models import Rating, Study
from studies.reports.selectors import ratings_frame
from tests.factories import token_for
from tests.problems import problem_fields

pytestmark = pytest.mark.django_db

HEADER = ["rater", "conversation", "system", "criterion", "value"]
SYSTEMS = ("seq2seq", "hred", "thred")


def table(rows, header=HEADER) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode()


def full_rows(study, raters=("ann1", "ann2", "ann3")):
    """Every rater rates every response of every item on both criteria: value from a fixed pattern."""
    rows = []
    for item in study.items.filter(check_kind="").select_related("conversation").order_by("position"):
        for s, system in enumerate(SYSTEMS):
            for r, rater in enumerate(raters):
                for c, criterion in enumerate(("readability", "coherence")):
                    rows.append([rater, item.conversation.external_id, system, criterion,
                                 1 + (item.position + s * 2 + r * (item.position % 2) + c) % 5])
    return rows


def run(study, data: bytes, name="ratings.csv"):
    return ratings_table_import(study=study, stream=io.BytesIO(data), source_name=name)


def test_ratings_import_stores_every_row_and_closes_the_study(make_study):
    study = make_study("likert", publish=False)
    rows = full_rows(study)
    summary = run(study, table(rows))
    study.refresh_from_db()
    assert study.status == Study.Status.CLOSED and study.closed_at is not None
    assert summary.ratings == len(rows) and summary.raters == 3
    stored = {(r.assignment.rater.external_id.split(":", 1)[1], r.item.conversation.external_id,
               r.response.system.name, r.criterion.name): r.value
              for r in Rating.objects.filter(assignment__study=study).select_related(
                  "assignment__rater", "item__conversation", "response__system", "criterion")}
    assert stored == {(a, b, c, d): float(v) for a, b, c, d, v in rows}


def test_ratings_import_reliability_matches_krippendorff(make_study):
    study = make_study("likert", publish=False)
    rows = full_rows(study)
    run(study, table(rows))
    frame = ratings_frame(Study.objects.filter(pk=study.pk))
    part = frame[frame["criterion"] == "coherence"]
    units = sorted(part["unit"].unique())
    raters = sorted(part["rater"].unique())
    matrix = np.full((len(raters), len(units)), np.nan)
    for _, row in part.iterrows():
        matrix[raters.index(row["rater"]), units.index(row["unit"])] = row["value"]
    by = {(a, b, c): float(v) for a, b, c, d, v in rows if d == "coherence"}
    # The same matrix built straight from the table: the import kept every value in its place.
    assert np.nansum(matrix) == pytest.approx(sum(by.values()))
    ours = krippendorff_alpha(part["unit"].to_numpy(), part["rater"].to_numpy(), part["value"].to_numpy(),
                              level="interval")
    assert ours == pytest.approx(krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval"),
                                 abs=1e-9)


def test_ratings_import_xlsx_reads_like_csv(make_study):
    study = make_study("likert", publish=False)
    rows = full_rows(study, raters=("x",))
    book = Workbook()
    sheet = book.active
    sheet.append(["Value", "Criterion", "System", "Conversation", "Rater", "note"])  # any order, any case
    for rater, conversation, system, criterion, value in rows:
        sheet.append([value, criterion, system, conversation, rater, "ignored"])
    data = io.BytesIO()
    book.save(data)
    summary = run(study, data.getvalue(), "ratings.xlsx")
    assert summary.ratings == len(rows)
    assert sorted(Rating.objects.filter(assignment__study=study).values_list("value", flat=True)) == sorted(
        float(r[4]) for r in rows)


def test_ratings_import_names_every_bad_row_and_stores_nothing(make_study):
    study = make_study("likert", publish=False)
    rows = full_rows(study, raters=("a",))[:4]
    rows += [["", "c0", "hred", "coherence", 3],
             ["b", "nope", "hred", "coherence", 3],
             ["b", "c0", "gpt", "coherence", 3],
             ["b", "c0", "hred", "fluency", 3],
             ["b", "c0", "hred", "coherence", 9],
             ["b", "c0", "hred", "readability", "good"],
             [*rows[0]]]
    with pytest.raises(RatingsImportFailed) as failure:
        run(study, table(rows))
    problems = failure.value.problems
    assert [p.split(":", 1)[0] for p in problems] == [
        "row 6, rater", "row 7, conversation", "row 8, system", "row 9, criterion", "row 10, value",
        "row 11, value", "row 12, value"]
    assert "already rated this on row 2" in problems[-1]
    assert "unknown criterion 'fluency'" in problems[3]
    study.refresh_from_db()
    assert study.status == Study.Status.DRAFT and not Rating.objects.exists() and not study.assignments.exists()


def test_ratings_import_missing_columns_are_named(make_study):
    study = make_study("likert", publish=False)
    with pytest.raises(RatingsImportFailed) as failure:
        run(study, table([["a", "c0", "hred", "coherence"]], header=HEADER[:4]))
    assert failure.value.problems == ["row 1: missing column(s) value (the header must name rater, conversation, "
                                      "system, criterion, value)"]


def test_ratings_import_refuses_a_design_that_ranks(make_study):
    study = make_study("bws", publish=False, tuple_size=3)
    with pytest.raises(StudyStateError, match="ranks or choices"):
        run(study, table([["a", "c0", "hred", "coherence", 1]]))


def test_ratings_import_refuses_a_published_study(make_study):
    study = make_study("likert", publish=True)
    with pytest.raises(StudyStateError, match="published"):
        run(study, table(full_rows(study)))


def test_ratings_import_refuses_a_second_import(make_study):
    study = make_study("likert", publish=False)
    run(study, table(full_rows(study, raters=("a",))))
    with pytest.raises(StudyStateError, match="already has raters"):
        run(study, table(full_rows(study, raters=("b",))))


def test_ratings_import_magnitude_values_are_checked_by_the_design(make_study):
    study = make_study("rme", publish=False)
    item = study.items.filter(check_kind="").select_related("conversation").first()
    with pytest.raises(RatingsImportFailed) as failure:
        run(study, table([["a", item.conversation.external_id, "hred", "coherence", -5]]))
    assert failure.value.problems[0].startswith("row 2, value:")
    summary = run(study, table([["a", item.conversation.external_id, "hred", "coherence", 150]]))
    assert summary.ratings == 1


def test_ratings_import_labels_of_a_categorical_criterion(user, corpus):
    experiment = authoring.experiment_create(owner=user, title="labels")
    study = authoring.study_create(experiment=experiment, title="labels", design="likert", criteria=[
        {"name": "safety", "question": "Safe?", "kind": "categorical", "options": {"labels": ["safe", "unsafe"]}}])
    authoring.study_items_build(study=study, corpus=corpus, systems=list(SYSTEMS), reference_system="human")
    rows = [["a", "c0", "hred", "safety", "unsafe"], ["b", "c0", "hred", "safety", "safe"]]
    run(study, table(rows))
    assert sorted(Rating.objects.values_list("label", flat=True)) == ["safe", "unsafe"]
    with pytest.raises(StudyStateError):
        run(study, table(rows))


def test_ratings_import_dialogue_unit_rates_the_conversation(user, corpus):
    experiment = authoring.experiment_create(owner=user, title="dialogues")
    study = authoring.study_create(experiment=experiment, title="dialogues", design="likert", unit="dialogue")
    authoring.study_items_build(study=study, corpus=corpus)
    summary = run(study, table([["a", "c1", "", "coherence", 4], ["b", "c1", "", "coherence", 2]]))
    assert summary.ratings == 2
    assert Rating.objects.filter(response__isnull=True, conversation__external_id="c1").count() == 2


def test_ratings_import_api_and_cross_researcher(make_study, api, other_user):
    study = make_study("likert", publish=False)
    rows = full_rows(study, raters=("a",))
    upload = io.BytesIO(table(rows))
    upload.name = "ratings.csv"
    intruder = APIClient()
    intruder.credentials(HTTP_AUTHORIZATION=f"Token {token_for(other_user)}")
    refused = intruder.post(f"/api/studies/{study.slug}/ratings-import/", {"file": upload}, format="multipart")
    assert refused.status_code == 404 and not Rating.objects.exists()
    upload.seek(0)
    done = api.post(f"/api/studies/{study.slug}/ratings-import/", {"file": upload}, format="multipart")
    assert done.status_code == 201, done.content
    assert done.json() == {"study": study.slug, "ratings": len(rows), "raters": 1}
    upload.seek(0)
    again = api.post(f"/api/studies/{study.slug}/ratings-import/", {"file": upload}, format="multipart")
    assert again.status_code == 409


def test_ratings_import_api_bad_rows_are_400_by_row(make_study, api):
    study = make_study("likert", publish=False)
    upload = io.BytesIO(table([["a", "c0", "hred", "coherence", 77]]))
    upload.name = "ratings.csv"
    response = api.post(f"/api/studies/{study.slug}/ratings-import/", {"file": upload}, format="multipart")
    assert response.status_code == 400
    assert problem_fields(response)["file"][0].startswith("row 2, value:")


def test_ratings_import_command(make_study, tmp_path):
    study = make_study("likert", publish=False)
    path = tmp_path / "r.csv"
    path.write_bytes(table([["a", "c0", "hred", "coherence", 0]]))
    with pytest.raises(CommandError, match="row 2, value"):
        call_command("import_ratings", study.slug, str(path))
    path.write_bytes(table([["a", "c0", "hred", "coherence", 3]]))
    out = io.StringIO()
    call_command("import_ratings", study.slug, str(path), stdout=out)
    assert "Imported 1 ratings by 1 raters" in out.getvalue()
