"""Bot calls in the background of a web process, so that a slow bot holds no web worker.

A rater's turn stores the message and returns at once; the bot call and the storing of its reply run
in this process's pool of call threads (``CHAT_CALL_THREADS``, each blocked only on the bot's socket),
and the page follows the chat's state until the reply is there. A web worker therefore spends a few
milliseconds per turn whatever the bot's latency, instead of the bot's seconds.

Every call is named by a *caller*: ``host:pid:start:nonce``, the process that runs it (with the kernel's
start time of that pid, so a recycled pid is not mistaken for it) and one nonce per call. The chat keeps
the caller of its current call (``Chat.caller``): only that call may store a reply, and when the
process named is gone from this host (a killed or restarted worker), the next look at the chat resumes
the call at once instead of waiting for the reply deadline to pass (``caller_alive``).

Several web nodes (machines, or containers with their own pid namespaces): a process that names calls
holds a lease in the shared cache (``CACHE_URL``), ``chat-caller:host:pid:start``, set when it names a
call and renewed by a thread every third of ``CHAT_CALLER_LEASE_SECONDS``. A caller on another node is
alive while its lease is there; once a killed node's leases end, the next look at the chat on any node
resumes its calls. With a per-process cache (the default) another node's callers cannot be told.

Stopping a worker gracefully lets the calls it runs finish (the pool's threads are joined at exit, within
the reply deadline); a killed one is resumed as above. With ``CHAT_BACKGROUND_REPLIES`` off (the unit
tests, the demo) the call runs in the request, as before.
"""
from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path

from django.conf import settings
from django.db import connections

logger = logging.getLogger(__name__)
HOST = socket.gethostname()[:40]
_lock = threading.Lock()
_pool: tuple[int, ThreadPoolExecutor] | None = None
_running: set[Future] = set()
_lease: dict = {"pid": None, "renewed": 0.0}


def node() -> str:
    """This node's name in the callers (``CHAT_NODE_NAME``, else the host name)."""
    return (settings.CHAT_NODE_NAME or HOST)[:40]


def _cache_shared() -> bool:
    """Whether the cache is one that other nodes read too (not a per-process or per-host one)."""
    backend = str(settings.CACHES["default"]["BACKEND"]).lower()
    return not any(word in backend for word in ("locmem", "dummy", "filebased"))


def _lease_key(host: str, pid: str, started: str) -> str:
    return f"chat-caller:{host}:{pid}:{started}"


def _lease_renew() -> None:
    """Set this process's lease in the shared cache (for ``CHAT_CALLER_LEASE_SECONDS``)."""
    from django.core.cache import cache

    pid = os.getpid()
    cache.set(_lease_key(node(), str(pid), _started(pid) or ""), 1, timeout=settings.CHAT_CALLER_LEASE_SECONDS)
    _lease["renewed"] = time.monotonic()


def _lease_keeper() -> None:
    while True:
        time.sleep(settings.CHAT_CALLER_LEASE_SECONDS / 3)
        try:
            _lease_renew()
        except Exception:  # a cache that does not answer: others see the lease end and resume (one call twice)
            logger.warning("the chat caller lease could not be renewed", exc_info=True)


def _lease_hold() -> None:
    """Hold this process's lease from its first call on: set now, then renewed by a thread of its own
    (one per process, started after any fork)."""
    if not _cache_shared() or settings.CHAT_CALLER_LEASE_SECONDS <= 0:
        return
    pid = os.getpid()
    with _lock:
        fresh = _lease["pid"] != pid
        if fresh:
            _lease["pid"] = pid
            threading.Thread(target=_lease_keeper, name="chat-caller-lease", daemon=True).start()
    if fresh or time.monotonic() - _lease["renewed"] > settings.CHAT_CALLER_LEASE_SECONDS / 3:
        try:
            _lease_renew()
        except Exception:
            logger.warning("the chat caller lease could not be set", exc_info=True)


def _lease_held(host: str, pid: str, started: str) -> bool | None:
    if not _cache_shared() or settings.CHAT_CALLER_LEASE_SECONDS <= 0:
        return None
    from django.core.cache import cache

    try:
        return cache.get(_lease_key(host, pid, started)) is not None
    except Exception:  # the cache does not answer: leave it to the reply deadline
        return None


def _started(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (field 22 of /proc/<pid>/stat), "" where /proc is not there,
    or None when no such process lives."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        if not Path("/proc/self/stat").exists():
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return None
            except PermissionError:
                return ""
            return ""
        return None
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


def caller_new() -> str:
    """The name of a new call run by this process."""
    pid = os.getpid()
    _lease_hold()
    return f"{node()}:{pid}:{_started(pid) or ''}:{uuid.uuid4().hex[:12]}"


def caller_alive(caller: str) -> bool | None:
    """Whether the process that runs ``caller`` still lives: on this node from /proc, on another by its
    lease in the shared cache; None when it cannot be told (another node without a shared cache, an empty
    caller); then only the reply deadline says when the call is over."""
    host, _, rest = (caller or "").partition(":")
    pid, _, rest = rest.partition(":")
    started, _, _ = rest.partition(":")
    if not host or not pid.isdigit():
        return None
    if host != node():
        return _lease_held(host, pid, started)
    now = _started(int(pid))
    if now is None:
        return False
    return not (started and now and started != now)


def _executor() -> ThreadPoolExecutor:
    """This process's pool (made after a fork, never inherited from the parent)."""
    global _pool
    with _lock:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), ThreadPoolExecutor(max_workers=settings.CHAT_CALL_THREADS,
                                                     thread_name_prefix="chat-call"))
        return _pool[1]


def _run(job: Callable[[], object]) -> None:
    try:
        job()
    except Exception:  # the job fails its own chats (services._answer); never the pool's to handle
        logger.exception("a background chat call failed")
    finally:
        connections.close_all()  # each thread's own connection: none left open between calls


def background(job: Callable[[], object]) -> Future:
    """Run ``job`` (a bot call and the storing of its reply) in this process's call threads."""
    future = _executor().submit(_run, job)
    with _lock:
        _running.add(future)
    future.add_done_callback(lambda done: _running.discard(done))
    return future


def background_wait(timeout: float) -> bool:
    """Wait until this process's calls are done (tests; a worker's graceful stop); whether they are."""
    with _lock:
        pending = set(_running)
    return not wait(pending, timeout=timeout).not_done
