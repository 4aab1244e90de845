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

The call threads never touch the database: what a call stores (its reply or its failure) is handed to
this process's one *writer* thread (``stored``), which keeps its database connection between calls as a
request thread does (``CONN_MAX_AGE``), closing it once idle for ``WRITER_IDLE_SECONDS``. A connection per
call would cost every message a TCP handshake, a SCRAM exchange and a new PostgreSQL backend, more than
the rest of the message; and a connection per call thread would hold up to ``CHAT_CALL_THREADS`` of them
per worker. Storing is a few milliseconds, so one writer keeps up with many calls.

Stopping a worker gracefully lets the calls it runs finish (the pool's threads are joined at exit, within
the reply deadline, and the writer runs until they are); a killed one is resumed as above. With
``CHAT_BACKGROUND_REPLIES`` off (the unit tests, the demo) the call runs in the request, as before.
"""
from __future__ import annotations

import logging
import os
import queue
import socket
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, TypeVar

from django.conf import settings
from django.db import connections

logger = logging.getLogger(__name__)
HOST = socket.gethostname()[:40]
_lock = threading.Lock()
_pool: tuple[int, ThreadPoolExecutor] | None = None
_running: set[Future] = set()
WRITER_IDLE_SECONDS = 10.0
T = TypeVar("T")
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


_me: tuple[int, str] | None = None


def caller_new() -> str:
    """The name of a new call run by this process (its start time read once per process)."""
    global _me
    pid = os.getpid()
    if _me is None or _me[0] != pid:  # a forked worker reads its own
        _me = (pid, _started(pid) or "")
    _lease_hold()
    return f"{node()}:{pid}:{_me[1]}:{uuid.uuid4().hex[:12]}"


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


class _Writer:
    """The thread that runs the background calls' database steps one after the other, on one
    connection kept between them (see the module's docstring)."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.steps: queue.SimpleQueue[tuple[Callable[[], Any] | None, Future]] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._loop, name="chat-writer", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while True:
            try:
                step, future = self.steps.get(timeout=WRITER_IDLE_SECONDS)
            except queue.Empty:
                connections.close_all()  # idle: no connection held for nothing
                continue
            if not future.set_running_or_notify_cancel():
                continue
            if step is None:  # background_wait: done for now
                connections.close_all()
                future.set_result(None)
                continue
            try:
                future.set_result(step())
            except BaseException as error:  # noqa: BLE001 - the caller's to handle; the writer goes on
                future.set_exception(error)
            finally:
                for connection in connections.all(initialized_only=True):
                    connection.close_if_unusable_or_obsolete()  # as after a request: broken or too old

    def submit(self, step: Callable[[], Any] | None) -> Future:
        future: Future = Future()
        self.steps.put((step, future))
        return future


_writer: _Writer | None = None


def _writer_get() -> _Writer:
    """This process's writer (started after a fork, never inherited from the parent)."""
    global _writer
    with _lock:
        if _writer is None or _writer.pid != os.getpid() or not _writer.thread.is_alive():
            _writer = _Writer()
        return _writer


def stored(step: Callable[[], T]) -> T:
    """Run ``step`` (a background call's database work: storing its reply or its failure) in this
    process's writer thread and return what it returns (or raise what it raised)."""
    writer = _writer_get()
    if threading.current_thread() is writer.thread:
        return step()
    return writer.submit(step).result()


def background_wait(timeout: float) -> bool:
    """Wait until this process's calls are done (tests; a worker's graceful stop); whether they are.
    The writer then closes its connection (a test database can be dropped)."""
    end = time.monotonic() + timeout
    with _lock:
        pending = set(_running)
    if wait(pending, timeout=timeout).not_done:
        return False
    with _lock:
        writer = _writer if _writer is not None and _writer.pid == os.getpid() else None
    if writer is not None and writer.thread.is_alive():
        wait([writer.submit(None)], timeout=max(0.0, end - time.monotonic()))
    return True
