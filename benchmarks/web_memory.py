"""Memory of a web process: the resident set (RSS) of a fresh Python process at three stages, each in its
own subprocess so that nothing one stage imported is counted in another:

- ``baseline``: ``django.setup()`` only (settings, apps, models): what any Django process of this
  project pays, the baseline of the ratio;
- ``urlconf``: the URLconf imported and every URL pattern's view resolved (what a web worker holds
  before its first request); the issue's budget is 120 MB;
- ``report``: the same, then the demo experiment's report computed and its figures drawn, which is
  where pandas, SciPy, statsmodels and matplotlib are meant to load.

    python benchmarks/web_memory.py

Prints JSON: RSS in MB per stage, the ratio urlconf / baseline, and which heavy libraries each stage
had imported. Settings: config.settings.local on a throw-away SQLite database (DATABASE_URL if set)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "numpy", "scipy", "matplotlib", "statsmodels", "sklearn", "pingouin", "krippendorff", "torch",
         "transformers", "openpyxl", "boto3", "botocore")
BUDGET_MB = 120

STAGE = r"""
import json, os, sys, tempfile
sys.path.insert(0, {root!r})
stage = {stage!r}
if stage == "report":  # needs tables; the migrate command's checks import the URLconf, so only here
    from benchmarks.common import django_on_throwaway_database
    django_on_throwaway_database()
else:
    os.environ.setdefault("CONCORD_VAR_DIR", tempfile.mkdtemp(prefix="concord-bench-"))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    import django
    django.setup()
views = 0
if stage in ("urlconf", "report"):
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
if stage == "report":
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


def main() -> None:
    stages = {stage: measure(stage) for stage in ("baseline", "urlconf", "report")}
    urlconf = stages["urlconf"]["rss_mb"]
    print(json.dumps({
        "benchmark": "RSS of a web process: django.setup() (baseline), URLconf with every view resolved, "
                     "after computing a report",
        "stages": stages,
        "urlconf_over_baseline": round(urlconf / stages["baseline"]["rss_mb"], 2),
        "urlconf_budget_mb": BUDGET_MB, "urlconf_within_budget": urlconf < BUDGET_MB,
    }, indent=2))


if __name__ == "__main__":
    main()
