"""One judgment over an OpenAI-compatible chat-completions endpoint, and many within limits.

- ``complete``: POST ``{"model", "messages", "temperature": 0, "max_tokens", ["logprobs", "top_logprobs"]}``;
  the answer's ``choices[0].message.content``, its ``logprobs`` and ``usage`` tokens. One deadline over
  the whole call on a monotonic clock (connect, every read, every retry and pause), and each attempt ends
  at ``endpoint.timeout`` on the same clock (a server dripping a byte every half second cannot hold a
  prompt for the whole call's deadline); ``stop`` (a run cancelled) is asked before every attempt. Retried on 429 and
  5xx (a ``Retry-After`` in seconds is honoured, capped at ``MAX_PAUSE``), on a connection that fails or
  times out, with exponential backoff otherwise; a refused address, another 4xx or an answer that is not
  the protocol's is not retried.
- ``complete_many``: several judgments at once on ``endpoint.concurrency`` threads, started no faster
  than ``endpoint.requests_per_minute``; each result is a Completion or the JudgeError it ended with.

The POST is ``studies.chat.http_post.post_json``, shared with the chat client: connections go to the address
``studies.chat.addresses.resolve`` checked (the SSRF guard), a watchdog shuts the socket at the deadline
(a server that drips bytes cannot outlive it) and the body is read up to ``MAX_BODY_BYTES``; a judge
endpoint that redirects is refused, and its key goes nowhere else."""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from studies.chat.addresses import AddressRefused, Network, Resolver
from studies.chat.http_post import Deadline, PostError, post_json

COMPLETIONS_PATH = "/chat/completions"
MAX_BODY_BYTES = 1024 * 1024
BACKOFF_SECONDS = 0.5
MAX_PAUSE = 30.0
USER_AGENT = "Concord-judge/1"


@dataclass(frozen=True)
class JudgeEndpoint:
    """Where the judge model answers; ``key`` is the plain key, held only for the call."""

    url: str
    model: str
    key: str = field(default="", repr=False)
    timeout: float = 30.0  # per attempt, on the wall clock: connecting, every read, the whole body
    retries: int = 4
    concurrency: int = 4
    requests_per_minute: int = 0  # 0: no limit

    @property
    def request_url(self) -> str:
        base = self.url.split("?")[0].rstrip("/")
        return self.url if base.endswith(COMPLETIONS_PATH) else base + COMPLETIONS_PATH


@dataclass(frozen=True)
class Completion:
    text: str
    logprobs: Any
    prompt_tokens: int
    completion_tokens: int
    attempts: int
    seconds: float


class JudgeError(Exception):
    """No usable answer. ``kind``: timeout, connection, status, reply, address or stopped; ``reason``: the
    run log's word for it (the kind, or for a reply ``not_json``, ``too_deep``, ``unstorable``); ``str()``
    is the detail for the researcher (never the key)."""

    def __init__(self, kind: str, detail: str, *, status: int | None = None, retry_after: float | None = None,
                 reason: str = ""):
        super().__init__(detail)
        self.kind, self.status, self.retry_after = kind, status, retry_after
        self.reason = reason or kind
        self.attempts, self.seconds = 1, 0.0

    @property
    def retryable(self) -> bool:
        return self.kind in ("timeout", "connection") or (
            self.kind == "status" and (self.status == 429 or (self.status or 0) >= 500))


def request_body(endpoint: JudgeEndpoint, messages: Sequence[dict[str, str]], *, temperature: float = 0.0,
                 max_tokens: int = 256, logprobs: bool = False, top_logprobs: int = 20) -> dict[str, Any]:
    body: dict[str, Any] = {"model": endpoint.model, "messages": list(messages), "temperature": temperature,
                            "max_tokens": max_tokens}
    if logprobs:
        body.update(logprobs=True, top_logprobs=top_logprobs)
    return body


def _retry_after(headers) -> float | None:
    value = headers.get("Retry-After", "")
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return None
    return min(max(seconds, 0.0), MAX_PAUSE)


def _post(endpoint: JudgeEndpoint, body: bytes, deadline: Deadline, allowed: Sequence[Network],
          resolver: Resolver | None) -> dict:
    """One POST (``studies.chat.http_post.post_json``, which the chat client shares: the checked address,
    the watchdog at the deadline, the bounded read); the parsed answer or JudgeError."""
    try:
        posted = post_json(endpoint.request_url, body, deadline=deadline, timeout=endpoint.timeout,
                           max_bytes=MAX_BODY_BYTES, user_agent=USER_AGENT, allowed=allowed, resolver=resolver,
                           headers={"Authorization": f"Bearer {endpoint.key}"} if endpoint.key else {})
    except AddressRefused as error:
        raise JudgeError("address", str(error)) from None
    except PostError as error:
        raise JudgeError(error.kind, str(error)) from None
    if 300 <= posted.status < 400:
        raise JudgeError("status", f"HTTP {posted.status}: a judge endpoint may not redirect", status=posted.status)
    if posted.status != 200:
        raise JudgeError("status", f"HTTP {posted.status}: {posted.body[:200].decode(errors='replace')}",
                         status=posted.status, retry_after=_retry_after(posted.headers))
    try:
        payload = json.loads(posted.body)
    except (ValueError, UnicodeDecodeError):
        raise JudgeError("reply", f"the answer is not JSON: {posted.body[:80].decode(errors='replace')!r}",
                         reason="not_json") from None
    except RecursionError:  # [[[[... 100,000 deep: the parser's recursion limit, not a crash of the run
        raise JudgeError("reply", "the answer is JSON nested too deeply to read", reason="too_deep") from None
    if not isinstance(payload, dict):
        raise JudgeError("reply", "the answer is not a JSON object")
    return payload


def completion_read(payload: dict, *, attempts: int, seconds: float) -> Completion:
    try:
        choice = payload["choices"][0]
        text = choice["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise JudgeError("reply", "the answer has no choices[0].message.content") from None
    if text is None:  # a refusal by a content filter comes as null content
        text = ""
    if not isinstance(text, str):
        raise JudgeError("reply", f"the content is a {type(text).__name__}, not text")
    logprobs = choice.get("logprobs") if isinstance(choice, dict) else None
    if problem := unstorable(text, logprobs):
        raise JudgeError("reply", f"the answer {problem}: it cannot be stored", reason="unstorable")
    usage: dict = payload["usage"] if isinstance(payload.get("usage"), dict) else {}

    def tokens(key: str) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) and value >= 0 else 0

    return Completion(text=text, logprobs=logprobs,
                      prompt_tokens=tokens("prompt_tokens"), completion_tokens=tokens("completion_tokens"),
                      attempts=attempts, seconds=seconds)


def unstorable(text: str, logprobs: Any) -> str | None:
    """Why the answer cannot be stored as it is (PostgreSQL text and JSON hold no lone surrogate and no NUL),
    or None. The text is checked character by character; the log-probabilities as their JSON."""
    for char in text:
        if "\ud800" <= char <= "\udfff":
            return "holds a lone surrogate"
        if char == "\x00":
            return "holds a NUL character"
    if logprobs is not None:
        try:
            dumped = json.dumps(logprobs, ensure_ascii=False, allow_nan=False)
            dumped.encode()
        except (ValueError, UnicodeEncodeError, RecursionError):
            return "has log-probabilities that are not storable JSON"
        if "\\u0000" in dumped or "\x00" in dumped:
            return "has log-probabilities holding a NUL character"
    return None


def complete(endpoint: JudgeEndpoint, messages: Sequence[dict[str, str]], *, temperature: float = 0.0,
             max_tokens: int = 256, logprobs: bool = False, deadline_seconds: float = 120.0,
             allowed: Sequence[Network] = (), resolver: Resolver | None = None,
             sleep: Callable[[float], None] = time.sleep, stop: Callable[[], bool] = lambda: False) -> Completion:
    """Ask the judge once, retrying passing failures while the deadline allows; JudgeError otherwise. Each
    attempt ends at ``endpoint.timeout`` (wall clock) or the whole call's deadline, whichever is first."""
    body = json.dumps(request_body(endpoint, messages, temperature=temperature, max_tokens=max_tokens,
                                   logprobs=logprobs)).encode()
    started = time.monotonic()
    deadline = Deadline(deadline_seconds)
    attempts = 0
    while True:
        attempts += 1
        if stop():
            raise JudgeError("stopped", "the run was stopped before this prompt was answered")
        try:
            attempt = Deadline(max(0.0, min(endpoint.timeout, deadline.left())))
            payload = _post(endpoint, body, attempt, allowed, resolver)
            return completion_read(payload, attempts=attempts, seconds=time.monotonic() - started)
        except JudgeError as error:
            error.attempts, error.seconds = attempts, time.monotonic() - started
            pause = error.retry_after if error.retry_after is not None else min(BACKOFF_SECONDS * 2 ** (attempts - 1), MAX_PAUSE)
            if not error.retryable or attempts > endpoint.retries or pause >= deadline.left() or stop():
                raise
            sleep(pause)


class RateLimit:
    """Starts at most ``per_minute`` requests a minute, evenly spaced (thread-safe); 0: no limit."""

    def __init__(self, per_minute: int, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        self.interval = 60.0 / per_minute if per_minute > 0 else 0.0
        self.clock, self.sleep, self.lock, self.next = clock, sleep, threading.Lock(), 0.0

    def wait(self) -> None:
        if not self.interval:
            return
        with self.lock:
            now = self.clock()
            start = max(now, self.next)
            self.next = start + self.interval
        if start > now:
            self.sleep(start - now)


def complete_many(endpoint: JudgeEndpoint, prompts: Sequence[Sequence[dict[str, str]]], *,
                  on_done: Callable[[int], None] | None = None, **options) -> list[Completion | JudgeError]:
    """Every prompt judged, ``endpoint.concurrency`` at a time within its rate limit; results in order.
    Once ``options["stop"]()`` is true, the prompts not yet sent end as JudgeError "stopped" at once."""
    limit = RateLimit(endpoint.requests_per_minute)
    done = 0
    lock = threading.Lock()

    def one(messages) -> Completion | JudgeError:
        nonlocal done
        limit.wait()
        try:
            result: Completion | JudgeError = complete(endpoint, messages, **options)
        except JudgeError as error:
            result = error
        with lock:
            done += 1
            if on_done:
                on_done(done)
        return result

    with ThreadPoolExecutor(max_workers=max(1, endpoint.concurrency)) as pool:
        return list(pool.map(one, prompts))
