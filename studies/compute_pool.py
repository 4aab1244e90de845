"""Reports, figures and exports computed outside the web process: a small pool of worker processes holds the
statistics stack (pandas, SciPy, statsmodels, matplotlib), the web process only the answers.

``offloaded(view)`` wraps a researcher page or API view whose answer needs that stack. In the web process the
wrapper sends the request as plain data (path, query, headers, the user's primary key, the CSRF secret,
the language) to ``run_view`` in a pool process, which resolves the path to the same view and runs it there,
with the per-version caches of the selectors in front of the statistics, and answers status, headers and
body bytes. Nothing pandas or NumPy crosses back, so unpickling the answer imports nothing heavy.

- ``COMPUTE_POOL_WORKERS`` processes at most (0: every view runs in the request, as the unit tests do,
  whose rows another process cannot see); started on the first such request, spawned (no copy of the
  web process's threads and connections), each running ``django.setup()`` once and replaced after
  ``COMPUTE_POOL_TASKS_PER_CHILD`` answers (whatever a report left behind goes with it).
- A page waits ``COMPUTE_POOL_DEADLINE_SECONDS`` for its answer; past that it says it is computing and
  reloads itself (the API answers 202 with ``Retry-After``). The computation goes on: the reload (the
  same user, path and query) picks up the same pending answer instead of starting another.
- An exception in the view (404, a bad option, a bug) is raised again in the web process, so the page
  or problem response is the one the view gives when it runs in the request. A pool process that dies
  mid-answer (killed, out of memory) breaks the pool: it is replaced and the page says the computation
  failed and can be retried (503), never waits for ever.

Only GET and HEAD are sent: anything that writes runs in the request."""
from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import multiprocessing
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from functools import wraps
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.middleware.csrf import get_token
from django.utils import translation

logger = logging.getLogger(__name__)

IN_POOL = False  # true in a pool process: an offloaded view runs there in place
PENDING_LIMIT = 64  # answers kept for a reload (oldest dropped first)
RETRY_AFTER_SECONDS = 3
# what run_view hands to the view besides the path: the request headers, what the URL and the host are read from
META_KEYS = ("SERVER_NAME", "SERVER_PORT", "REMOTE_ADDR", "SCRIPT_NAME", "QUERY_STRING")

_lock = threading.RLock()
_pool: ProcessPoolExecutor | None = None
_pending: OrderedDict[tuple, tuple[ProcessPoolExecutor, Future]] = OrderedDict()


class Computing(Exception):
    """The answer is not ready within the deadline; it is still being computed."""


class PoolFailed(Exception):
    """A pool process died before answering (the pool has been replaced)."""


def workers() -> int:
    return int(getattr(settings, "COMPUTE_POOL_WORKERS", 0))


def inline() -> bool:
    """Whether offloaded work runs in the calling process (no pool configured, or already in the pool)."""
    return IN_POOL or workers() <= 0


def _initialise(settings_module: str, overrides: dict[str, Any]) -> None:
    """A pool process's start: the web process's settings (the test database's name, the cache), then Django."""
    global IN_POOL
    IN_POOL = True
    os.environ["DJANGO_SETTINGS_MODULE"] = settings_module
    from django.conf import settings as pool_settings

    for name, value in overrides.items():
        setattr(pool_settings, name, value)
    import django

    django.setup()


def _executor() -> ProcessPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            overrides = {name: getattr(settings, name) for name in ("DATABASES", "CACHES")}
            _pool = ProcessPoolExecutor(
                max_workers=workers(), mp_context=multiprocessing.get_context("spawn"),
                max_tasks_per_child=max(1, int(getattr(settings, "COMPUTE_POOL_TASKS_PER_CHILD", 100))),
                initializer=_initialise, initargs=(os.environ.get("DJANGO_SETTINGS_MODULE", ""), overrides))
        return _pool


def _replace(broken: ProcessPoolExecutor) -> None:
    """Drop a broken pool (the next submit starts a new one) and every answer it still owed."""
    global _pool
    with _lock:
        if _pool is broken:
            _pool = None
        for key in [k for k, (pool, _) in _pending.items() if pool is broken]:
            del _pending[key]
    broken.shutdown(wait=False, cancel_futures=True)


def _discard(future: Future) -> None:
    """An answer no one will collect: its spooled file, if any, removed."""
    if future.done() and not future.cancelled() and future.exception() is None:
        result = future.result()
        if isinstance(result, tuple) and len(result) == 4 and isinstance(result[2], str):
            with contextlib.suppress(OSError):
                os.unlink(result[2])


def shutdown() -> None:
    """Stop the pool (tests and the benchmark; a web process's pool ends with it)."""
    global _pool
    with _lock:
        pool, _pool = _pool, None
        for _, future in _pending.values():
            _discard(future)
        _pending.clear()
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)


def pool_pids() -> list[int]:
    """The pool processes' ids (the benchmark reads their memory)."""
    pool = _pool
    return sorted(getattr(pool, "_processes", None) or {}) if pool is not None else []


def call(path: str, *args: Any) -> Any:
    """``module.function`` called with ``args`` in a pool process (inline when there is none); its result
    must be plain data (dicts, lists, str, bytes, Python numbers)."""
    return _run(path, args) if inline() else _wait((path, args), path, args)


def _run(path: str, args: tuple) -> Any:
    import importlib

    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)(*args)


def _wait(key: tuple, path: str, args: tuple) -> Any:
    """The answer of ``path(*args)``: one already pending under ``key`` or a new one, waited for at most
    the deadline. Computing past it; PoolFailed when a pool process died."""
    with _lock:  # one computation per key, however many requests ask at once
        entry = _pending.get(key)
        if entry is None:
            pool = _executor()
            try:
                entry = (pool, pool.submit(_run, path, args))
            except BrokenProcessPool:  # broke between answers: a new one, once
                _replace(pool)
                pool = _executor()
                entry = (pool, pool.submit(_run, path, args))
            _pending[key] = entry
            while len(_pending) > PENDING_LIMIT:
                _discard(_pending.popitem(last=False)[1][1])
    pool, future = entry
    try:
        result = future.result(timeout=float(getattr(settings, "COMPUTE_POOL_DEADLINE_SECONDS", 20)))
    except FutureTimeout:
        raise Computing(path) from None
    except BrokenProcessPool as error:
        logger.error("a compute pool process died answering %s", path)
        _replace(pool)
        raise PoolFailed(path) from error
    finally:
        if future.done():
            with _lock:
                if _pending.get(key) is entry:
                    del _pending[key]
    return result


def _snapshot(request: HttpRequest, api: bool) -> dict[str, Any]:
    """What a pool process needs to answer this request as the web process would."""
    meta = {k: v for k, v in request.META.items()
            if isinstance(v, str) and (k.startswith("HTTP_") or k in META_KEYS)}
    meta.pop("HTTP_COOKIE", None)  # the user and CSRF secret go by name; the session stays here
    user = getattr(request, "user", None)
    return {"method": request.method, "path": request.path, "path_info": request.path_info, "meta": meta,
            "secure": request.is_secure(), "user": user.pk if user is not None and user.is_authenticated else None,
            # the browser's CSRF secret, for a form on the page; a page whose visitor has none yet gets one
            # here, set by the web process's middleware (an API client or a file needs none)
            "csrf": request.META.get("CSRF_COOKIE") or (None if api else get_token(request) and
                                                        request.META.get("CSRF_COOKIE")),
            "language": translation.get_language(), "messages": _messages_waiting(request, api)}


def _messages_waiting(request: HttpRequest, api: bool) -> list:
    """The messages waiting for the next page (a decision's "done"), for the pool's page to show; they stay
    queued here unless that page shows them (``_ShownMessages.used``)."""
    from django.contrib.messages.storage.base import Message

    storage = getattr(request, "_messages", None)
    if storage is None or api:
        return []
    waiting = [Message(m.level, str(m.message), m.extra_tags) for m in storage]
    storage.used = False  # read, not shown
    return waiting


class _ShownMessages(list):
    """In a pool process: the web process's waiting messages; ``used`` once a template iterated them."""

    used = False

    def __iter__(self) -> Iterator:
        self.used = True
        return super().__iter__()


def run_view(snapshot: dict[str, Any]) -> tuple[int, list[tuple[str, str]], bytes | str, bool]:
    """In a pool process: the request rebuilt, resolved to its view and answered; (status, headers, body or
    the path of the file a streamed body was spooled to, whether the page showed the waiting messages)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import AnonymousUser
    from django.core.handlers.wsgi import WSGIRequest
    from django.db import close_old_connections
    from django.urls import resolve

    close_old_connections()
    environ = {**snapshot["meta"], "REQUEST_METHOD": snapshot["method"], "PATH_INFO": snapshot["path_info"],
               "wsgi.input": io.BytesIO(b""), "wsgi.url_scheme": "https" if snapshot["secure"] else "http"}
    environ.setdefault("SCRIPT_NAME", snapshot["path"][: len(snapshot["path"]) - len(snapshot["path_info"])])
    request = WSGIRequest(environ)
    pk = snapshot["user"]
    request.user = get_user_model().objects.filter(pk=pk).first() or AnonymousUser() if pk else AnonymousUser()
    # only GET comes here, and the web process checked what it must
    request._dont_enforce_csrf_checks = True  # type: ignore[attr-defined]
    if snapshot["csrf"]:
        request.META["CSRF_COOKIE"] = snapshot["csrf"]  # a form on the page carries the web process's token
    request._messages = shown = _ShownMessages(snapshot["messages"])  # type: ignore[attr-defined]
    match = resolve(request.path_info)
    request.resolver_match = match
    with translation.override(snapshot["language"]):
        response = match.func(request, *match.args, **match.kwargs)
        if callable(getattr(response, "render", None)) and not getattr(response, "is_rendered", True):
            response = response.render()
        body: bytes | str = _spooled(response) if response.streaming else bytes(response.content)
    close_old_connections()
    return response.status_code, list(response.items()), body, shown.used


def _spooled(response: Any) -> str:
    """A streamed answer (a ratings export of any size) written to a temporary file, chunk by chunk; the
    web process streams the file and removes it, so neither process holds the whole file in memory."""
    import tempfile

    try:
        with tempfile.NamedTemporaryFile(prefix="concord-pool-", delete=False) as out:
            for chunk in response.streaming_content:
                out.write(chunk)
    finally:
        response.close()
    return out.name


def _answer(status: int, body: bytes | str) -> HttpResponseBase:
    """The web process's response to a pool answer: the body, or the spooled file streamed and removed."""
    if isinstance(body, bytes):
        return HttpResponse(body, status=status)
    from django.http import FileResponse

    handle = open(body, "rb")  # noqa: SIM115 - closed by the response once written out
    os.unlink(body)  # gone from the disk now; the open handle still reads it
    return FileResponse(handle, status=status)


def _computing(request: HttpRequest, api: bool, failed: bool) -> HttpResponse:
    response: HttpResponse
    if api:
        title = "The computation failed; retry" if failed else "Computing; retry in a moment"
        response = JsonResponse({"type": "urn:concord:problem:" + ("pool_failed" if failed else "computing"),
                                 "title": title, "status": 503 if failed else 202,
                                 "detail": "" if failed else "ask again after Retry-After seconds for the answer",
                                 "errors": []}, status=503 if failed else 202,
                                content_type="application/problem+json")
    else:
        from django.shortcuts import render

        response = render(request, "computing.html", {"failed": failed, "path": request.get_full_path()},
                          status=503 if failed else 202)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    response["Cache-Control"] = "no-store"
    return response


def offloaded(view: Callable | None = None, *, api: bool = False) -> Callable:
    """Run ``view`` in a pool process (see the module's docstring); ``api``: answer 202/503 as problem
    details instead of the computing page."""
    def wrap(view: Callable) -> Callable:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            if inline() or request.method not in ("GET", "HEAD"):
                return view(request, *args, **kwargs)
            snapshot = _snapshot(request, api)
            # whose answer it is: the session's user, or an API token's (the pool process authenticates it)
            who = (snapshot["user"], hashlib.sha256(request.META.get("HTTP_AUTHORIZATION", "").encode()).hexdigest())
            key = ("view", who, request.get_full_path(), request.META.get("HTTP_ACCEPT", ""), snapshot["language"])
            started = time.perf_counter()
            try:
                status, headers, body, shown = _wait(key, f"{__name__}.run_view", (snapshot,))
            except Computing:
                return _computing(request, api, failed=False)
            except PoolFailed:
                return _computing(request, api, failed=True)
            logger.debug("%s answered by the compute pool in %.2f s", request.path, time.perf_counter() - started)
            if shown:  # the page showed them: done with, as when the view runs here
                list(getattr(request, "_messages", ()))
            response = _answer(status, body)
            for name, value in headers:
                response[name] = value
            return response
        wrapper.offloaded = True  # type: ignore[attr-defined]
        return wrapper
    return wrap(view) if view is not None else wrap


class Offloaded:
    """First base of an API view class whose GET needs the statistics stack: ``as_view`` wraps the view in
    ``offloaded(api=True)``."""

    @classmethod
    def as_view(cls, **initkwargs: Any) -> Callable:
        return offloaded(super().as_view(**initkwargs), api=True)  # type: ignore[misc]
