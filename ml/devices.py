"""Where learned metrics run: the device asked for, else CUDA when present, else the CPU; and how many
threads torch uses there.

CPU threads (``cpu_threads``): ``CONCORD_TORCH_THREADS`` when set; else the CPUs this process may run on
(its affinity mask, not the machine's count: a container's or ``taskset``'s limit), less those other
processes keep busy (the 1-minute load average, read before this process starts encoding), and never more
than torch's own default (one per physical core) nor fewer than one. OpenMP threads that wait for each
other on cores other processes hold lose more than they gain: measured on a 2-CPU machine under a load of
10, the packaged MiniLM embedded 500 texts at 24-36 texts/s on one thread against 11-18 on two
(benchmarks/cold_scoring.py). The number of threads changes the order of float sums only (scores agree to
1e-6), never what is computed."""
from __future__ import annotations

import os

import torch

THREADS_ENVIRONMENT = "CONCORD_TORCH_THREADS"
_chosen: list[int] = []


def pick_device(wanted: str | None = None) -> torch.device:
    return torch.device(wanted or ("cuda" if torch.cuda.is_available() else "cpu"))


def cpu_threads(*, load: float | None = None, default: int | None = None) -> int:
    """How many threads torch should use on the CPU now (see the module's docstring). ``load``: the 1-minute
    load average (read from the system when None); ``default``: torch's own count (read when None)."""
    given = os.environ.get(THREADS_ENVIRONMENT, "").strip()
    if given:
        if not given.isdigit() or int(given) < 1:
            raise ValueError(f"{THREADS_ENVIRONMENT} must be a whole number of threads (1 or more), got {given!r}")
        return int(given)
    available = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    busy = load if load is not None else (os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0)
    ceiling = default or torch.get_num_threads()
    return max(1, min(available - int(round(busy)), available, ceiling))


def use_cpu_threads() -> int:
    """Set torch's CPU threads to ``cpu_threads()`` once per process (later calls keep the first choice, so
    the process's own load never lowers it) and return the number."""
    if not _chosen:
        _chosen.append(cpu_threads())
        torch.set_num_threads(_chosen[0])
    return _chosen[0]
