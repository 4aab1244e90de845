"""The report answers "which system is better" first, for every design: a single-condition Likert study of
several systems shows each system's score with its interval and n and the tested pairs (and no "needs two
conditions" above figures drawn anyway); a pairwise study shows win shares and its Table 1 says why it has
no ICC; the CSV, XLSX and API carry the same blocks; another researcher sees none of it."""
import csv
import io

import pytest
from django.test import Client

from studies.models import Response
from studies.rating import answers as answering
from tests.studies import test_pairwise
from tests.studies.test_pairwise import start

pytestmark = pytest.mark.django_db

QUALITY = {"human": 5, "hred": 4, "seq2seq": 2, "thred": 3}


def rated_likert(make_study, raters=3):
    """A Likert study of four systems on one screen, rated by ``raters`` raters who agree on the order
    (human > hred > thred > seq2seq) with a little noise by rater."""
    study = make_study("likert", raters_per_item=raters, items_per_assignment=6)
    for i in range(raters):
        assignment = start(study, f"likert-{i}", seed=i)
        for slot in assignment.assignment_items.all():
            systems = dict(Response.objects.filter(pk__in=slot.response_order).values_list("pk", "system__name"))
            answers = {c: {r: min(5, max(1, QUALITY[systems[r]] - (i + slot.position + r) % 2)) for r in slot.response_order}
                       for c in study.criteria.values_list("name", flat=True)}
            answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers)
        answering.assignment_submit(assignment=assignment)
    return study


def client_of(user):
    client = Client()
    client.force_login(user)
    return client


def test_system_scores_come_first_on_a_single_condition_likert_report(make_study, user):
    study = rated_likert(make_study)
    body = client_of(user).get(f"/studies/{study.slug}/report/").content.decode()
    assert 'data-testid="system-scores"' in body
    assert body.index('id="system-scores"') < body.index('id="table1"')  # first: before the ICC tables
    section = body[body.index('id="system-scores"'):body.index("</section>", body.index('id="system-scores"'))]
    for system in QUALITY:
        assert f"<td>{system}</td>" in section
    assert "95% interval" in section and "paired t on per-item means" in section and "Holm" in section
    assert "from 3 raters and" in section
    assert "Needs two or more conditions" not in body and 'data-testid="no-condition-comparison"' in body


def test_system_scores_name_the_better_system_with_its_test(make_study, user):
    study = rated_likert(make_study)
    from studies.models import Study
    from studies.reports import selectors, system_scores

    studies = Study.objects.filter(pk=study.pk)
    report = selectors.reliability_report(studies)
    blocks = system_scores.system_scores(report, selectors.design_sections(studies, report))
    block = next(b for b in blocks if b["criterion"] == study.criteria.first().name)
    assert [s["system"] for s in block["systems"]] == ["human", "hred", "thred", "seq2seq"]
    assert block["paired"] and block["n_raters"] == 3 and len(block["pairs"]) == 6
    human_vs_seq = next(p for p in block["pairs"] if {p["system_a"], p["system_b"]} == {"human", "seq2seq"})
    assert human_vs_seq["better"] == "human" and human_vs_seq["p_holm"] < 0.05
    assert all(s["n"] >= 2 and s["ci_low"] < s["score"] < s["ci_high"] for s in block["systems"])


def test_system_scores_download_as_csv_and_xlsx(make_study, user):
    import openpyxl

    study = rated_likert(make_study)
    client = client_of(user)
    scores = client.get(f"/studies/{study.slug}/report.csv?table=system_scores")
    assert scores.status_code == 200 and "system-scores" in scores["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(scores.content.decode())))
    assert {r["system"] for r in rows} == set(QUALITY) and all(r["n"] and r["ci_low"] for r in rows)
    differences = list(csv.DictReader(io.StringIO(
        client.get(f"/studies/{study.slug}/report.csv?table=system_differences").content.decode())))
    assert differences and {"p", "p_holm", "test", "better", "n"} <= set(differences[0])
    bad = client.get(f"/studies/{study.slug}/report.csv?table=everything")
    assert bad.status_code == 400 and b"table" in bad.content
    book = openpyxl.load_workbook(io.BytesIO(client.get(f"/studies/{study.slug}/report.xlsx").content))
    assert book.sheetnames[:2] == ["System scores", "System differences"]


def test_system_scores_are_in_the_api_report(make_study, user, api):
    study = rated_likert(make_study)
    data = api.get(f"/api/studies/{study.slug}/report/").json()
    block = data["system_scores"][0]
    assert {s["system"] for s in block["systems"]} == set(QUALITY)
    assert {"n_raters", "n_items", "pairs", "method", "measure"} <= set(block)


def test_system_scores_of_another_researchers_study_are_not_found(make_study, other_user):
    study = rated_likert(make_study, raters=2)
    client = client_of(other_user)
    assert client.get(f"/studies/{study.slug}/report/").status_code == 404
    assert client.get(f"/studies/{study.slug}/report.csv?table=system_scores").status_code == 404


def test_system_scores_of_a_pairwise_study_and_its_table1_says_why_there_is_no_icc(make_study, user, api):
    study = test_pairwise.finished_study(make_study, contrarian=True)
    body = client_of(user).get(f"/studies/{study.slug}/report/").content.decode()
    section = body[body.index('id="system-scores"'):body.index("</section>", body.index('id="system-scores"'))]
    assert "Share of decisive judgments won" in section and "exact binomial (sign) test" in section
    data = api.get(f"/api/studies/{study.slug}/report/").json()
    assert data["system_scores"] and data["system_scores"][0]["design"] == "pairwise"
    assert data["system_scores"][0]["n_items"] > 0
    cells = data["tables"]["table1"]
    assert cells and all("choices, not scores" in c["error"] for c in cells)
    assert not any("no submitted ratings" in c["error"] for c in cells)
    assert not any(n.startswith("No submitted ratings yet") for n in data["notes"])
    icc_csv = client_of(user).get(f"/studies/{study.slug}/report.csv").content.decode()
    assert "no submitted ratings yet" not in icc_csv and "choices, not scores" in icc_csv


def test_bradley_terry_on_the_pairwise_report_says_its_estimator(make_study, user):
    study = test_pairwise.finished_study(make_study)  # human never lost: the MLE is infinite
    body = client_of(user).get(f"/studies/{study.slug}/report/").content.decode()
    assert 'data-testid="bt-strengths"' in body and "every resample kept" in body
    assert "prior" in body and "never lost: human" in body.lower()
