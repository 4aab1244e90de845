"""A Celery task for benchmarks/chat_turns.py only (its worker loads it with ``--include``): it writes the
time it ran into a file, so the benchmark can see when a queued task was picked up without a result
backend or a database."""
from __future__ import annotations

import time
from pathlib import Path

from celery import shared_task


@shared_task(name="benchmarks.chat_probe.mark")
def mark(path: str) -> None:
    Path(path).write_text(repr(time.time()))
