"""Walkthrough, Polish: stopping ``make demo`` (manage.py demo_serve) with SIGTERM stops its Celery
worker too (it used to end at once and leave the worker running)."""
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by its parent) counts as stopped
    status = Path(f"/proc/{pid}/stat")
    return not (status.exists() and status.read_text().split(")")[-1].split()[0] == "Z")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigterm_stops_the_demo_and_its_worker(tmp_path):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.local", "CONCORD_VAR_DIR": str(tmp_path),
           "PYTHONUNBUFFERED": "1"}
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
    demo = subprocess.Popen([sys.executable, "manage.py", "demo_serve", "--no-bot", "--port", str(_free_port())],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    worker, others = None, {}
    try:
        deadline = time.monotonic() + 60
        while worker is None and time.monotonic() < deadline:
            line = demo.stdout.readline()
            if match := re.search(r"worker pid (\d+)", line):
                worker = int(match.group(1))
                others = {kind: int(pid) for kind, pid in re.findall(r"(\w+) pid (\d+)", line.split(";", 1)[-1])}
        assert worker is not None and _alive(worker)
        assert set(others) == {"calls", "gpu", "beat"}  # config.workers' kinds and the beat
        time.sleep(3)  # runserver up, the worker booting
        demo.send_signal(signal.SIGTERM)
        demo.wait(timeout=30)
        deadline = time.monotonic() + 25
        while any(_alive(pid) for pid in (worker, *others.values())) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_alive(pid) for pid in (worker, *others.values()))
    finally:
        if demo.poll() is None:
            demo.kill()
        for pid in (worker, *others.values()):
            if pid is not None and _alive(pid):
                os.kill(pid, signal.SIGKILL)
