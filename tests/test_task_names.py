"""Services queue Celery tasks by name (``studies.jobs.queue_after_commit``), so a web or management
process must have registered every such name at start-up, not only the worker (which autodiscovers):
``load_demo`` logged ``NotRegistered: crowd.tasks.crowd_practice_grant`` for every passed practice."""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def queued_names() -> set[str]:
    pattern = re.compile(r'queue_after_commit\(\s*"([a-z_.]+)"')
    return {name for folder in ("studies", "crowd", "metrics") for path in (ROOT / folder).rglob("*.py")
            for name in pattern.findall(path.read_text())}


def test_every_task_queued_by_name_is_registered_in_a_fresh_process():
    names = queued_names()
    assert "crowd.tasks.crowd_practice_grant" in names and len(names) >= 3
    code = ("import django, json, sys; django.setup(); from celery import current_app; "
            "print(json.dumps(sorted(n for n in sys.argv[1:] if n not in current_app.tasks)))")
    result = subprocess.run([sys.executable, "-c", code, *sorted(names)], cwd=ROOT, capture_output=True, text=True,
                            env={**__import__("os").environ, "DJANGO_SETTINGS_MODULE": "config.settings.test"},
                            timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "[]"
