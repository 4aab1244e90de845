"""Shared set-up for the benchmarks: Django on a throw-away database (a temporary SQLite file under
its own var folder, or DATABASE_URL when set), migrated."""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def django_on_throwaway_database() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("CONCORD_VAR_DIR", tempfile.mkdtemp(prefix="concord-bench-"))
    # reports computed in this process (what the benchmarks time), unless one asks for the pool
    os.environ.setdefault("CONCORD_COMPUTE_POOL_WORKERS", "0")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    """The median wall time of ``repeats`` calls of ``fn``."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)
