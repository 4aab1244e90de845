"""The best-judge ranking and the prediction-powered section on stored rows: a judge made for one criterion
ranked on that one only (and said so), each metric's coverage beside the shared n, the best-ranked judge as
the section's default metric, several metrics combined through the API and the command, the human ceiling
hidden for imported judgments, and a re-run's log that says what was stored."""
import io

import numpy as np
import pytest
from django.core.management import call_command

from metrics.models import MetricModel, MetricScore, ScoringRun
from metrics.ppi import estimates as ppi
from metrics.scoring import selectors, services
from studies.models import Rating
from tests.metrics.test_ppi_estimates import corpus12, rated_study, score  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db


def _judge_for(study, name, criterion, *, noise=0.1, seed=0, drop=0):
    """A metric model made for ``criterion`` whose scores are the units' mean human score plus noise."""
    base = services.metric_model_default(key="readability")
    model = MetricModel.objects.create(metric=base.metric, name=name, config={"criterion": {"name": criterion}})
    rng = np.random.default_rng(seed)
    means: dict[int, list[float]] = {}
    for response_id, value in Rating.objects.filter(assignment__study=study, criterion__name=criterion) \
            .values_list("response_id", "value"):
        means.setdefault(response_id, []).append(value)
    rows = [MetricScore(metric_model=model, response_id=r, value=float(np.mean(v) + noise * rng.normal()))
            for r, v in sorted(means.items())[drop:]]
    MetricScore.objects.bulk_create(rows)
    return model


def test_ranking_judge_made_for_one_criterion_is_ranked_on_it_only(user, corpus12):  # noqa: F811
    study = rated_study(user, corpus12)
    readability = services.metric_model_default(key="readability")
    score(readability, study=study)
    judge = _judge_for(study, "judge-coherence", "coherence", drop=3)
    blocks = {b["criterion"]: b for b in selectors.judges_ranking(study.experiment.studies.all(), [readability, judge],
                                                                   resamples=200)}
    coherence, other = blocks["coherence"], blocks["readability"]
    assert {r["metric"] for r in coherence["rows"]} == {"readability", "judge-coherence"}
    assert coherence["best"] == "judge-coherence" and coherence["coverage"]["judge-coherence"] == coherence["n_human"] - 3
    assert coherence["n"] == coherence["n_human"] - 3 and "ranked on the" in coherence["summary"]
    assert other["rows"] == [] and "judge-coherence was made to judge coherence" in other["not_ranked_note"]
    assert selectors.judged_criterion(judge) == "coherence" and selectors.judged_criterion(readability) is None
    assert selectors.best_ranked_model(study.experiment.studies.all(), [readability, judge]) == judge


def test_ranking_page_shows_coverage_and_the_judge_criterion_note(client, user, corpus12):  # noqa: F811
    study = rated_study(user, corpus12)
    readability = services.metric_model_default(key="readability")
    score(readability, study=study)
    _judge_for(study, "judge-coherence", "coherence", drop=2)
    client.force_login(user)
    page = client.get(f"/experiments/{study.experiment.slug}/metrics/readability/").content.decode()
    assert 'data-testid="judge-coverage"' in page and 'data-testid="judge-other-criterion"' in page
    assert "made to judge coherence, so it is not ranked on readability" in page
    # the report's prediction-powered section defaults to the best-ranked judge, not the first in the list
    report = client.get(f"/studies/{study.slug}/report/").content.decode()
    assert 'data-testid="ppi-default-metric"' in report and "judge-coherence is the metric that agrees best" in report


def test_ppi_combination_through_the_api_and_the_command(api, user, corpus12, capsys):  # noqa: F811
    study = rated_study(user, corpus12)
    readability, cosine = (services.metric_model_default(key=k) for k in ("readability", "cosine_last"))
    score(readability, corpus=corpus12)
    base = f"/api/experiments/{study.experiment.slug}/metrics/readability/prediction-powered/"
    refused = api.get(base + "?combine=cosine_last")  # not scored on the frame yet: said, not a 500
    assert refused.status_code == 200 and "not combined" in refused.json()["studies"][0]["combination_problem"]
    score(cosine, corpus=corpus12)
    body = api.get(base + "?combine=cosine_last").json()
    assert body["combined_with"] == ["cosine_last"]
    rows = body["studies"][0]["criteria"][0]["combination"]
    assert rows and all(set(r["weights"]) == {"readability", "cosine_last"} and r["n"] == 8 for r in rows)
    assert all(r["verdict"].startswith(("worth it", "not worth it")) for r in rows)
    bad = api.get(base + "?combine=nonesuch")
    assert bad.status_code == 400 and "combine" in bad.content.decode()
    call_command("ppi_estimate", "readability", "--study", study.slug, "--combine", "cosine_last")
    out = capsys.readouterr().out
    assert "combined " in out and "worth it" in out and "n = 8" in out and "all systems" in out
    report = ppi.ppi_report(study.experiment.studies.all(), readability, combine=[cosine])
    assert report["studies"][0]["criteria"][0]["combination"] == rows


def test_ppi_rerun_log_says_what_was_stored_and_retry_scores_only_the_rest(client, user, corpus12):  # noqa: F811
    study = rated_study(user, corpus12)
    model = services.metric_model_default(key="readability")
    run = services.scoring_run_create(metric_model=model, study=study, enqueue=False)
    run = services.scoring_run_execute(run=run)
    assert "scored 32 of 32 this time" in run.log  # 8 conversations x 4 responses (the reference too)
    MetricScore.objects.filter(metric_model=model, response_id__in=list(
        MetricScore.objects.filter(metric_model=model).values_list("response_id", flat=True)[:5])).delete()
    again = services.scoring_run_execute(run=services.scoring_run_create(metric_model=model, study=study, enqueue=False))
    assert "scored 5 of 32 this time" in again.log and "27 had a score already" in again.log
    nothing = services.scoring_run_execute(run=services.scoring_run_create(metric_model=model, study=study,
                                                                           enqueue=False))
    assert "scored 0 of 32 this time" in nothing.log
    with pytest.raises(Exception, match="nothing to retry"):
        services.scoring_run_retry(run=nothing, enqueue=False)
    MetricScore.objects.filter(metric_model=model).order_by("pk")[:1].get().delete()
    ScoringRun.objects.filter(pk=nothing.pk).update(done=31)  # as a run whose last call failed leaves it
    client.force_login(user)
    page = client.get("/metrics/").content.decode()
    assert 'data-testid="run-retry"' in page
    client.post(f"/metrics/runs/{nothing.pk}/retry/")
    retried = ScoringRun.objects.order_by("-pk").first()
    assert retried.pk != nothing.pk and not retried.force and retried.study_id == study.pk


def test_ppi_retry_api_and_command_and_others_runs_404(api, other_user, user, corpus12, capsys):  # noqa: F811
    study = rated_study(user, corpus12)
    model = services.metric_model_default(key="readability")
    run = services.scoring_run_execute(run=services.scoring_run_create(metric_model=model, study=study, enqueue=False))
    assert api.post(f"/api/metrics/runs/{run.pk}/retry/").status_code == 400  # nothing unscored: the field named
    MetricScore.objects.filter(pk__in=list(MetricScore.objects.filter(metric_model=model)
                                           .values_list("pk", flat=True)[:2])).delete()  # two failed calls
    created = api.post(f"/api/metrics/runs/{run.pk}/retry/")
    assert created.status_code == 201 and created.json()["id"] != run.pk
    ScoringRun.objects.filter(pk=created.json()["id"]).update(status="done")
    call_command("score_metric", "readability", "--retry", str(run.pk), stdout=io.StringIO())
    assert MetricScore.objects.filter(metric_model=model).count() == 32
    api.force_authenticate(other_user)
    assert api.post(f"/api/metrics/runs/{run.pk}/retry/").status_code == 404


def _grade_file(n=30, seed=5) -> bytes:
    """A GRADE-format file: one response per context, five annotator positions per response."""
    import json

    rng = np.random.default_rng(seed)
    words = ["yes", "no", "maybe", "the", "beach", "is", "nice", "today", "I", "would", "go", "there"]
    records = []
    for i in range(n):
        quality = rng.integers(1, 6)
        scores = np.clip(quality + rng.integers(-1, 2, size=5), 1, 5).tolist()
        records.append({"ID": i, "Dataset": "dailydialog_EVAL", "DialogModel": ["a", "b", "c"][i % 3],
                        "Context": f"hello {i}|||how are you {i}",
                        "Response": " ".join(rng.choice(words, int(rng.integers(2, 12)))), "HumanScores": str(scores)})
    return json.dumps(records).encode()


def test_agreement_human_ceiling_hidden_for_imported_judgments(user):
    from studies.corpora import services as corpus_imports

    summary = corpus_imports.dialogues_import(stream=io.BytesIO(_grade_file()), source_name="tiny_grade.json",
                                              owner=user)
    model = services.metric_model_default(key="readability")
    services.scoring_run_execute(run=services.scoring_run_create(metric_model=model, study=summary.benchmark_study,
                                                                 enqueue=False))
    report = selectors.compute_human_metric_report(summary.benchmark_study.experiment.studies.all(), model,
                                                   bootstrap=0)
    (cell,) = report["cells"]
    assert cell["human_ceiling"] is None and "annotator positions" in cell["human_ceiling_note"]
