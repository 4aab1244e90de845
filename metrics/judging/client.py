"""One judgment over an OpenAI-compatible chat-completions endpoint, and many within limits.

- ``complete``: POST ``{"model", "messages", "temperature": 0, "max_tokens", ["logprobs", "top_logprobs"]}``;
  the answer's ``choices[0].message.content``, its ``logprobs`` and ``usage`` tokens. One deadline over
  the whole call on a monotonic clock (connect, every read, every retry and pause); retried on 429 and
  5xx (a ``Retry-After`` in seconds is honoured, capped at ``MAX_PAUSE``), on a connection that fails or
  times out, with exponential backoff otherwise; a refused address, another 4xx or an answer that is not
  the protocol's is not retried.
- ``complete_many``: several judgments at once on ``endpoint.concurrency`` threads, started no faster
  than ``endpoint.requests_per_minute``; each result is a Completion or the JudgeError it ended with.

Connections go to the address ``studies.chat.addresses.resolve`` checked (the SSRF guard the chat bots
use); a judge endpoint that redirects is refused, and its key goes nowhere else."""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import urllib3
from urllib3.exceptions import HTTPError as Urllib3Error
from urllib3.exceptions import TimeoutError as Urllib3Timeout

from studies.chat.addresses import AddressRefused, Network, Resolver, resolve, url_parse

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
    timeout: float = 30.0  # per attempt: connecting and each read
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
    """No usable answer. ``kind``: timeout, connection, status, reply or address; ``str()`` is the detail
    for the researcher (never the key)."""

    def __init__(self, kind: str, detail: str, *, status: int | None = None, retry_after: float | None = None):
        super().__init__(detail)
        self.kind, self.status, self.retry_after = kind, status, retry_after
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


def _post(endpoint: JudgeEndpoint, body: bytes, end: float, allowed: Sequence[Network],
          resolver: Resolver | None) -> dict:
    """One POST; the parsed answer or JudgeError."""
    try:
        target = url_parse(endpoint.request_url)
        address = resolve(target.host, target.port, allowed=allowed, **({"resolver": resolver} if resolver else {}))
    except AddressRefused as error:
        raise JudgeError("address", str(error)) from None
    timeout = min(endpoint.timeout, end - time.monotonic())
    if timeout <= 0:
        raise JudgeError("timeout", "no time was left for the request")
    limits = urllib3.Timeout(connect=timeout, read=timeout)
    if target.scheme == "https":
        pool: urllib3.HTTPConnectionPool = urllib3.HTTPSConnectionPool(
            address, target.port, timeout=limits, maxsize=1, retries=False, cert_reqs="CERT_REQUIRED",
            server_hostname=target.host, assert_hostname=target.host)
    else:
        pool = urllib3.HTTPConnectionPool(address, target.port, timeout=limits, maxsize=1, retries=False)
    headers = {"Host": target.host_header, "Content-Type": "application/json", "Accept": "application/json",
               "User-Agent": USER_AGENT}
    if endpoint.key:
        headers["Authorization"] = f"Bearer {endpoint.key}"
    try:
        response = pool.urlopen("POST", target.path, body=body, headers=headers, redirect=False,
                                assert_same_host=False, preload_content=False, release_conn=False)
        try:
            chunks, size = [], 0
            while chunk := response.read1(16384):  # whatever arrived: the deadline is checked between reads
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    raise JudgeError("reply", f"the answer is larger than {MAX_BODY_BYTES // 1024} KiB")
                if time.monotonic() > end:
                    raise JudgeError("timeout", "the answer was still arriving at the deadline")
                chunks.append(chunk)
            raw = b"".join(chunks)
        finally:
            response.release_conn()
    except Urllib3Timeout:
        raise JudgeError("timeout", f"no answer within {timeout:.1f} s") from None
    except JudgeError:
        raise
    except (Urllib3Error, OSError) as error:
        raise JudgeError("connection", f"could not talk to {target.host}:{target.port} ({type(error).__name__})") from None
    finally:
        pool.close()
    if 300 <= response.status < 400:
        raise JudgeError("status", f"HTTP {response.status}: a judge endpoint may not redirect", status=response.status)
    if response.status != 200:
        raise JudgeError("status", f"HTTP {response.status}: {raw[:200].decode(errors='replace')}",
                         status=response.status, retry_after=_retry_after(response.headers))
    try:
        payload = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise JudgeError("reply", f"the answer is not JSON: {raw[:80].decode(errors='replace')!r}") from None
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
    usage: dict = payload["usage"] if isinstance(payload.get("usage"), dict) else {}

    def tokens(key: str) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) and value >= 0 else 0

    return Completion(text=text, logprobs=choice.get("logprobs") if isinstance(choice, dict) else None,
                      prompt_tokens=tokens("prompt_tokens"), completion_tokens=tokens("completion_tokens"),
                      attempts=attempts, seconds=seconds)


def complete(endpoint: JudgeEndpoint, messages: Sequence[dict[str, str]], *, temperature: float = 0.0,
             max_tokens: int = 256, logprobs: bool = False, deadline_seconds: float = 120.0,
             allowed: Sequence[Network] = (), resolver: Resolver | None = None,
             sleep: Callable[[float], None] = time.sleep) -> Completion:
    """Ask the judge once, retrying passing failures while the deadline allows; JudgeError otherwise."""
    body = json.dumps(request_body(endpoint, messages, temperature=temperature, max_tokens=max_tokens,
                                   logprobs=logprobs)).encode()
    started = time.monotonic()
    end = started + deadline_seconds
    attempts = 0
    while True:
        attempts += 1
        try:
            payload = _post(endpoint, body, end, allowed, resolver)
            return completion_read(payload, attempts=attempts, seconds=time.monotonic() - started)
        except JudgeError as error:
            error.attempts, error.seconds = attempts, time.monotonic() - started
            pause = error.retry_after if error.retry_after is not None else min(BACKOFF_SECONDS * 2 ** (attempts - 1), MAX_PAUSE)
            if not error.retryable or attempts > endpoint.retries or time.monotonic() + pause >= end:
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
    """Every prompt judged, ``endpoint.concurrency`` at a time within its rate limit; results in order."""
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
