"""The human-vs-metric page's first load with 10 scored metrics: read from what the worker stored, against
the same page computing everything in the request (what it did before the summaries were stored).

    python benchmarks/judges_page.py [--metrics 10] [--repeats 3]

On a throw-away SQLite database (or DATABASE_URL): the demo experiment (four conditions, 1,680 ratings)
and ``--metrics`` metric models, each scoring every rated response with the human mean plus noise of a
different size (so that the judges' ranking has work to do). The worker's task
(``metrics.tasks.human_metric_summaries``) runs for each, as a finished scoring run queues it. Then each
model's page is loaded by its owner through Django's test client with the cache cleared first:

- ``stored``: the page reading the stored correlations, ranking and baselines (the deployed path);
- ``in_request``: the same page with ``METRIC_SUMMARIES_IN_REQUEST`` on and nothing stored, i.e. the
  correlations' bootstraps, the ranking's bootstrap and the baselines computed in the request.

Prints JSON: median wall and CPU seconds of a first load per path, the queries of one load, and
``speedup`` = in_request / stored (CPU). The page's goal is under 1 s on first load."""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import django_on_throwaway_database  # noqa: E402

warnings.filterwarnings("ignore")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--metrics", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    django_on_throwaway_database()

    import numpy as np
    from django.core.cache import cache
    from django.db import connection
    from django.test import Client, override_settings
    from django.test.utils import CaptureQueriesContext

    from metrics import tasks
    from metrics.models import HumanMetricSummary, MetricModel, MetricScore
    from metrics.scoring.services import metric_model_default
    from studies.authoring import demo
    from studies.reports.selectors import ratings_frame

    experiment = demo.demo_load()
    owner = experiment.owner
    means = ratings_frame(experiment.studies.all()).groupby("unit")["score"].mean().to_dict()
    base = metric_model_default(key="readability")
    rng = np.random.default_rng(0)
    models = []
    for i in range(args.metrics):
        model = MetricModel.objects.create(metric=base.metric, name=f"judge-{i}", config={})
        MetricScore.objects.bulk_create([MetricScore(metric_model=model, response_id=unit,
                                                     value=float(m + rng.normal(0, 0.1 + i)))
                                         for unit, m in means.items()])
        models.append(model)
    started = time.perf_counter()
    for model in models:
        tasks.human_metric_summaries(experiment.pk, model.pk, owner.pk)
    worker_s = time.perf_counter() - started

    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(owner)

    def first_loads(in_request: bool) -> dict:
        walls, cpus, queries = [], [], []
        with override_settings(METRIC_SUMMARIES_IN_REQUEST=in_request):
            for _ in range(args.repeats):
                for model in models:
                    if in_request:
                        HumanMetricSummary.objects.all().delete()
                    cache.clear()
                    wall, cpu = time.perf_counter(), time.process_time()
                    with CaptureQueriesContext(connection) as captured:
                        page = client.get(f"/experiments/{experiment.slug}/metrics/{model.name}/")
                    walls.append(time.perf_counter() - wall)
                    cpus.append(time.process_time() - cpu)
                    queries.append(len(captured))
                    assert page.status_code == 200, page.status_code
                    assert in_request or b"computing" not in page.content.lower(), "a stored page said computing"
        return {"wall_s": round(statistics.median(walls), 3), "cpu_s": round(statistics.median(cpus), 3),
                "max_wall_s": round(max(walls), 3), "queries": max(queries)}

    client.get(f"/experiments/{experiment.slug}/metrics/{models[0].name}/")  # imports, URLconf: not a first load
    stored = first_loads(False)
    in_request = first_loads(True)
    print(json.dumps({"metrics": args.metrics, "rated_responses": len(means), "worker_s_all_models": round(worker_s, 2),
                      "stored": stored, "in_request": in_request,
                      "speedup": round(in_request["cpu_s"] / max(stored["cpu_s"], 1e-6), 1),
                      "goal_s": 1.0, "within_goal": stored["wall_s"] < 1.0}, indent=2))


if __name__ == "__main__":
    main()
