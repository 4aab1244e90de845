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

Stopping a worker gracefully lets the calls it runs finish (the pool's threads are joined at exit, within
the reply deadline); a killed one is resumed as above. With ``CHAT_BACKGROUND_REPLIES`` off (the unit
tests, the demo) the call runs in the request, as before.
"""
from __future__ import annotations

import logging
import os
import socket
import threading
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
    return f"{HOST}:{pid}:{_me[1]}:{uuid.uuid4().hex[:12]}"


def caller_alive(caller: str) -> bool | None:
    """Whether the process that runs ``caller`` still lives: None when it cannot be told (another host,
    an empty caller); then only the reply deadline says when the call is over."""
    host, _, rest = (caller or "").partition(":")
    pid, _, rest = rest.partition(":")
    started, _, _ = rest.partition(":")
    if not host or host != HOST or not pid.isdigit():
        return None
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
