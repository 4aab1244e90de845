"""Integration tests run against real PostgreSQL and Redis (set DATABASE_URL and CELERY_BROKER_URL;
.ci/run does where the services answer). Without them every test here is skipped with the reason."""
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
NEEDS = []
if not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
    NEEDS.append("DATABASE_URL=postgres://...")
if not os.environ.get("CELERY_BROKER_URL", "").startswith("redis://"):
    NEEDS.append("CELERY_BROKER_URL=redis://...")


def pytest_collection_modifyitems(config, items):
    if not NEEDS:
        return
    skip = pytest.mark.skip(reason=f"integration tests need {' and '.join(NEEDS)}")
    for item in items:
        if "integration" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def start_worker(transactional_db, tmp_path):
    """Start real `celery worker` processes on the test database (the one pytest-django created)
    and the real broker; stopped (killed if need be) after the test. ``kind`` (main, calls, gpu) runs the
    worker exactly as ``config.workers`` defines it for the demo and the compose file; without it, one
    solo process on ``queues`` (by default every queue those workers serve)."""
    settings_dict = connection.settings_dict
    database_url = (f"postgres://{settings_dict['USER']}@{settings_dict['HOST']}:{settings_dict['PORT']}/"
                    f"{settings_dict['NAME']}")
    processes = []

    from config.workers import WORKERS, worker_argv

    every_queue = ",".join(queue for worker in WORKERS.values() for queue in worker.queues)

    def start(name: str, queues: str = every_queue, kind: str = "", **extra_env) -> subprocess.Popen:
        env = {**os.environ, "DATABASE_URL": database_url, "DJANGO_SETTINGS_MODULE": "config.settings.test",
               "CONCORD_VAR_DIR": str(tmp_path), **extra_env}
        log = (tmp_path / f"{name}.log").open("w")
        options = ["-n", f"{name}-{os.getpid()}@%h", "--without-gossip", "--without-mingle"]
        command = worker_argv(kind, *options) if kind else [
            sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", queues, "--pool=solo", "--concurrency=1",
            "--loglevel=INFO", *options]
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        process.log_path = tmp_path / f"{name}.log"
        processes.append((process, log))
        return process

    yield start
    for process, log in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        log.close()
