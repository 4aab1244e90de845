"""The reliability report, checked against independent computations from the export, the database
and the raw GRADE file; the page, its figures, downloads, the flagged-rater toggle and the cache."""
import csv
import io
import json

import numpy as np
import openpyxl
import pandas as pd
import pytest
from scipy import stats

from studies import access
from studies.analysis.icc import icc
from studies.authoring import services as authoring
from studies.authoring.demo import demo_load
from studies.corpora import services as corpus_imports
from studies.models import Assignment, Rater, Study
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from studies.reports import export_selectors
from studies.reports import selectors as report_selectors
from tests.conftest import shared_file

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(user):
    experiment = demo_load()
    experiment.collaborators.add(user)
    return experiment


def exported(studies) -> pd.DataFrame:
    return pd.DataFrame(list(export_selectors.ratings_export_rows(studies)))


def test_table1_equals_icc_on_the_exported_ratings(api, demo):
    report = api.get(f"/api/experiments/{demo.slug}/report/").json()
    rows = exported(Study.objects.filter(experiment=demo))
    for cell in report["tables"]["table1"]:
        part = rows[(rows["study"] == cell["condition"]) & (rows["criterion"] == cell["criterion"])]
        expected = icc(part["response"], part["rater"], part["normalised_value"])
        for form in ("ICC(C,k)", "ICC(A,k)", "ICC(1,1)"):
            assert cell["icc"][form]["value"] == pytest.approx(expected[form].value, abs=1e-12)
            assert cell["icc"][form]["ci95"] == pytest.approx(list(expected[form].ci95), abs=1e-12)
        assert (cell["n_raters"], cell["n_items"], cell["method"]) == (5, 48 if cell["condition"] in (
            "demo-likert", "demo-bws") else 36, "complete")


def test_subgroup_tables_split_raters_by_time_and_questionnaire(api, demo):
    report = api.get(f"/api/experiments/{demo.slug}/report/").json()
    n = {(t, c["condition"]): c["n_raters"] for t, rows in report["tables"].items() for c in rows
         if c["criterion"] == "coherence"}
    for study in demo.studies.all():
        assert n[("table2", study.slug)] + n[("table3", study.slug)] == 5
        yes = Rater.objects.filter(assignments__study=study, prior_rating_experience=True).count()
        assert (n[("table4", study.slug)], n[("table5", study.slug)]) == (yes, 5 - yes)
        talked = Rater.objects.filter(assignments__study=study, prior_agent_experience=True).count()
        assert (n[("table6", study.slug)], n[("table7", study.slug)]) == (talked, 5 - talked)
        times = sorted(study.assignments.values_list("total_seconds", flat=True))
        assert n[("table2", study.slug)] == sum(t > np.mean(times) for t in times)


def test_table9_and_completion_times_match_direct_computation(api, demo):
    report = api.get(f"/api/experiments/{demo.slug}/report/").json()
    rows = exported(Study.objects.filter(experiment=demo))
    for entry in report["criteria_correlation"]:
        part = rows[rows["study"] == entry["condition"]]
        wide = part.pivot_table(index=["rater", "response"], columns="criterion", values="normalised_value")
        expected = stats.spearmanr(wide["readability"], wide["coherence"])
        assert (entry["rho"], entry["p"], entry["n"]) == (pytest.approx(expected.statistic), pytest.approx(expected.pvalue), len(wide))
    for entry in report["completion"]:
        seconds = list(Study.objects.get(slug=entry["condition"]).assignments.values_list("total_seconds", flat=True))
        assert entry["mean_minutes"] == pytest.approx(np.mean(seconds) / 60)
        assert entry["median_minutes"] == pytest.approx(np.median(seconds) / 60)
    assert {a["criterion"] for a in report["anova"]} == {"readability", "coherence"}
    assert all(a["systems"] == ["hred", "seq2seq", "thred"] for a in report["anova"])
    assert len(report["anova"][0]["tukey"]) == 6  # four conditions, six pairs
    likert = next(p for p in report["planning"] if p["condition"] == "demo-likert" and p["criterion"] == "coherence")
    cell = next(c for c in report["tables"]["table1"] if c["condition"] == "demo-likert" and c["criterion"] == "coherence")
    rho1 = cell["icc"]["ICC(C,1)"]["value"]
    assert likert["raters_needed"]["ICC(C,1)"] == np.ceil(0.9 * (1 - rho1) / (rho1 * 0.1))


def test_a_careless_rater_is_flagged_and_can_be_left_out(api, user, make_study):
    study = make_study("likert", raters_per_item=6, items_per_assignment=6)
    rng = np.random.default_rng(0)
    quality = {}
    for i in range(6):
        rater = rater_entry.rater_get_or_create(platform="invite", external_id=f"w{i}")
        assignment = rater_entry.assignment_start(study=study, rater=rater, seed=i)
        for slot in assignment.assignment_items.all():
            answers = {}
            for criterion in ("readability", "coherence"):
                if i == 5:  # straight-lines every screen
                    answers[criterion] = dict.fromkeys(slot.response_order, 3)
                else:
                    answers[criterion] = {r: int(np.clip(round(quality.setdefault(r, rng.uniform(1.5, 5.5))
                                                             + rng.normal(0, 0.4)), 1, 6)) for r in slot.response_order}
            answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers)
        answering.assignment_submit(assignment=assignment, total_seconds=300 + i)
    report = api.get(f"/api/studies/{study.slug}/report/?raw_ids=1").json()
    careless = next(r for r in report["raters"] if r["name"] == "w5")
    assert careless["flagged"] and careless["straight_lining"] == 1.0
    assert [r["name"] for r in report["raters"] if r["flagged"]] == ["w5"]
    pseudonymous = api.get(f"/api/studies/{study.slug}/report/").json()
    rater = Rater.objects.get(external_id="w5")
    assert [r["name"] for r in pseudonymous["raters"] if r["flagged"]] == [
        report_selectors.rater_pseudonym(study.experiment_id, rater.pk)]
    without = api.get(f"/api/studies/{study.slug}/report/?exclude_flagged=1").json()
    assert without["tables"]["table1"][0]["n_raters"] == 5
    assert len(without["excluded_raters"]) == 1
    assert without["tables"]["table1"][0]["icc"]["ICC(C,k)"]["value"] != report["tables"]["table1"][0]["icc"]["ICC(C,k)"]["value"]


def test_report_follows_new_ratings_despite_the_cache(api, make_study):
    study = make_study("likert", raters_per_item=3, items_per_assignment=6)
    for i in range(3):
        assignment = rater_entry.assignment_start(study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id=f"w{i}"))
        for slot in assignment.assignment_items.all():
            answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers={
                c: {r: (slot.response_order.index(r) + i) % 6 + 1 for r in slot.response_order} for c in ("readability", "coherence")})
        if i < 2:
            answering.assignment_submit(assignment=assignment)
    first = api.get(f"/api/studies/{study.slug}/report/").json()
    assert first["tables"]["table1"][0]["n_raters"] == 2
    answering.assignment_submit(assignment=assignment)
    assert api.get(f"/api/studies/{study.slug}/report/").json()["tables"]["table1"][0]["n_raters"] == 3


def test_report_notices_changed_values_and_rejected_assignments(make_study):
    study = make_study("likert", raters_per_item=3, items_per_assignment=6)
    assignments = []
    for i in range(3):
        assignment = rater_entry.assignment_start(study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id=f"v{i}"))
        for slot in assignment.assignment_items.all():
            answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers={
                c: {r: (slot.response_order.index(r) * (i + 1)) % 6 + 1 for r in slot.response_order}
                for c in ("readability", "coherence")})
        assignments.append(answering.assignment_submit(assignment=assignment))
    studies = Study.objects.filter(pk=study.pk)
    before = report_selectors.reliability_report(studies).tables["table1"][0]["n_raters"]
    Assignment.objects.filter(pk=assignments[0].pk).update(status="rejected")  # a researcher rejects one
    assert report_selectors.reliability_report(studies).tables["table1"][0]["n_raters"] == before - 1
    Assignment.objects.filter(pk=assignments[0].pk).update(status="submitted")
    cached = report_selectors.reliability_report(studies).tables["table1"][0]["icc"]["ICC(C,k)"]["value"]
    from studies.models import Rating
    Rating.objects.filter(assignment=assignments[1], criterion__name="readability").update(value=6)  # no updated_at
    frame = report_selectors.ratings_frame(studies)
    part = frame[frame["criterion"] == "readability"]
    fresh = icc(part["unit"], part["rater"], part["score"])["ICC(C,k)"].value
    after = report_selectors.reliability_report(studies).tables["table1"][0]
    assert after["criterion"] == "readability"
    assert after["icc"]["ICC(C,k)"]["value"] == pytest.approx(fresh, abs=1e-12)
    assert fresh != pytest.approx(cached)


def test_grade_benchmark_report_uses_the_one_way_forms_and_keeps_every_rating(api, user):
    path = shared_file("grade", "dailydialog_EVAL.json")
    with path.open("rb") as stream:
        summary = corpus_imports.dialogues_import(stream=stream, source_name=path.name, owner=user)
    report = api.get(f"/api/studies/{summary.benchmark_study.slug}/report/").json()
    assert any("only the one-way forms" in note for note in report["notes"])
    cell = report["tables"]["table1"][0]
    records = json.loads(path.read_text())
    long = [(r["ID"], j, s) for r in records for j, s in enumerate(json.loads(r["HumanScores"]))]
    expected = icc(*zip(*long, strict=True))
    assert (cell["method"], cell["n_items"], cell["n_ratings"]) == ("incomplete", 300, len(long))
    assert cell["icc"]["ICC(1,1)"]["value"] == pytest.approx(expected["ICC(1,1)"].value, abs=1e-12)
    assert cell["k0"] == pytest.approx(expected.k0)


def test_report_page_figures_and_downloads(client, user, demo):
    client.force_login(user)
    page = client.get(f"/experiments/{demo.slug}/report/").content.decode()
    for anchor in ("table1", "table2", "table3", "table4", "table5", "table6", "table7", "table9", "distributions",
                   "comparison", "completion", "agreement", "raters"):
        assert f'id="{anchor}"' in page
    assert "Readability ICC-C" in page and "Tukey HSD" in page and "Raters needed for ICC 0.9" in page
    figures = [line.split('src="')[1].split('"')[0] for line in page.split("<img")[1:]]
    assert len(figures) == 6
    for url in figures:
        response = client.get(url)
        assert response["Content-Type"] == "image/svg+xml"
        assert response.content.decode().startswith("<svg") and "</svg>" in response.content.decode()
    assert client.get(f"/experiments/{demo.slug}/report/figures/nonsense.svg").status_code == 404
    table = list(csv.DictReader(io.StringIO(client.get(f"/experiments/{demo.slug}/report.csv").content.decode())))
    assert len(table) == 7 * 4 * 2 * 6  # tables x conditions x criteria x forms
    book = openpyxl.load_workbook(io.BytesIO(client.get(f"/experiments/{demo.slug}/report.xlsx").content))
    assert {"ICC", "Table 9 criteria", "ANOVA", "Tukey HSD", "Rater quality", "Krippendorff alpha"} <= set(book.sheetnames)


def test_another_researchers_report_is_a_404(client, other_user, api):
    demo_load()
    client.force_login(other_user)
    assert client.get("/experiments/demo-seed-study/report/").status_code == 404
    assert client.get("/studies/demo-rme/report/figures/icc.svg").status_code == 404
    assert api.get("/api/experiments/demo-seed-study/report/").status_code == 404


# --- every state from the first rating on ------------------------------------------------------------------

def _submit(study, rater_id: str, *, slots: int | None = None, offset: int = 0) -> Assignment:
    assignment = rater_entry.assignment_start(study=study, rater=rater_entry.rater_get_or_create(platform="invite",
                                                                                            external_id=rater_id))
    for slot in assignment.assignment_items.all():
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers={
            c: {r: (j + offset) % 6 + 1 for j, r in enumerate(slot.response_order)} for c in ("readability", "coherence")})
    return answering.assignment_submit(assignment=assignment, total_seconds=240)


def _every_report_output(client, api, study) -> dict:
    """The page, JSON, CSV, XLSX and every figure of a study's report (each must answer 200)."""
    base = f"/studies/{study.slug}/report"
    page = client.get(f"{base}/")
    assert page.status_code == 200
    figures = [line.split('src="')[1].split('"')[0] for line in page.content.decode().split("<img")[1:]]
    assert len(figures) == 6
    for url in figures:
        svg = client.get(url)
        assert svg.status_code == 200 and svg.content.decode().startswith("<svg"), url
    data = api.get(f"/api/studies/{study.slug}/report/")
    csv_response = client.get(f"{base}.csv")
    xlsx_response = client.get(f"{base}.xlsx")
    assert (data.status_code, csv_response.status_code, xlsx_response.status_code) == (200, 200, 200)
    return {"page": page.content.decode(), "json": data.json(),
            "csv": list(csv.DictReader(io.StringIO(csv_response.content.decode()))),
            "xlsx": openpyxl.load_workbook(io.BytesIO(xlsx_response.content)), "figures": figures}


def test_report_with_zero_ratings_says_so_everywhere(client, api, user, make_study):
    study = make_study("likert")
    client.force_login(user)
    out = _every_report_output(client, api, study)
    assert "No submitted ratings yet" in out["page"]
    assert {(c["criterion"], c.get("icc"), c["error"]) for c in out["json"]["tables"]["table1"]} == {
        ("readability", None, "no submitted ratings yet"), ("coherence", None, "no submitted ratings yet")}
    assert out["csv"] and all(row["value"] == "" for row in out["csv"])
    assert client.get(f"/experiments/{study.experiment.slug}/report/").status_code == 200  # was KeyError: 'table1'


def test_report_with_one_rating_and_with_no_item_rated_twice(client, api, user, make_study):
    study = make_study("likert", raters_per_item=1, items_per_assignment=3)
    client.force_login(user)
    first = _submit(study, "w1")
    from studies.models import Rating
    keep = Rating.objects.filter(assignment=first).first()
    Rating.objects.filter(assignment=first).exclude(pk=keep.pk).delete()
    out = _every_report_output(client, api, study)
    assert [a["alpha"] for a in out["json"]["alpha"]] == [None]
    _submit(study, "w2", offset=1)  # the other three items: still no item with two raters
    assert set(Rating.objects.values_list("item_id", flat=True).filter(assignment=first)).isdisjoint(
        Rating.objects.exclude(assignment=first).values_list("item_id", flat=True))
    out = _every_report_output(client, api, study)
    assert "needs at least two raters on one item" in out["page"]
    assert [(a["alpha"], a["note"]) for a in out["json"]["alpha"]] == [(None, "needs at least two raters on one item")] * 2
    assert all(c["error"] == "needs at least two raters on one item" for c in out["json"]["tables"]["table1"])
    assert out["json"]["planning"] == [] and all(row["value"] == "" for row in out["csv"])
    sheet = out["xlsx"]["Krippendorff alpha"]
    header = [c.value for c in sheet[1]]
    assert [row[header.index("alpha")].value for row in sheet.iter_rows(min_row=2)] == [None, None]
    assert client.get(f"/studies/{study.slug}/report/?exclude_flagged=1").status_code == 200


def test_exclude_flagged_on_a_healthy_experiment_renders(client, api, user, demo):
    client.force_login(user)
    for study in demo.studies.all():
        for query in ("", "?exclude_flagged=1"):
            assert client.get(f"/studies/{study.slug}/report/{query}").status_code == 200
            assert api.get(f"/api/studies/{study.slug}/report/{query}").status_code == 200
    page = client.get(f"/experiments/{demo.slug}/report/?exclude_flagged=1")
    assert page.status_code == 200
    for url in [line.split('src="')[1].split('"')[0] for line in page.content.decode().split("<img")[1:]]:
        assert client.get(url).status_code == 200
    assert client.get(f"/experiments/{demo.slug}/report.xlsx?exclude_flagged=1").status_code == 200


def test_exclude_flagged_that_leaves_nobody_renders_and_says_so(client, api, user, make_study):
    study = make_study("likert", raters_per_item=2, items_per_assignment=6)
    for name in ("straight", "also-straight"):  # both flagged on evidence: straight-lining 1.00 > 0.8
        straight = rater_entry.assignment_start(study=study, rater=rater_entry.rater_get_or_create(
            platform="invite", external_id=name))
        for slot in straight.assignment_items.all():
            answering.ratings_record(assignment=straight, item_id=slot.item_id, answers={
                c: dict.fromkeys(slot.response_order, 3) for c in ("readability", "coherence")})
        answering.assignment_submit(assignment=straight)
    client.force_login(user)
    report = api.get(f"/api/studies/{study.slug}/report/?exclude_flagged=1").json()
    assert report["excluded_raters"] and len(report["raters"]) == 2  # the rater table still shows who was left out
    assert all(a["alpha"] is None for a in report["alpha"])
    assert len(report["excluded_raters"]) == 2
    assert all("straight-lining 1.00 > 0.8" in r["flag_reasons"] for r in report["raters"])  # the evidence
    assert "Every rater is flagged: nothing is left to compute." in report["notes"]
    page = client.get(f"/studies/{study.slug}/report/?exclude_flagged=1")
    assert page.status_code == 200
    for url in [line.split('src="')[1].split('"')[0] for line in page.content.decode().split("<img")[1:]]:
        assert client.get(url).status_code == 200
    assert client.get(f"/studies/{study.slug}/report.xlsx?exclude_flagged=1").status_code == 200


# --- spreadsheet formula injection and pseudonymous raters ---------------------------------------------------

HOSTILE = ["=HYPERLINK(\"http://evil.example\",\"x\")", "+1+2", "-2+3", "@SUM(A1)", "\tTAB", "\rCR"]


@pytest.fixture
def hostile_study(make_study, user):
    """A study rated by workers whose platform ids start like spreadsheet formulas."""
    study = make_study("likert", raters_per_item=2, items_per_assignment=6)
    for i, worker in enumerate(HOSTILE[:2]):
        _submit(study, worker, offset=i)
    return study


def test_no_export_holds_a_live_formula(client, api, user, hostile_study):
    from studies.reports.exporting import spreadsheet_safe

    study = hostile_study
    client.force_login(user)
    ratings = client.get(f"/studies/{study.slug}/export.csv?raw_ids=1")
    rows = list(csv.DictReader(io.StringIO(b"".join(ratings.streaming_content).decode())))
    assert {r["rater"] for r in rows} == {"'" + w for w in HOSTILE[:2]}
    assert all(not cell.startswith(("=", "+", "-", "@", "\t", "\r")) for r in rows for cell in r.values())
    assert {r["value"] for r in rows} <= {"1.0", "2.0", "3.0", "4.0", "5.0", "6.0"}  # numbers stay numbers
    book = openpyxl.load_workbook(io.BytesIO(client.get(f"/studies/{study.slug}/report.xlsx?raw_ids=1").content))
    names = [c.value for c in book["Rater quality"]["A"]] + [c.value for row in book["Rater quality"].iter_rows()
                                                             for c in row if isinstance(c.value, str)]
    assert "'" + HOSTILE[0] in names
    for sheet in book.worksheets:
        for row in sheet.iter_rows():
            for cell in row:
                assert cell.data_type != "f", (sheet.title, cell.coordinate, cell.value)
    loo = [c.value for c in book["Rater quality"][1]].index("loo_r")
    header = [c.value for c in book["Rater quality"][1]]
    rows = list(book["Rater quality"].iter_rows(min_row=2))
    counts = [(row[header.index("ratings")].value, row[header.index("ratings")].data_type) for row in rows]
    assert counts == [(48, "n"), (48, "n")], (header, counts)  # numbers stay numbers
    assert all(row[loo].data_type == "n" for row in rows if row[loo].value is not None)
    report_csv = client.get(f"/studies/{study.slug}/report.csv?raw_ids=1").content.decode()
    assert "\n=" not in report_csv and ",=" not in report_csv
    assert [spreadsheet_safe(v) for v in HOSTILE] == ["'" + v for v in HOSTILE]
    assert [spreadsheet_safe(v) for v in (-3, 2.5, None, "plain", "a=b")] == [-3, 2.5, None, "plain", "a=b"]


def test_raters_are_pseudonymous_by_default_everywhere(client, api, user, hostile_study):
    study = hostile_study
    client.force_login(user)
    pseudonyms = {report_selectors.rater_pseudonym(study.experiment_id, r.pk) for r in Rater.objects.filter(external_id__in=HOSTILE)}
    assert all(len(p) == 10 and p.startswith("R-") for p in pseudonyms) and len(pseudonyms) == 2
    page = client.get(f"/studies/{study.slug}/report/").content.decode()
    data = api.get(f"/api/studies/{study.slug}/report/").json()
    export = b"".join(client.get(f"/studies/{study.slug}/export.jsonl").streaming_content).decode()
    book = openpyxl.load_workbook(io.BytesIO(client.get(f"/studies/{study.slug}/report.xlsx").content))
    names = {c.value for row in book["Rater quality"].iter_rows() for c in row}
    for text in (page, json.dumps(data), export, str(names)):
        assert "HYPERLINK" not in text and "+1+2" not in text
    assert {r["name"] for r in data["raters"]} == pseudonyms
    assert {json.loads(line)["rater"] for line in export.splitlines()} == pseudonyms
    assert pseudonyms <= names and all(p in page for p in pseudonyms)
    # stable, and different in another experiment
    assert {r["name"] for r in api.get(f"/api/studies/{study.slug}/report/").json()["raters"]} == pseudonyms
    assert report_selectors.rater_pseudonym(study.experiment_id + 1, Rater.objects.first().pk) not in pseudonyms
    for url in (f"/studies/{study.slug}/report.csv", f"/studies/{study.slug}/report.xlsx",
                f"/studies/{study.slug}/export.csv"):
        assert "no-store" in client.get(url)["Cache-Control"].split(", ")


def test_raw_ids_only_for_the_studys_owners(client, api, user, other_user, hostile_study):
    from studies.reports.exporting import raw_ids_requested

    study = hostile_study
    assert access.raw_ids_allowed(user, [study.experiment_id])
    assert not access.raw_ids_allowed(other_user, [study.experiment_id])

    class Request:
        GET = {"raw_ids": "1"}
    request = Request()
    request.user = other_user
    from django.core.exceptions import PermissionDenied
    with pytest.raises(PermissionDenied):
        raw_ids_requested(request, [study.experiment_id])
    request.user = user
    assert raw_ids_requested(request, [study.experiment_id])
    client.force_login(other_user)
    assert client.get(f"/studies/{study.slug}/export.csv?raw_ids=1").status_code == 404  # not even visible


# --- every design, sparse ------------------------------------------------------------------------------------


def _answers(study, slot, i):
    out = {}
    for c in ("readability", "coherence"):
        if study.design == "bws":
            out[c] = {r: (j + i) % len(slot.response_order) + 1 for j, r in enumerate(slot.response_order)}
        elif study.design in ("rme", "bme"):
            out[c] = {r: float(10 * (j + 1) + i) for j, r in enumerate(slot.response_order)}
        else:
            out[c] = {r: (j + i) % 6 + 1 for j, r in enumerate(slot.response_order)}
    return out


@pytest.mark.parametrize("n_raters", [1, 2])
@pytest.mark.parametrize("query", ["", "?exclude_flagged=1"])
def test_every_design_renders_with_one_or_two_raters(client, api, user, make_study, n_raters, query):
    """Four conditions (Likert, RME, BME, BWS), sparse: every page, figure and download answers."""
    exp = authoring.experiment_create(owner=user, title="Probe")
    studies = [make_study(d, raters_per_item=2, items_per_assignment=2, experiment=exp) for d in ("likert", "rme", "bme", "bws")]
    for study in studies:
        for i in range(n_raters):
            a = rater_entry.assignment_start(study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id=f"{study.design}{i}"))
            for slot in a.assignment_items.all():
                answering.ratings_record(assignment=a, item_id=slot.item_id, answers=_answers(study, slot, i))
            answering.assignment_submit(assignment=a)
    client.force_login(user)
    for base in [f"/experiments/{exp.slug}/report"] + [f"/studies/{s.slug}/report" for s in studies]:
        page = client.get(f"{base}/{query}")
        assert page.status_code == 200, base
        for url in [line.split('src="')[1].split('"')[0] for line in page.content.decode().split("<img")[1:]]:
            r = client.get(url)
            assert r.status_code == 200 and r.content.startswith(b"<svg"), url
        for ext in ("csv", "xlsx"):
            assert client.get(f"{base}.{ext}{query}").status_code == 200
    alpha = api.get(f"/api/experiments/{exp.slug}/report/{query}").json()["alpha"]
    if n_raters == 1:
        assert alpha and all(a["alpha"] is None and a["note"] == "needs at least two raters on one item" for a in alpha)
