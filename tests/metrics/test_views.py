"""Metrics API and pages: starting, following and cancelling runs on one's own studies only; the
human-vs-metric page; filling BME references from the study page."""
import csv
import io

import pytest

from config.celery import app as celery_app
from metrics.models import MetricScore, ScoringRun
from metrics.scoring import services
from studies.authoring.demo import demo_load
from studies.models import Study

pytestmark = pytest.mark.django_db


@pytest.fixture
def eager():
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = False


def test_start_a_run_through_the_api_and_follow_it_to_done(api, make_study, eager, django_capture_on_commit_callbacks):
    study = make_study("likert")
    services.metric_model_default(key="readability")
    with django_capture_on_commit_callbacks(execute=True):
        created = api.post("/api/metrics/runs/", {"metric_model": "readability", "study": study.slug}, format="json")
    assert created.status_code == 201 and created.json()["status"] == "queued"
    detail = api.get(f"/api/metrics/runs/{created.json()['id']}/").json()
    assert (detail["status"], detail["done"], detail["total"], detail["percent"], detail["attempts"]) == ("done", 24, 24, 100.0, 1)
    assert MetricScore.objects.count() == 24


def test_runs_on_someone_elses_study_are_404(api, other_user, corpus):
    from studies.authoring import services as authoring

    theirs = authoring.experiment_create(owner=other_user, title="T", conditions=[{"title": "S", "design": "likert", "slug": "theirs"}])
    model = services.metric_model_default(key="readability")
    assert api.post("/api/metrics/runs/", {"metric_model": "readability", "study": "theirs"}, format="json").status_code == 404
    run = services.scoring_run_create(metric_model=model, study=theirs.studies.get(), enqueue=False)
    assert api.get(f"/api/metrics/runs/{run.pk}/").status_code == 404
    assert api.post(f"/api/metrics/runs/{run.pk}/cancel/").status_code == 404
    assert ScoringRun.objects.get(pk=run.pk).status == "queued"


def test_cancel_through_the_api(api, make_study):
    run = services.scoring_run_create(metric_model=services.metric_model_default(key="readability"),
                                      study=make_study("likert"), enqueue=False)
    assert api.post(f"/api/metrics/runs/{run.pk}/cancel/").json()["status"] == "cancelled"


@pytest.mark.parametrize("key", ["readability", "coherence"])
def test_human_metric_page_shows_table8_scatter_plots_and_csv(client, user, key):
    experiment = demo_load()
    experiment.collaborators.add(user)
    model = services.metric_model_default(key=key)
    for study in experiment.studies.all():
        services.scoring_run_execute(run=services.scoring_run_create(metric_model=model, study=study, enqueue=False))
    client.force_login(user)
    page = client.get(f"/experiments/{experiment.slug}/metrics/{model.name}/").content.decode()
    assert 'id="table8"' in page and "human ceiling" in page and page.count("/scatter/") == 8
    assert page.count("/prediction-powered/demo-") == 8  # and each condition × criterion's intervals (metrics.ppi.estimates)
    svg = client.get(f"/experiments/{experiment.slug}/metrics/{model.name}/scatter/demo-bws/coherence.svg")
    assert svg["Content-Type"] == "image/svg+xml" and b"<svg" in svg.content
    assert client.get(f"/experiments/{experiment.slug}/metrics/{model.name}/scatter/nope/coherence.svg").status_code == 404
    rows = list(csv.DictReader(io.StringIO(client.get(f"/experiments/{experiment.slug}/metrics/{model.name}.csv").content.decode())))
    assert len(rows) == 8 * 2 * 3  # cells x levels x methods
    assert {r["level"] for r in rows} == {"response", "system"}


def test_human_metric_report_on_the_imported_grade_benchmark(api, user):
    import json

    import numpy as np
    import textstat
    from scipy import stats

    from studies.corpora import services as corpus_imports
    from tests.conftest import shared_file

    path = shared_file("grade", "dailydialog_EVAL.json")
    with path.open("rb") as stream:
        summary = corpus_imports.dialogues_import(stream=stream, source_name=path.name, owner=user)
    model = services.metric_model_default(key="readability")
    services.scoring_run_execute(run=services.scoring_run_create(metric_model=model, study=summary.benchmark_study,
                                                                 enqueue=False))
    report = api.get(f"/api/experiments/{summary.benchmark_study.experiment.slug}/metrics/readability/").json()
    (cell,) = report["cells"]
    records = json.loads(path.read_text())
    human = [np.mean(json.loads(r["HumanScores"])) for r in records]
    metric = [textstat.flesch_reading_ease(r["Response"].strip()) for r in records]
    assert cell["n_responses"] == 300
    assert cell["response_level"]["spearman"]["r"] == pytest.approx(stats.spearmanr(metric, human).statistic)


def test_fill_bme_references_from_the_study_page(client, user, corpus):
    from studies.authoring import services as authoring

    experiment = authoring.experiment_create(owner=user, title="E")
    study = authoring.study_create(experiment=experiment, title="B", design="bme", slug="b")
    authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred", "thred"], reference_system="human")
    client.force_login(user)
    assert "BME reference values" in client.get("/studies/b/").content.decode()
    client.post("/metrics/bme/b/", {"metric_model": "readability"})
    assert not Study.objects.get(slug="b").items.filter(reference_value=None).exists()


def test_human_metric_page_before_scoring_says_score_first_and_starts_a_run(client, user):
    experiment = demo_load()
    experiment.collaborators.add(user)
    model = services.metric_model_default(key="readability")
    client.force_login(user)
    url = f"/experiments/{experiment.slug}/metrics/{model.name}/"
    page = client.get(url)
    assert page.status_code == 200  # was a 500: correlations of responses without scores
    text = page.content.decode()
    assert "Score first" in text and text.count("Score with readability") == experiment.studies.count()
    assert client.get(f"/experiments/{experiment.slug}/metrics/{model.name}.csv").status_code == 200
    first = experiment.studies.order_by("id").first()
    response = client.post("/metrics/runs/start/", {"study": first.slug, "metric_model": model.name, "next": url})
    assert response.status_code == 302 and response["Location"] == url
    run = ScoringRun.objects.get(study=first, metric_model=model)
    assert "a scoring run is queued" in client.get(url).content.decode()
    services.scoring_run_execute(run=run)
    text = client.get(url).content.decode()
    # the demo's conditions show the same responses: one run scores them all
    assert 'id="table8"' in text and "Score first" not in text
    assert client.post("/metrics/runs/start/", {"study": first.slug, "metric_model": model.name,
                                                "next": "https://evil.example/"})["Location"] == "/metrics/"


def test_human_metric_page_with_a_single_rated_item_renders(client, user, make_study):
    from studies.rating import answers as answering
    from studies.rating import entry as rater_entry

    study = make_study("likert", raters_per_item=1, items_per_assignment=1)
    assignment = rater_entry.assignment_start(
        study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id="x"))
    slot = assignment.assignment_items.get()
    answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers={
        c: {r: j + 1 for j, r in enumerate(slot.response_order)} for c in ("readability", "coherence")})
    answering.assignment_submit(assignment=assignment)
    model = services.metric_model_default(key="readability")
    services.scoring_run_execute(run=services.scoring_run_create(metric_model=model, study=study, enqueue=False))
    client.force_login(user)
    page = client.get(f"/experiments/{study.experiment.slug}/metrics/{model.name}/")
    assert page.status_code == 200 and 'id="table8"' in page.content.decode()  # was a 500 (no CI to format)
    assert "–" in page.content.decode()
    for url in [line.split('src="')[1].split('"')[0] for line in page.content.decode().split("<img")[1:]]:
        assert client.get(url).status_code == 200
    assert client.get(f"/experiments/{study.experiment.slug}/metrics/{model.name}.csv").status_code == 200


def test_report_number_filters_take_anything():
    import numpy as np

    from studies.templatetags.report_format import duration, num, pval

    assert [num(v) for v in (None, "", float("nan"), "x", np.int64(2), 0.12345)] == ["–"] * 4 + ["2.000", "0.123"]
    assert (pval(""), pval(0.0001), duration(""), duration(30)) == ("–", "p < .001", "–", "30 s")


def test_human_metric_page_ranks_every_metric_scored_on_the_study(client, user):
    """The best judge: with two metrics scored, the page ranks them per condition and criterion
    with the paired gap to the best, as studies.analysis.metric_ranking computes on the same targets."""
    from metrics.scoring import selectors

    experiment = demo_load()
    experiment.collaborators.add(user)
    models = [services.metric_model_default(key=k) for k in ("readability", "cosine_last")]
    for model in models:
        for study in experiment.studies.all():
            services.scoring_run_execute(run=services.scoring_run_create(metric_model=model, study=study, enqueue=False))
    rows = selectors.judges_ranking(experiment.studies.all(), models)
    assert len(rows) == 8 and all({r["metric"] for r in row["rows"]} == {"readability", "cosine_last"} for row in rows)
    assert all(row["n"] > 5 and row["rows"][1]["delta_low"] is not None for row in rows)
    client.force_login(user)
    page = client.get(f"/experiments/{experiment.slug}/metrics/readability/").content.decode()
    assert 'id="best-judge"' in page and page.count("Gap to the best") == 8
    assert page.count("agrees best with the humans (") == 8 and f"{rows[0]['best']} agrees best" in page
