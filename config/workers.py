"""Who serves which Celery queue: one definition for `make demo` (``demo_serve``), the compose file, and the
integration tests (``tests/integration/conftest.py``), so all of them run the workers the same way
(docs/architecture.md, "Background jobs").

- ``main``: ``default``, ``periodic`` and ``imports`` on three processes: the beat's short tasks (closing due
  studies, crowd sync, finding dead jobs) never wait behind more than two imports;
- ``calls``: ``calls``, the work that waits on outside endpoints (LLM judges, self-chats, crowd platforms),
  on 8 threads: a slow endpoint holds a thread, not the worker, and a researcher runs at most
  ``settings.JOB_CALLS_PER_OWNER`` of these at once, so others' runs always find a free thread;
- ``gpu``: training and learned-metric scoring, one at a time (a GPU's memory holds one model).

The beat (``beat_argv``, ``python -m config.workers beat``) runs as a process of its own beside them: it
sends the periodic tasks (``CELERY_BEAT_SCHEDULE``), the recover tasks that find jobs whose worker died among
them.

``python -m config.workers KIND [celery options]`` runs that worker or the beat (the compose file's
commands); ``worker_argv`` gives the command line."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Worker:
    queues: tuple[str, ...]
    pool: str
    concurrency: int


WORKERS: dict[str, Worker] = {
    "main": Worker(queues=("default", "periodic", "imports"), pool="prefork", concurrency=3),
    "calls": Worker(queues=("calls",), pool="threads", concurrency=8),
    "gpu": Worker(queues=("gpu",), pool="prefork", concurrency=1),
}


def worker_argv(kind: str, *extra: str, python: str = sys.executable) -> list[str]:
    """The command line of a ``kind`` worker (``WORKERS``), with ``extra`` celery options appended."""
    worker = WORKERS[kind]
    return [python, "-m", "celery", "-A", "config", "worker", "-Q", ",".join(worker.queues), f"--pool={worker.pool}",
            f"--concurrency={worker.concurrency}", "-O", "fair", "--loglevel=INFO", *extra]


def beat_argv(*extra: str, python: str = sys.executable) -> list[str]:
    """The beat's command line; its schedule file lives in the var folder (``CONCORD_VAR_DIR``)."""
    from config.env import VAR_DIR

    return [python, "-m", "celery", "-A", "config", "beat", "--loglevel=INFO",
            "--schedule", str(VAR_DIR / "celerybeat-schedule"), *extra]


def main(argv: list[str]) -> None:
    if not argv or argv[0] not in (*WORKERS, "beat"):
        raise SystemExit(f"usage: python -m config.workers {{{','.join(WORKERS)},beat}} [celery options]")
    command = beat_argv(*argv[1:]) if argv[0] == "beat" else worker_argv(argv[0], *argv[1:])
    os.execv(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
