"""Operations: where the embedded broker writes, and what `make test` says about skipped browser tests."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from config.env import VAR_DIR

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(not settings.CELERY_BROKER_URL.startswith("filesystem"), reason="a real broker is configured")
def test_filesystem_broker_writes_its_exchange_tables_under_var_not_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    from config.celery import app

    control = Path(app.conf.broker_transport_options["control_folder"])
    assert control.is_relative_to(VAR_DIR / "broker")
    reply_table = control / "reply.celery.pidbox.exchange"
    reply_table.unlink(missing_ok=True)
    assert app.control.ping(timeout=0.1) == []  # a broadcast declares the reply exchange of the pidbox
    assert reply_table.is_file()
    assert not (tmp_path / "control").exists()


def test_a_run_without_chromium_ends_with_a_banner_naming_the_command_that_enables_browser_tests():
    env = {**os.environ, "CONCORD_CHROMIUM": "/nonexistent/chromium", "DJANGO_SETTINGS_MODULE": "config.settings.test"}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "tests/browser/test_metric_progress.py"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    tail = result.stdout.strip().splitlines()[-8:]
    assert any("BROWSER TESTS WERE SKIPPED" in line for line in tail), result.stdout
    assert any("sudo apt-get install -y chromium" in line for line in tail), result.stdout


# What a web or API process must not import at start (docs/architecture.md; pandas, SciPy, matplotlib
# and statsmodels with the URLconf made a web worker 224 MB): they load where a report or figure is computed.
WEB_HEAVY = ("torch", "transformers", "sentence_transformers", "pandas", "scipy", "matplotlib", "statsmodels", "sklearn",
             "pingouin")
WEB_PROCESS = """
import importlib, json, os, resource, sys
HEAVY = HEAVY_NAMES
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.test"
import config.wsgi
from django.core.management import call_command
from django.urls import get_resolver

modules = set()
def walk(patterns):
    for pattern in patterns:
        if hasattr(pattern, "url_patterns"):
            walk(pattern.url_patterns)
        else:
            modules.add(pattern.callback.__module__)
walk(get_resolver().url_patterns)
for name in ("studies.authoring.views", "studies.api.views", "metrics.web.views", "metrics.api.views", "config.urls"):
    importlib.import_module(name)
call_command("check")
heavy = sorted(m for m in HEAVY if m in sys.modules)
print(json.dumps({"heavy": heavy, "modules": sorted(modules),
                  "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}))
"""


def test_web_and_api_processes_import_no_heavy_library_at_start():
    """A gunicorn worker that imports torch holds ~200 MB more and starts seconds slower; only the
    worker tasks and commands that train or score may import it (inside their functions). pandas,
    SciPy, matplotlib and statsmodels load where a report or figure is computed (benchmarks/web_memory.py
    measures the process)."""
    result = subprocess.run([sys.executable, "-c", WEB_PROCESS.replace("HEAVY_NAMES", repr(WEB_HEAVY))], cwd=ROOT, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert {"metrics.api.views", "studies.api.views", "metrics.web.views"} <= set(report["modules"])
    assert report["heavy"] == [], f"a web process imported {report['heavy']}"
