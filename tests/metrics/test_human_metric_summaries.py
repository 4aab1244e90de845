"""The human-vs-metric page reads what a worker stored (correlations with their bootstrap intervals, the
judges' ranking, the baselines' shortfalls) for the ratings and scores in force: none of it is computed in
the request. With 10 scored metrics the page answers within a query and CPU budget; a changed score or a
new rating makes it say "computing" and queue the worker again; another researcher gets a 404 and queues
nothing."""
import time

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from metrics import tasks
from metrics.models import HumanMetricSummary, MetricModel, MetricScore
from metrics.scoring import selectors, summaries
from metrics.scoring.services import metric_model_default
from studies.models import Rating
from studies.reports.selectors import ratings_frame
from tests.metrics.test_ppi_estimates import corpus12, rated_study  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db

METRICS = 10
QUERY_BUDGET = 60  # the page's reads: scope, unscored conditions, versions, three stored rows, pairwise, PPI
CPU_BUDGET_S = 1.0


@pytest.fixture
def scored(user, settings, corpus12):  # noqa: F811
    """A rated Likert study of ``user`` and 10 metric models scored on every rated response (the human mean
    plus noise of a different size each, so the ranking has a clear order)."""
    settings.METRIC_SUMMARIES_IN_REQUEST = False
    study = rated_study(user, corpus12)
    experiment = study.experiment
    means = ratings_frame(experiment.studies.all()).groupby("unit")["score"].mean().to_dict()
    base = metric_model_default(key="readability")
    rng = np.random.default_rng(0)
    models = []
    for i in range(METRICS):
        model = MetricModel.objects.create(metric=base.metric, name=f"judge-{i}", config={})
        MetricScore.objects.bulk_create([MetricScore(metric_model=model, response_id=unit, value=m + rng.normal(0, 0.1 + i))
                                         for unit, m in means.items()])
        models.append(model)
    return experiment, models


@pytest.fixture
def queued(monkeypatch):
    calls = []
    monkeypatch.setattr(tasks.human_metric_summaries, "delay", lambda *args: calls.append(args))
    return calls


def _no_computing(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("computed in the request")
    for name in ("compute_human_metric_report", "_judges_ranking", "_baseline_shortfalls"):
        monkeypatch.setattr(selectors, name, refuse)


def test_judges_page_reads_stored_results_within_query_and_time_budget(client, user, scored, queued, monkeypatch):
    """One test for the costly set-up: stored, read within budget, equal to a fresh computation, stale
    after a rating changes and fresh again once it is back, stale after a score changes."""
    experiment, models = scored
    url = f"/experiments/{experiment.slug}/metrics/{models[0].name}/"
    client.force_login(user)
    first = client.get(url).content.decode()
    assert 'id="computing"' in first and queued == [(experiment.pk, models[0].pk, user.pk)]
    assert tasks.human_metric_summaries(experiment.pk, models[0].pk, user.pk) == "stored"
    assert {"report", "judges"} <= set(HumanMetricSummary.objects.values_list("kind", flat=True))
    stored = HumanMetricSummary.objects.get(kind="judges").data["value"]
    ranked = selectors.metric_models_scored_on(experiment.studies.all(), user)
    assert len(ranked) == METRICS
    assert stored == summaries.json_round_trip(selectors._judges_ranking(experiment.studies.all(), ranked, 1000))

    _no_computing(monkeypatch)
    client.get(url)  # templates compiled, as in a warm web process
    with CaptureQueriesContext(connection) as queries:
        started = time.process_time()
        page = client.get(url).content.decode()
        cpu = time.process_time() - started
    assert 'id="computing"' not in page and len(queued) == 1
    assert len(queries) <= QUERY_BUDGET, len(queries)
    assert cpu < CPU_BUDGET_S, cpu
    assert {row["metric"] for block in stored for row in block["rows"]} == {m.name for m in models}
    assert stored[0]["best"] in page

    rating = Rating.objects.filter(assignment__study__experiment=experiment, value__isnull=False).first()
    Rating.objects.filter(pk=rating.pk).update(value=rating.value % 5 + 1)  # a rating changes: every part is stale
    assert 'id="computing"' in client.get(url).content.decode() and len(queued) == 2
    Rating.objects.filter(pk=rating.pk).update(value=rating.value)  # back as it was: the stored results hold again
    assert 'id="computing"' not in client.get(url).content.decode() and len(queued) == 2
    one = MetricScore.objects.filter(metric_model=models[3]).first()
    MetricScore.objects.filter(pk=one.pk).update(value=one.value + 1)  # a judge's score changes: its ranking is stale
    assert 'id="computing"' in client.get(url).content.decode() and len(queued) == 3


def test_another_researcher_neither_sees_the_page_nor_queues_its_computation(client, other_user, scored, queued):
    experiment, models = scored
    client.force_login(other_user)
    assert client.get(f"/experiments/{experiment.slug}/metrics/{models[0].name}/").status_code == 404
    assert queued == [] and not HumanMetricSummary.objects.exists()


def test_only_the_newest_versions_of_a_summary_are_kept(scored):
    """Every new rating or score makes a version; the rows of old ones are deleted as new ones are stored,
    so the table grows with the experiments, not with the ratings."""
    experiment, models = scored
    studies = experiment.studies.all()
    for i in range(summaries.KEEP_VERSIONS + 3):
        summaries.kept("report", f"v{i}", studies, models[0], lambda i=i: {"n": i})
    summaries.kept("report", "other-model", studies, models[1], lambda: {"n": -1})
    rows = HumanMetricSummary.objects.filter(kind="report", experiment=experiment, metric_model=models[0])
    assert rows.count() == summaries.KEEP_VERSIONS
    assert sorted(r["value"]["n"] for r in rows.values_list("data", flat=True)) == [3, 4, 5, 6]
    assert HumanMetricSummary.objects.filter(metric_model=models[1]).count() == 1  # another model's row stays
    newest = summaries.kept("report", f"v{summaries.KEEP_VERSIONS + 2}", studies, models[0], lambda: {"n": "again"})
    assert newest == {"n": 6}  # still read from the store
