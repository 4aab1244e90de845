"""Every report renders from the first rating on, for every design: with no rating and with
exactly one, the report page, its JSON, CSV, XLSX and every figure, the ratings exports (CSV, JSON lines,
XLSX), and the human-vs-metric page, which says "Score first" until the metric has scored the study."""
import csv
import io

import openpyxl
import pytest

from metrics.scoring import services as metric_services
from studies.models import Design, Rating
from studies.rating import answers as answering
from studies.rating import entry as rater_entry

pytestmark = pytest.mark.django_db

# Designs judged by Rating rows; best-worst tuples and pairwise store their own rows (below), and so does
# ACUTE-Eval (whole conversations: tests/studies/test_acute_results.py).
DESIGNS = [d.value for d in Design if d not in (Design.BWS_TUPLES, Design.PAIRWISE, Design.ACUTE)]


def _one_rating(study):
    """A rater answers one item completely (a design may require every response), then all but one of
    the ratings are removed: the smallest state a report can meet."""
    assignment = rater_entry.assignment_start(study=study, rater=rater_entry.rater_get_or_create(platform="invite",
                                                                                           external_id="first"))
    slot = assignment.assignment_items.get()
    answers = {}
    for criterion in ("readability", "coherence"):
        if study.design == Design.BWS:
            answers[criterion] = {r: j + 1 for j, r in enumerate(slot.response_order)}
        elif study.design in (Design.RME, Design.BME):
            answers[criterion] = {r: 10.0 * (j + 1) for j, r in enumerate(slot.response_order)}
        else:
            answers[criterion] = {r: j % 6 + 1 for j, r in enumerate(slot.response_order)}
    answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers, active_seconds=3.0)
    answering.assignment_submit(assignment=assignment, total_seconds=30)
    keep = Rating.objects.filter(assignment=assignment).order_by("id").first()
    Rating.objects.filter(assignment=assignment).exclude(pk=keep.pk).delete()
    return keep


def _all_outputs_answer(client, api, study, *, n_figures: int | None = 6) -> dict:
    out = {}
    for base in (f"/studies/{study.slug}/report", f"/experiments/{study.experiment.slug}/report"):
        page = client.get(f"{base}/")
        assert page.status_code == 200, base
        figures = [line.split('src="')[1].split('"')[0] for line in page.content.decode().split("<img")[1:]]
        assert n_figures is None or len(figures) == n_figures
        for url in figures:
            svg = client.get(url)
            assert svg.status_code == 200 and svg.content.startswith(b"<svg"), url
        table = client.get(f"{base}.csv")
        book = client.get(f"{base}.xlsx")
        assert (table.status_code, book.status_code) == (200, 200), base
        openpyxl.load_workbook(io.BytesIO(book.content))
        out.setdefault("page", page.content.decode())
    report = api.get(f"/api/studies/{study.slug}/report/")
    assert report.status_code == 200
    out["json"] = report.json()
    for ext in ("csv", "jsonl", "xlsx"):
        download = client.get(f"/studies/{study.slug}/export.{ext}")
        assert download.status_code == 200, ext
        out[ext] = b"".join(download.streaming_content)
    return out


@pytest.mark.parametrize("design", DESIGNS)
def test_every_output_of_every_design_answers_at_zero_and_one_rating(client, api, user, make_study, design):
    study = make_study(design, raters_per_item=2, items_per_assignment=1)
    client.force_login(user)
    empty = _all_outputs_answer(client, api, study)
    assert "No submitted ratings yet" in empty["page"]
    assert empty["json"]["alpha"] == [] and empty["csv"].decode().count("\n") == 1  # the header alone
    model = metric_services.metric_model_default(key="readability")
    metric_page = f"/experiments/{study.experiment.slug}/metrics/{model.name}/"
    page = client.get(metric_page)
    assert page.status_code == 200 and "Score first" in page.content.decode()

    rating = _one_rating(study)
    one = _all_outputs_answer(client, api, study)
    assert "needs at least two raters on one item" in one["page"]
    assert {(a["alpha"], a["note"]) for a in one["json"]["alpha"]} == {(None, "needs at least two raters on one item")}
    (row,) = list(csv.DictReader(io.StringIO(one["csv"].decode())))
    assert (row["response"], row["shown_position"], row["active_seconds"]) == (
        str(rating.response_id), str(rating.assignment.assignment_items.get(item=rating.item).response_order.index(
            rating.response_id) + 1), "3.0")
    assert client.get(metric_page).status_code == 200
    metric_services.scoring_run_execute(run=metric_services.scoring_run_create(metric_model=model, study=study,
                                                                               enqueue=False))
    page = client.get(metric_page)
    assert page.status_code == 200 and "Score first" not in page.content.decode()
    for url in [line.split('src="')[1].split('"')[0] for line in page.content.decode().split("<img")[1:]]:
        assert client.get(url).status_code == 200, url
    assert client.get(f"/experiments/{study.experiment.slug}/metrics/{model.name}.csv").status_code == 200


@pytest.mark.parametrize("design", [Design.BWS_TUPLES.value, Design.PAIRWISE.value])
def test_choice_designs_answer_every_output_at_zero_and_one_judgment(client, api, user, make_study, design):
    """Best-worst tuples (BestWorstChoice rows) and pairwise (Comparison rows): the same outputs
    answer, empty and after one judgment, and the export then holds that judgment."""

    study = make_study(design, raters_per_item=2, items_per_assignment=1)
    client.force_login(user)
    empty = _all_outputs_answer(client, api, study, n_figures=None)
    assert empty["csv"].decode().count("\n") == 1  # the header alone
    assignment = rater_entry.assignment_start(study=study, rater=rater_entry.rater_get_or_create(platform="invite",
                                                                                           external_id="first"))
    slot = assignment.assignment_items.get()
    if design == Design.BWS_TUPLES:
        answers = {c: {"best": slot.response_order[0], "worst": slot.response_order[-1]}
                   for c in ("readability", "coherence")}
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers)
    else:
        answers = {c.name: {"choice": "left", "reason": "clearer"} for c in study.criteria.all()}
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers)
    answering.assignment_submit(assignment=assignment, total_seconds=30)
    one = _all_outputs_answer(client, api, study, n_figures=None)
    rows = list(csv.DictReader(io.StringIO(one["csv"].decode())))
    expected = len(slot.response_order) * 2 if design == Design.BWS_TUPLES else study.criteria.count()
    assert len(rows) == expected
    assert one["jsonl"].decode().count("\n") == expected
    book = openpyxl.load_workbook(io.BytesIO(one["xlsx"]))
    assert sum(len(list(ws.iter_rows(min_row=2))) for ws in book.worksheets) == expected
