"""Scoring runs: stored values, idempotence, force, cancel, resume after a crash without duplicates;
BME reference values; the human-vs-metric report against SciPy; the commands."""
import io
import json

import numpy as np
import pytest
import textstat
from django.core.management import CommandError, call_command
from scipy import stats

from metrics.implementations.readability import Readability
from metrics.models import MetricScore, RunStatus
from metrics.scoring import loop as scoring_loop
from metrics.scoring import selectors, services
from studies.authoring.demo import demo_load
from studies.models import Response, Study
from tests.conftest import shared_file

pytestmark = pytest.mark.django_db


@pytest.fixture
def readability():
    return services.metric_model_default(key="readability")


def test_a_run_stores_one_score_per_response_and_a_rerun_adds_none(make_study, readability):
    study = make_study("likert")
    run = services.scoring_run_execute(run=services.scoring_run_create(metric_model=readability, study=study, enqueue=False))
    responses = Response.objects.filter(pk__in=selectors.run_responses(run))
    assert (run.status, run.done, run.total, run.attempts) == ("done", 24, 24, 1)
    for response in responses:
        assert MetricScore.objects.get(metric_model=readability, response=response).value == textstat.flesch_reading_ease(response.text)
    again = services.scoring_run_execute(run=services.scoring_run_create(metric_model=readability, study=study, enqueue=False))
    assert (again.status, again.done, again.total) == ("done", 24, 24)
    assert MetricScore.objects.filter(metric_model=readability).count() == 24
    assert "scored 0 of 24" in again.log


def test_force_rescoring_replaces_scores(make_study, readability):
    study = make_study("likert")
    services.scoring_run_execute(run=services.scoring_run_create(metric_model=readability, study=study, enqueue=False))
    MetricScore.objects.update(value=-999)
    services.scoring_run_execute(run=services.scoring_run_create(metric_model=readability, study=study, force=True,
                                                                 enqueue=False))
    assert not MetricScore.objects.filter(value=-999).exists()
    assert MetricScore.objects.count() == 24


def test_a_crashed_run_resumes_without_duplicates(make_study, readability, monkeypatch):
    study = make_study("likert")
    monkeypatch.setattr(services, "BATCH", 5)
    calls = {"n": 0}
    real = Readability.score

    def crash_after_two_batches(self, batch):
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("worker died")
        return real(self, batch)

    monkeypatch.setattr(Readability, "score", crash_after_two_batches)
    run = services.scoring_run_create(metric_model=readability, study=study, enqueue=False)
    with pytest.raises(RuntimeError):
        services.scoring_run_execute(run=run)
    run.refresh_from_db()
    assert (run.status, MetricScore.objects.count()) == ("running", 10)
    resumed = services.scoring_run_execute(run=run)  # the message is delivered again
    assert (resumed.status, resumed.attempts, resumed.done) == ("done", 2, 24)
    assert MetricScore.objects.count() == 24
    assert "attempt 2: scored 14 of 24" in resumed.log


def test_cancel_stops_a_run_at_the_next_batch(make_study, readability, monkeypatch):
    study = make_study("likert")
    monkeypatch.setattr(services, "BATCH", 4)
    monkeypatch.setattr(scoring_loop, "PROGRESS_EVERY_S", 0.0)
    run = services.scoring_run_create(metric_model=readability, study=study, enqueue=False)

    def cancel_midway(done, total):
        if done == 8:
            services.scoring_run_cancel(run=run)

    finished = services.scoring_run_execute(run=run, on_progress=cancel_midway)
    assert finished.status == RunStatus.CANCELLED
    assert MetricScore.objects.count() == 8
    assert services.scoring_run_execute(run=finished).status == RunStatus.CANCELLED  # not restarted


def test_bme_reference_values_come_from_the_metric_by_the_documented_mapping(user, corpus, readability):
    from studies.authoring import services as authoring

    experiment = authoring.experiment_create(owner=user, title="E")
    study = authoring.study_create(experiment=experiment, title="B", design="bme")
    authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred", "thred"], reference_system="human")
    mapped = services.bme_reference_values_fill(study=study, metric_model=readability)
    for item in study.items.select_related("reference_response"):
        score = textstat.flesch_reading_ease(item.reference_response.text)
        lo, hi = min(textstat.flesch_reading_ease(i.reference_response.text) for i in study.items.all()), 121.22
        # onto the default anchor interval 50..150 (studies.designs.magnitude.bme_reference_value), whole numbers
        assert item.reference_value == mapped[item.pk] == round(min(150, max(50, 50 + 100 * (score - lo) / (hi - lo))))
    assert min(mapped.values()) == 50  # the lowest-scored reference: half of it (25) is still a usable number
    assert authoring.study_publish(study=study).status == "published"


def test_human_metric_report_equals_scipy_on_the_same_pairs(readability):
    experiment = demo_load()
    studies = Study.objects.filter(experiment=experiment)
    for study in studies:
        services.scoring_run_execute(run=services.scoring_run_create(metric_model=readability, study=study, enqueue=False))
    report = selectors.human_metric_report(studies, readability, bootstrap=200)
    assert len(report["cells"]) == 8
    cell = next(c for c in report["cells"] if c["condition"] == "demo-rme" and c["criterion"] == "readability")
    human = np.array([p["human"] for p in cell["points"]])
    metric = np.array([p["metric"] for p in cell["points"]])
    assert cell["n_responses"] == 36 and cell["missing_scores"] == 0
    assert cell["response_level"]["spearman"]["r"] == pytest.approx(stats.spearmanr(metric, human).statistic)
    assert cell["response_level"]["kendall"]["p"] == pytest.approx(stats.kendalltau(metric, human).pvalue)
    low, high = cell["response_level"]["pearson"]["ci95"]
    assert low < cell["response_level"]["pearson"]["r"] < high
    assert cell["system_level"]["pearson"]["n"] == 3 and 0 < cell["human_ceiling"] < 1


def test_score_metric_command_and_grade_benchmark(make_study):
    study = make_study("likert")
    call_command("score_metric", "readability", "--study", study.slug, verbosity=0)
    assert MetricScore.objects.count() == 24
    path = shared_file("grade", "dailydialog_EVAL.json")
    out = io.StringIO()
    call_command("benchmark_metric", "readability", "--dataset", str(path), "--format", "grade", verbosity=0, stdout=out)
    (result,) = json.loads(out.getvalue())["files"]
    records = json.loads(path.read_text())
    human = [np.mean(json.loads(r["HumanScores"])) for r in records]
    metric = [textstat.flesch_reading_ease(r["Response"].strip()) for r in records]
    assert result["qualities"]["human:coherence"]["n"] == 300  # GRADE's human score, never the coherence metric
    assert result["qualities"]["human:coherence"]["spearman"]["r"] == pytest.approx(stats.spearmanr(metric, human).statistic)


def test_cached_human_metric_report_follows_new_scores(make_study, readability):
    study = make_study("likert", raters_per_item=2, items_per_assignment=6)
    from studies.rating import answers as answering
    from studies.rating import entry as rater_entry

    for i in range(2):
        assignment = rater_entry.assignment_start(study=study, rater=rater_entry.rater_get_or_create(
            platform="invite", external_id=f"h{i}"))
        for slot in assignment.assignment_items.all():
            answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers={
                c: {r: (slot.response_order.index(r) + i) % 6 + 1 for r in slot.response_order}
                for c in ("readability", "coherence")})
        answering.assignment_submit(assignment=assignment)
    studies = Study.objects.filter(pk=study.pk)
    services.scoring_run_execute(run=services.scoring_run_create(metric_model=readability, study=study, enqueue=False))
    before = selectors.human_metric_report(studies, readability, bootstrap=50)
    assert selectors.human_metric_report(studies, readability, bootstrap=50) == before  # served from the cache
    MetricScore.objects.filter(metric_model=readability).update(value=0.0)  # scores change (e.g. a forced re-run)
    after = selectors.human_metric_report(studies, readability, bootstrap=50)
    assert {p["metric"] for c in after["cells"] for p in c["points"]} == {0.0}
    assert after != before


def test_grade_benchmark_on_the_held_out_share_and_ddpp_with_an_offset(tmp_path):
    from ml.data.human_scores import read_grade, split

    path = shared_file("grade", "dailydialog_EVAL.json")
    out = io.StringIO()
    call_command("benchmark_metric", "readability", "--dataset", str(path), "--format", "grade", "--held-out", "71",
                 verbosity=0, stdout=out)
    (result,) = json.loads(out.getvalue())["files"]
    _, held_out = split(read_grade(path), seed=71)
    by_id = {str(r["ID"]): r for r in json.loads(path.read_text())}
    metric = [textstat.flesch_reading_ease(by_id[p.id]["Response"].strip()) for p in held_out]
    assert result["records"] == result["qualities"]["human:coherence"]["n"] == 30
    assert result["qualities"]["human:coherence"]["spearman"]["r"] == pytest.approx(
        stats.spearmanr(metric, [p.score for p in held_out]).statistic)
    ddpp = shared_file("dailydialog_pp", "test.json")
    out = io.StringIO()
    call_command("benchmark_metric", "readability", "--dataset", str(ddpp), "--format", "ddpp", "--offset", "150",
                 "--limit", "5", verbosity=0, stdout=out)
    (result,) = json.loads(out.getvalue())["files"]
    assert result["records"] == result["ranking"]["contexts"] == 5
    only_those = tmp_path / "five.json"  # the same five contexts as a file of their own
    only_those.write_text("\n".join(ddpp.read_text().splitlines()[150:155]) + "\n")
    out = io.StringIO()
    call_command("benchmark_metric", "readability", "--dataset", str(only_those), "--format", "ddpp", verbosity=0, stdout=out)
    assert json.loads(out.getvalue())["files"][0]["ranking"] == result["ranking"]
    with pytest.raises(CommandError, match="--held-out is only for GRADE files"):
        call_command("benchmark_metric", "readability", "--dataset", str(ddpp), "--format", "ddpp", "--held-out", "71")
