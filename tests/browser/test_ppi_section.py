"""The report's prediction-powered section in a browser: n beside every interval, the pooled row, and the
"combine every scored metric" box giving the cross-fitted combination with its verdict; the metrics page's
"Retry the unscored" button queues a run that scores only what is missing."""
import io

import pytest

from metrics.models import MetricScore, ScoringRun
from metrics.scoring import run_jobs, services
from studies.corpora import services as corpus_imports
from tests.browser.conftest import log_in
from tests.metrics.test_ppi_estimates import rated_study, score, varied_corpus_lines

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _study(user):
    user.set_password("pw-concord")
    user.save()
    corpus = corpus_imports.dialogues_import(stream=io.BytesIO(varied_corpus_lines(12)), source_name="twelve.jsonl",
                                             corpus_slug="twelve", owner=user).corpus
    return rated_study(user, corpus), corpus


def test_ppi_section_shows_n_pooled_and_the_combination(live_server, page, screenshot, user):
    study, corpus = _study(user)
    for key in ("readability", "cosine_last"):
        score(services.metric_model_default(key=key), corpus=corpus)
    log_in(page, live_server, user.username, "pw-concord")
    # the first view computes every table of the report and the best-judge ranking: slow on a busy machine
    page.goto(f"{live_server.url}/studies/{study.slug}/report/?ppi_metric=readability", timeout=180000)
    section = page.locator("[data-testid='ppi-section']")
    assert "n = 8" in section.locator("[data-testid='ppi-estimates']").first.inner_text()
    assert section.locator("[data-testid='ppi-pooled']").count() == 2  # one per criterion
    section.get_by_label("Combine every scored metric (cross-fitted weights)").check()
    with page.expect_navigation(timeout=180000):
        section.get_by_role("button", name="Recompute the estimates").click()
    table = page.locator("[data-testid='ppi-combination']").first
    text = table.inner_text()
    assert "worth it" in text and "n = 8" in text and "cosine_last" in text
    screenshot(page, "ppi-combination")


def test_ppi_retry_the_unscored_button_queues_a_run(live_server, page, user, monkeypatch):
    queued = []
    monkeypatch.setattr(run_jobs.jobs, "queue_after_commit", lambda name, *args, **kw: queued.append((name, args)))
    study, _ = _study(user)
    model = services.metric_model_default(key="readability")
    run = services.scoring_run_execute(run=services.scoring_run_create(metric_model=model, study=study, enqueue=False))
    MetricScore.objects.filter(pk__in=list(MetricScore.objects.filter(metric_model=model)
                                           .values_list("pk", flat=True)[:3])).delete()
    ScoringRun.objects.filter(pk=run.pk).update(done=run.total - 3)  # as a run whose last 3 calls failed
    log_in(page, live_server, user.username, "pw-concord")
    page.goto(f"{live_server.url}/metrics/")
    page.locator(f"tr[data-run='{run.pk}']").get_by_role("button", name="Retry the unscored").click()
    page.wait_for_load_state()
    assert "scores only the unscored targets" in page.content()
    (again,) = ScoringRun.objects.filter(study=study).exclude(pk=run.pk)
    assert queued == [("metrics.tasks.scoring_run_execute", (again.pk,))] and not again.force
