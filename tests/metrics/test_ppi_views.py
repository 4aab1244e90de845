"""Where the prediction-powered estimates show: the report's section (registered by the metrics app), the
interval figure, CSV/XLSX, the API, the command, and the button that draws more items."""
import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import openpyxl
import pytest
from django.core.management import CommandError, call_command
from scipy import stats

from metrics.models import ScoringRun
from metrics.ppi import estimates as ppi
from metrics.scoring import services
from studies.models import Study
from tests.metrics.test_ppi_estimates import rated_study, score
from tests.metrics.test_ppi_estimates import varied_corpus_lines as _lines
from tests.problems import problem_fields

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def corpus12(user):
    from studies.corpora import services as corpus_imports

    return corpus_imports.dialogues_import(stream=io.BytesIO(_lines(12)), source_name="twelve.jsonl",
                                           corpus_slug="twelve", owner=user).corpus


@pytest.fixture
def scored(user, corpus12):
    study = rated_study(user, corpus12, reward="0.90")
    model = services.metric_model_default(key="readability")
    score(model, corpus=corpus12)
    return study, model


def test_ppi_report_section_figure_and_downloads(client, user, scored):
    study, model = scored
    client.force_login(user)
    page = client.get(f"/studies/{study.slug}/report/")
    body = page.content.decode()
    assert page.status_code == 200 and 'data-testid="ppi-section"' in body and 'data-testid="ppi-estimates"' in body
    report = ppi.ppi_report(Study.objects.filter(pk=study.pk), model)
    first = report["studies"][0]["criteria"][0]["systems"][0]
    assert f"{first['estimate']:.2f}" in body and f"{first['human_estimate']:.2f}" in body
    assert 'data-testid="ppi-planner"' in body and "n = 8" in body  # n beside every interval
    assert 'data-testid="ppi-pooled"' in body  # every system's units together, beside the per-system rows
    # a target far below the frame's reach: more than the 12 conversations of the frame
    body = client.get(f"/studies/{study.slug}/report/?ppi_width=0.01").content.decode()
    assert 'data-testid="ppi-extend"' not in body and "too few conversations left" in body
    widest = max(r["human_width"] for c in report["studies"][0]["criteria"] for r in c["systems"])
    # 0.9 of the widest human-only interval as a normal interval would draw it (the page's is Student t on 7 df)
    target = widest * 0.9 * stats.norm.ppf(0.975) / stats.t.ppf(0.975, 7)
    body = client.get(f"/studies/{study.slug}/report/?ppi_width={target}").content.decode()
    assert 'data-testid="ppi-extend"' in body and 'name="expected_items" value="8"' in body
    base = f"/experiments/{study.experiment.slug}/metrics/{model.name}/prediction-powered"
    svg = client.get(f"{base}/{study.slug}/coherence.svg")
    assert svg.status_code == 200 and svg["Content-Type"] == "image/svg+xml"
    assert all(name in svg.content.decode() for name in ("seq2seq", "thred", "human only"))
    assert client.get(f"{base}/{study.slug}/nonsense.svg").status_code == 404
    rows = list(csv.DictReader(io.StringIO(client.get(f"{base}.csv").content.decode())))
    assert len(rows) == 2 * 5  # criteria × (systems + all systems pooled; the Likert study judges the reference too)
    assert sum(r["system"] == "all systems" for r in rows) == 2
    row = rows[0]
    assert {"estimate", "ci_low", "ci_high", "human_estimate", "lam", "n_effective", "rater_noise_share"} <= set(row)
    book = openpyxl.load_workbook(io.BytesIO(client.get(f"{base}.xlsx").content))
    assert {"estimates", "differences", "places", "planner", "notes"} <= set(book.sheetnames)
    assert book["places"].max_row == 1 + 2 * 4
    bad = client.get(f"{base}.csv?width=wide")
    assert bad.status_code == 400 and "width" in bad.content.decode()
    assert client.get(f"{base}.pdf").status_code == 404


def test_ppi_api_and_bad_input(api, scored):
    study, model = scored
    url = f"/api/experiments/{study.experiment.slug}/metrics/{model.name}/prediction-powered/"
    got = api.get(url + "?width=0.8")
    assert got.status_code == 200
    body = got.json()
    assert body["studies"][0]["criteria"][0]["target_width"] == 0.8 and body["studies"][0]["pay"]["reward"] == 0.9
    assert problem_fields(api.get(url + "?width=-1")) == {"width": ["must be above 0, got -1"]}
    assert problem_fields(api.get(url + "?alpha=2")) == {"alpha": ["must be above 0 and below 1, got 2"]}
    assert "study" in problem_fields(api.get(url + "?study=no-such-study"))
    assert "widht" in problem_fields(api.get(url + "?widht=0.8"))


def test_ppi_extend_button_adds_items_once(client, user, scored):
    study, _ = scored
    client.force_login(user)
    form = {"count": "2", "expected_items": "8", "next": f"/studies/{study.slug}/report/"}
    first = client.post(f"/metrics/prediction-powered/{study.slug}/extend/", form)
    again = client.post(f"/metrics/prediction-powered/{study.slug}/extend/", form, follow=True)
    assert first.status_code == 302 and study.items.count() == 10
    assert "sent twice" in again.content.decode()
    bad = client.post(f"/metrics/prediction-powered/{study.slug}/extend/", {"count": "many", "expected_items": "10"},
                      follow=True)
    assert "whole numbers" in bad.content.decode() and study.items.count() == 10


def test_ppi_section_offers_to_score_the_rest_of_the_frame(client, user, corpus12):
    study = rated_study(user, corpus12, limit=6, raters=2)
    model = services.metric_model_default(key="coherence")
    score(model, study=study)
    client.force_login(user)
    body = client.get(f"/studies/{study.slug}/report/").content.decode()
    assert 'data-testid="ppi-refused"' in body and "Score corpus twelve with coherence" in body
    client.post("/metrics/runs/start/", {"corpus": "twelve", "metric_model": model.name})
    assert ScoringRun.objects.filter(corpus=corpus12, study=None, metric_model=model).exists()


def test_ppi_estimate_command(scored, capsys):
    study, model = scored
    call_command("ppi_estimate", model.name, "--study", study.slug, "--width", "0.9")
    out = capsys.readouterr().out
    assert "coherence" in out and "plan thred: width 0.900" in out and "more items for the target width" in out
    call_command("ppi_estimate", model.name, "--experiment", study.experiment.slug, "--json")
    report = json.loads(capsys.readouterr().out)
    assert report["studies"][0]["criteria"][0]["systems"][0]["n"] == 8
    with pytest.raises(CommandError, match="--width"):
        call_command("ppi_estimate", model.name, "--study", study.slug, "--width", "0")
    with pytest.raises(CommandError, match="no model"):
        call_command("ppi_estimate", "nope", "--study", study.slug)


def test_ppi_web_process_does_not_import_ppi_py():
    """ppi_py loads numba (and its LLVM): only the functions that compute import it."""
    code = ("import os, sys, json; os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings.test'; import django; "
            "django.setup(); import config.urls, metrics.web.ppi_views, metrics.ppi.estimates, studies.authoring.item_draws; "
            "print(json.dumps(sorted(m for m in ('ppi_py', 'numba') if m in sys.modules)))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


def test_ppi_human_vs_metric_page_shows_the_interval_figures(client, user, scored):
    study, model = scored
    client.force_login(user)
    body = client.get(f"/experiments/{study.experiment.slug}/metrics/{model.name}/").content.decode()
    assert 'data-testid="ppi-figures"' in body
    for criterion in ("readability", "coherence"):
        assert f"/prediction-powered/{study.slug}/{criterion}.svg" in body


def test_ppi_demo_report_shows_the_section_after_scoring(client, user):
    from studies.authoring.demo import demo_load

    experiment = demo_load()
    experiment.collaborators.add(user)
    client.force_login(user)
    assert 'data-testid="ppi-section"' not in client.get(f"/experiments/{experiment.slug}/report/").content.decode()
    model = services.metric_model_default(key="readability")
    for study in experiment.studies.all():
        score(model, study=study)
    body = client.get(f"/experiments/{experiment.slug}/report/").content.decode()
    assert 'data-testid="ppi-section"' in body and body.count('data-testid="ppi-estimates"') == 4 * 2
    assert body.count('data-testid="ppi-planner"') == 8 and "every usable conversation is an item" in body
    report = ppi.ppi_report(experiment.studies.all(), model)
    for study in report["studies"]:  # all 12 conversations are items: the human estimate, and a plan
        assert study["problem"] is None and study["pay"]["remaining_in_frame"] == 0
        assert all(r["n"] == 12 and r["n_unlabelled"] == 0 for c in study["criteria"] for r in c["systems"])
        assert all(p["needed_without_metric"] >= p["needed_with_metric"] for c in study["criteria"] for p in c["plan"])


def test_report_controls_each_say_what_they_act_on_once(client, user, scored):
    """"Recompute / CSV / XLSX" twice on a report: the toolbar's (reliability) and the
    estimates section's (prediction-powered) controls are named apart, each name once on the page."""
    import re

    study, _ = scored
    client.force_login(user)
    body = client.get(f"/studies/{study.slug}/report/").content.decode()
    assert 'data-testid="ppi-section"' in body
    controls = [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", text)).strip() for text in
                re.findall(r'<(?:a class="button[^"]*"[^>]*|button[^>]*)>(.*?)</(?:a|button)>', body, re.S)]
    assert len(controls) == len(set(controls)), sorted(c for c in controls if controls.count(c) > 1)
    for name in ("Reliability CSV", "Reliability XLSX", "Recompute the estimates", "Estimates CSV", "Estimates XLSX"):
        assert name in controls
