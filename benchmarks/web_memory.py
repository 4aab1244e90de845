"""Memory of a web process: the resident set (RSS) of a fresh Python process at each stage, each in its own
subprocess so that nothing one stage imported is counted in another:

- ``baseline``: ``django.setup()`` only (settings, apps, models): what any Django process of this
  project pays, the baseline of the ratios;
- ``urlconf``: the URLconf imported and every URL pattern's view resolved (what a web worker holds
  before its first request); budget 120 MB;
- ``report_inline``: the demo experiment's report page and one figure with the compute pool off
  (``CONCORD_COMPUTE_POOL_WORKERS=0``): pandas, SciPy, statsmodels and matplotlib load in the web process;
- ``pages_demo`` (and ``pages_100k`` with ``--var DIR``): the compute pool on (one process), every
  report, figure and download page of the experiment and of each of its studies (with each study's review
  page, live-reliability panel and two raters' pages), the human-vs-metric and
  prediction-powered pages and their files for two scored metric models, and the API's report, figure,
  download, human-vs-metric, prediction-powered and judge-ranking answers, served by Django's test
  client in the measured process (links followed from the pages, so a new figure or download is
  covered unedited). It prints the web process's RSS (now and its peak) and the heavy modules it
  imported (must be none of pandas, SciPy, statsmodels, matplotlib, scikit-learn, crowd-kit), and
  separately the pool process's RSS and what it imported. Budget 150 MB for the web process.

    python benchmarks/web_memory.py [--var DIR]

``--var DIR``: a database folder holding ``benchmarks.report_fixture``'s experiment (built there first if
missing: ``python benchmarks/report_speed.py --judgments 100000 --var DIR``, minutes) for ``pages_100k``.
The demo and the two metric models' scores are added to a database that lacks them, in a set-up
subprocess (so the measured process never imports what scoring needs).

Prints JSON. Settings: config.settings.local on a throw-away SQLite database (DATABASE_URL if set)."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
HEAVY = ("pandas", "numpy", "scipy", "matplotlib", "statsmodels", "sklearn", "crowdkit", "pingouin", "krippendorff",
         "torch", "transformers", "openpyxl", "boto3", "botocore")
STATISTICS_STACK = ("pandas", "scipy", "statsmodels", "matplotlib", "sklearn", "crowdkit")
BUDGET_MB = 120
PAGES_BUDGET_MB = 150
MODELS = ("readability", "judge-bench")  # the second: readability plus noise, so judges are ranked
# which links of a page are report, figure or download pages (others, such as forms, are not followed)
FOLLOW = r"/(report|figures|metrics|prediction-powered|export|spans|chats|label-studio)[/.]|\.(svg|csv|xlsx|jsonl)"

STAGE = r"""
import json, os, sys, tempfile
sys.path.insert(0, {root!r})
stage = {stage!r}
if stage == "report_inline":  # needs tables; the migrate command's checks import the URLconf, so only here
    os.environ["CONCORD_COMPUTE_POOL_WORKERS"] = "0"
    from benchmarks.common import django_on_throwaway_database
    django_on_throwaway_database()
else:
    os.environ.setdefault("CONCORD_VAR_DIR", tempfile.mkdtemp(prefix="concord-bench-"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    import django
    django.setup()
views = 0
if stage in ("urlconf", "report_inline"):
    from django.urls import URLPattern, URLResolver, get_resolver

    def walk(patterns):
        global views
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns)
            elif isinstance(pattern, URLPattern):
                assert callable(pattern.callback)
                views += 1

    walk(get_resolver().url_patterns)
if stage == "report_inline":
    from django.core.cache import cache
    from django.test import Client

    from studies.authoring.demo import demo_load, demo_user
    from studies.models import Experiment

    experiment = demo_load() or Experiment.objects.get(slug="demo-seed-study")
    client = Client()
    client.force_login(demo_user())
    cache.clear()
    url = f"/experiments/{{experiment.slug}}/report/"
    assert client.get(url, HTTP_HOST="127.0.0.1").status_code == 200
    assert client.get(url + "figures/icc.svg", HTTP_HOST="127.0.0.1").status_code == 200
rss = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmRSS:")) / 1024
heavy = sorted(name for name in {heavy!r} if name in sys.modules)
print(json.dumps({{"rss_mb": round(rss, 1), "views": views, "heavy_modules": heavy,
                  "modules": len(sys.modules)}}))
"""


def measure(stage: str) -> dict:
    code = STAGE.format(root=str(ROOT), stage=stage, heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def status_mb(pid: int | str, field: str = "VmRSS") -> float:
    with open(f"/proc/{pid}/status") as status:
        return round(next(int(line.split()[1]) for line in status if line.startswith(field + ":")) / 1024, 1)


def heavy_loaded() -> list[str]:
    """The heavy modules this process has imported (run in a pool process by ``pages``)."""
    return sorted(name for name in HEAVY if name in sys.modules)


def prepare(var: str, experiment_slug: str) -> None:
    """In a set-up subprocess: the database migrated, the demo loaded, and the experiment's responses scored
    by two metric models (readability, and readability plus noise under another name)."""
    os.environ["CONCORD_VAR_DIR"] = var
    from benchmarks.common import django_on_throwaway_database

    django_on_throwaway_database()
    import numpy as np
    from django.core.exceptions import ValidationError

    from metrics.models import MetricModel, MetricScore, ScoringRun
    from metrics.scoring import services
    from studies.authoring.demo import demo_load
    from studies.models import Experiment

    demo_load()
    experiment = Experiment.objects.get(slug=experiment_slug)
    readability = services.metric_model_default(key="readability")
    for study in experiment.studies.order_by("id"):
        if ScoringRun.objects.filter(metric_model=readability, study=study).exists():
            continue
        try:
            run = services.scoring_run_create(metric_model=readability, study=study, enqueue=False)
        except ValidationError:  # a turn-level metric on whole dialogues: not scored, said on the page
            continue
        services.scoring_run_execute(run=run)
    judge, _ = MetricModel.objects.get_or_create(metric=readability.metric, name=MODELS[1])
    have = set(MetricScore.objects.filter(metric_model=judge).values_list("response_id", flat=True))
    rng = np.random.default_rng(7)
    MetricScore.objects.bulk_create([
        MetricScore(metric_model=judge, response_id=r, value=v + rng.normal(0, 5.0))
        for r, v in MetricScore.objects.filter(metric_model=readability).exclude(response_id__in=have)
        .values_list("response_id", "value") if v is not None], batch_size=2000)


def pages(experiment_slug: str) -> dict:
    """In the measured subprocess (the database prepared): every report, figure and download page, the pool on."""
    import re
    import time
    from urllib.parse import urlsplit

    os.environ["CONCORD_COMPUTE_POOL_WORKERS"] = "1"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    import django

    django.setup()
    from django.test import Client

    from studies import compute_pool
    from studies.authoring.demo import demo_user
    from studies.designs.common import DONE
    from studies.models import Assignment, Experiment

    experiment = Experiment.objects.get(slug=experiment_slug)
    studies = list(experiment.studies.order_by("id").values_list("slug", flat=True))
    client = Client()
    client.force_login(demo_user())
    e = f"/experiments/{experiment.slug}"
    queue = [f"{e}/report/", f"{e}/report/?exclude_flagged=1", *(f"/studies/{s}/report/" for s in studies),
             *(f"{e}/metrics/{m}/" for m in MODELS),
             f"/api/experiments/{experiment.slug}/report/", f"/api/experiments/{experiment.slug}/judges/ranking/",
             *(f"/api/experiments/{experiment.slug}/report/download/?format={f}" for f in ("csv", "xlsx")),
             f"/api/experiments/{experiment.slug}/report/figures/icc/",
             f"/api/experiments/{experiment.slug}/ratings/?format=xlsx"]
    for m in MODELS:
        queue += [f"/api/experiments/{experiment.slug}/metrics/{m}/",
                  f"/api/experiments/{experiment.slug}/metrics/{m}/download/",
                  f"/api/experiments/{experiment.slug}/metrics/{m}/prediction-powered/",
                  *(f"/api/experiments/{experiment.slug}/metrics/{m}/prediction-powered/download/?format={f}"
                    for f in ("csv", "xlsx"))]
    for s in studies:
        queue += [f"/api/studies/{s}/report/", *(f"/api/studies/{s}/report/download/?format={f}" for f in ("csv", "xlsx")),
                  f"/studies/{s}/review/", f"/studies/{s}/live/panel/?fragment=1"]
        queue += [f"/studies/{s}/raters/{rater}/" for rater in Assignment.objects.filter(
            study__slug=s, status__in=DONE).order_by("rater_id").values_list("rater_id", flat=True)[:2]]
    ours = (e + "/", *(f"/studies/{s}/" for s in studies), *(f"/studies/{s}." for s in studies))
    seen: set[str] = set()
    statuses: dict[str, int] = {}
    types: dict[str, str] = {}
    streamed: dict[str, int] = {}
    computing = 0
    started = time.perf_counter()
    while queue:
        url = queue.pop(0)
        if url in seen:
            continue
        seen.add(url)
        for _ in range(600):  # a cold 100k report may outlast the deadline: reload as the page does
            response = client.get(url, HTTP_HOST="127.0.0.1")
            if response.status_code != 202:
                break
            computing += 1
            time.sleep(float(response.get("Retry-After", 1)))
        if response.streaming:  # written out as a server would, chunk by chunk (the export's rows are made then)
            streamed[url] = sum(len(chunk) for chunk in response.streaming_content)
        statuses[url] = response.status_code
        types[url] = response.get("Content-Type", "")
        if response.get("Content-Type", "").startswith("text/html") and response.status_code == 200:
            for link in re.findall(r'(?:href|src)="([^"#]+)"', response.content.decode()):
                link = link.replace("&amp;", "&")
                path = urlsplit(link).path
                if path.startswith(ours) and re.search(FOLLOW, path) and link not in seen:
                    queue.append(link)
    wall = time.perf_counter() - started
    pool = {str(pid): {"rss_mb": status_mb(pid), "peak_mb": status_mb(pid, "VmHWM")}
            for pid in compute_pool.pool_pids()}
    pool_heavy = compute_pool.call("benchmarks.web_memory.heavy_loaded")
    kinds: dict[str, int] = {}
    for url, content_type in types.items():
        kind = ("api:" if url.startswith("/api/") else "page:") + content_type.split(";")[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    failed = {url: code for url, code in statuses.items() if code != 200}
    heavy = heavy_loaded()
    result = {
        "rss_mb": status_mb("self"), "peak_mb": status_mb("self", "VmHWM"), "heavy_modules": heavy,
        "statistics_stack_in_web_process": [m for m in STATISTICS_STACK if m in heavy],
        "pages": len(statuses), "by_kind": kinds, "not_200": failed, "computing_answers": computing,
        "streamed_mb": round(sum(streamed.values()) / 2**20, 1),
        "wall_s": round(wall, 1), "pool_processes": pool, "pool_heavy_modules": pool_heavy,
    }
    compute_pool.shutdown()
    return result


def run_pages(var: str, experiment_slug: str) -> dict:
    env = {**os.environ, "CONCORD_VAR_DIR": var}
    prefix = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from benchmarks import web_memory as w; "
    subprocess.run([sys.executable, "-c", prefix + f"w.prepare({var!r}, {experiment_slug!r})"],
                   cwd=ROOT, env=env, check=True, capture_output=True)
    done = subprocess.run([sys.executable, "-c", prefix + f"import json; print(json.dumps(w.pages({experiment_slug!r})))"],
                          cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--var", help="a database folder with benchmarks.report_fixture's experiment (pages_100k)")
    parser.add_argument("--only-pages", action="store_true", help="skip the baseline, urlconf and inline stages")
    args = parser.parse_args()
    stages = {} if args.only_pages else {stage: measure(stage) for stage in ("baseline", "urlconf", "report_inline")}
    stages["pages_demo"] = run_pages(tempfile.mkdtemp(prefix="concord-bench-"), "demo-seed-study")
    if args.var:
        from benchmarks.report_fixture import EXPERIMENT

        stages["pages_100k"] = run_pages(str(Path(args.var).resolve()), EXPERIMENT)
    out = {
        "benchmark": "RSS of a web process: django.setup() (baseline), URLconf with every view resolved, after a "
                     "report computed in the process, and after every report, figure and download page with the "
                     "compute pool on (the pool process measured apart)",
        "stages": stages, "urlconf_budget_mb": BUDGET_MB, "pages_budget_mb": PAGES_BUDGET_MB,
    }
    if "baseline" in stages:
        out["urlconf_over_baseline"] = round(stages["urlconf"]["rss_mb"] / stages["baseline"]["rss_mb"], 2)
        out["urlconf_within_budget"] = stages["urlconf"]["rss_mb"] < BUDGET_MB
    out["pages_within_budget"] = all(s["rss_mb"] < PAGES_BUDGET_MB and not s["statistics_stack_in_web_process"]
                                     for name, s in stages.items() if name.startswith("pages"))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
