"""Run the same work in threads released together (a ``threading.Barrier``), as parallel requests
would, each thread on its own database connection."""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from django.db import connections


def at_once(arguments: Iterable[Any], work: Callable[[Any], Any]) -> list[Any]:
    """``work(argument)`` in one thread per argument, all started at the same moment; the results in
    finishing order, an exception standing in for the result of a call that raised one."""
    arguments = list(arguments)
    barrier = threading.Barrier(len(arguments))
    outcomes: list[Any] = []

    def run(argument):
        try:
            barrier.wait()
            outcomes.append(work(argument))
        except Exception as error:  # noqa: BLE001 - the caller's assertions judge every outcome
            outcomes.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(argument,)) for argument in arguments]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return outcomes
