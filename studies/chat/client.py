"""One bot reply over HTTP: the dialogue so far in, one reply out (no Django here).

Two protocols (the README documents Concord's):

- ``concord``: ``POST <url>`` with ``{"protocol": "concord-chat/1", "model": ..., "conversation_id": ...,
  "turns": [{"speaker": "user" | "system", "text": ...}, ...]}``; the answer is ``{"reply": "..."}``.
- ``openai``: OpenAI-compatible ``POST <base>/v1/chat/completions`` with ``{"model": ..., "messages":
  [{"role": "user" | "assistant", "content": ...}]}``; the reply is ``choices[0].message.content``.

A key, when there is one, goes in ``Authorization: Bearer <key>``, and never to another origin: a
redirect that leaves the endpoint's scheme, host and port drops it (as ``requests`` does).

Bounded: each attempt has the endpoint's timeout (connect and every read), and the whole call one
deadline on the monotonic clock across connecting, the status line, headers, every read of the body,
redirects, retries and their pauses. A read timeout restarts with every byte, so a bot that drips one
byte every half second would outlive it (the audit of issue 33: 60 s on a 25 s deadline); a watchdog
(``_Watchdog``) shuts the attempt's socket at the deadline instead, wherever the call is blocked, and
the attempt ends as a timeout. (A TLS handshake is bounded by the per-read timeout only: the socket is
watched from when the handshake is done.) The body is read up to ``MAX_BODY_BYTES``.

What the bot says is cleaned before anyone stores it (``text_clean``): NUL and other control characters
(PostgreSQL text cannot hold NUL) are dropped and lone surrogates (JSON's ``"\ud800"``, which no
UTF-8 database can encode) become U+FFFD; a reply that is empty afterwards is a "reply" failure the rater
can retry. The researcher's error detail is cleaned the same way. Attempts that fail for a passing reason (no answer in
time, connection refused or reset, HTTP 429 or 5xx, an answer that is not the protocol's) are retried
after a short backoff while the deadline allows; a refused address or another 4xx is not.

Every connection goes to an address checked by ``studies.chat.addresses.resolve`` (the host name travels
only in the Host header and as TLS SNI, the certificate still checked against it), and each redirect hop
(at most ``MAX_REDIRECTS``) is resolved and checked again before it is followed.
"""
from __future__ import annotations

import contextlib
import ipaddress
import json
import math
import socket
import threading
import time
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import HTTPError as Urllib3Error
from urllib3.exceptions import NewConnectionError
from urllib3.exceptions import TimeoutError as Urllib3Timeout

from studies.chat.addresses import AddressRefused, Network, Resolver, Target, resolve, url_parse

PROTOCOLS = ("concord", "openai")
CONCORD_PROTOCOL = "concord-chat/1"
OPENAI_PATH = "/chat/completions"
MAX_BODY_BYTES = 256 * 1024
MAX_REPLY_CHARS = 4000
MAX_REDIRECTS = 3
REDIRECTS = {301, 302, 303, 307, 308}
BACKOFF_SECONDS = 0.25
USER_AGENT = "Concord-chat/1 (+https://github.com/concord)"

# What the rater is told for each kind of failure (the detail stays with the researcher).
RATER_MESSAGES = {
    "timeout": "The system did not answer in time.",
    "connection": "The system could not be reached.",
    "status": "The system answered with an error.",
    "reply": "The system's answer could not be read.",
    "address": "The system's address is not allowed.",
    "redirect": "The system's address sent us elsewhere.",
    "key": "The system is not set up correctly.",
}
RETRIED = {"timeout", "connection", "reply"}


def text_clean(text: str) -> str:
    """``text`` as a database and JSON can hold it: lone surrogates become U+FFFD, NUL and the other
    control characters but tab and line breaks are dropped."""
    kept = []
    for char in text:
        category = unicodedata.category(char)
        if category == "Cs":
            kept.append("\ufffd")
        elif category != "Cc" or char in "\t\n\r":
            kept.append(char)
    return "".join(kept)


@dataclass(frozen=True)
class Endpoint:
    """Where and how to ask one system; ``key`` is the plain key, held only for the call."""

    protocol: str
    url: str
    model: str = ""
    key: str = field(default="", repr=False)
    timeout: float = 10.0
    retries: int = 2

    @property
    def request_url(self) -> str:
        """The URL posted to: an OpenAI-compatible base (``.../v1``) gets ``/chat/completions``."""
        if self.protocol == "openai" and not self.url.split("?")[0].rstrip("/").endswith(OPENAI_PATH):
            return self.url.rstrip("/") + OPENAI_PATH
        return self.url


@dataclass(frozen=True)
class BotReply:
    text: str
    seconds: float
    attempts: int


class BotError(Exception):
    """The bot gave no usable reply. ``kind`` is one of ``RATER_MESSAGES``; ``str()`` is the detail for
    the researcher (never the key); ``rater_message`` is what the rater sees."""

    def __init__(self, kind: str, detail: str, *, attempts: int = 1, seconds: float = 0.0, status: int | None = None):
        super().__init__(text_clean(detail))
        self.kind, self.attempts, self.seconds, self.status = kind, attempts, seconds, status

    @property
    def rater_message(self) -> str:
        return RATER_MESSAGES.get(self.kind, RATER_MESSAGES["reply"])

    @property
    def retryable(self) -> bool:
        return self.kind in RETRIED or (self.kind == "status" and (self.status == 429 or (self.status or 0) >= 500))


SAMPLING = ("temperature", "top_p", "max_tokens")


def request_body(endpoint: Endpoint, turns: Sequence[Mapping[str, str]], conversation_id: str,
                 settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What is posted: the whole dialogue so far, in the endpoint's protocol. ``turns`` are
    ``{"speaker": "user" | "system", "text": ...}``; the last one is the rater's message. ``settings``
    (a persona or task context as ``system_prompt``; ``temperature``, ``top_p``, ``max_tokens``): to an
    OpenAI-compatible endpoint a leading system message and the sampling keys; to a Concord endpoint
    ``context`` and ``settings``. Nothing is added without them."""
    settings = settings or {}
    prompt = str(settings.get("system_prompt") or "")
    sampling = {k: settings[k] for k in SAMPLING if settings.get(k) is not None}
    if endpoint.protocol == "openai":
        messages = [{"role": "user" if t["speaker"] == "user" else "assistant", "content": t["text"]} for t in turns]
        if prompt:
            messages.insert(0, {"role": "system", "content": prompt})
        return {"model": endpoint.model, "messages": messages, **sampling}
    body = {"protocol": CONCORD_PROTOCOL, "model": endpoint.model, "conversation_id": conversation_id,
            "turns": [{"speaker": t["speaker"], "text": t["text"]} for t in turns]}
    if prompt:
        body["context"] = prompt
    if sampling:
        body["settings"] = sampling
    return body


def reply_text(protocol: str, payload: Any) -> str:
    """The reply in a parsed answer, or BotError("reply") saying what is missing."""
    if protocol == "openai":
        try:
            text = payload["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise BotError("reply", "the answer has no choices[0].message.content") from None
    else:
        text = payload.get("reply") if isinstance(payload, dict) else None
        if text is None:
            raise BotError("reply", 'the answer is not a JSON object with a "reply"')
    if not isinstance(text, str):
        raise BotError("reply", f"the reply is a {type(text).__name__}, not text")
    text = text_clean(text).strip()
    if not text:
        raise BotError("reply", "the reply is empty (once control characters are removed)")
    return text[:MAX_REPLY_CHARS]


class _Deadline:
    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic()


class _Watchdog:
    """Shuts the attempt's socket at the deadline, wherever the call is blocked (the status line, the
    headers, any read of the body), so no read timeout restarted by a dripping bot outlives it."""

    def __init__(self, seconds: float):
        self.fired = False
        self._socket: socket.socket | None = None
        self._done = False
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(0.0, seconds), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def watch(self, sock: socket.socket | None) -> None:
        with self._lock:
            self._socket = sock
            if self.fired:
                self._shut()

    def _fire(self) -> None:
        with self._lock:
            if not self._done:
                self.fired = True
                self._shut()

    def _shut(self) -> None:
        if self._socket is not None:
            with contextlib.suppress(OSError):  # already closed
                # at the socket level (an SSL socket's too): a blocked recv returns at once
                socket.socket.shutdown(self._socket, socket.SHUT_RDWR)

    def cancel(self) -> None:
        """Before the connection is closed: the timer never touches a socket after this."""
        with self._lock:
            self._done = True
            self._socket = None
        self._timer.cancel()


def _watched(base: type[HTTPConnection], watchdog: _Watchdog) -> type[HTTPConnection]:
    class Watched(base):  # type: ignore[valid-type, misc]
        def connect(self) -> None:
            super().connect()
            watchdog.watch(self.sock)

    return Watched


def _pool(target: Target, address: str, timeout: float, watchdog: _Watchdog) -> urllib3.HTTPConnectionPool:
    """A one-connection pool to the checked ``address``; TLS still verifies ``target.host``."""
    limits = urllib3.Timeout(connect=timeout, read=timeout)
    if target.scheme == "https":
        pool: urllib3.HTTPConnectionPool = urllib3.HTTPSConnectionPool(
            address, target.port, timeout=limits, maxsize=1, retries=False, cert_reqs="CERT_REQUIRED",
            server_hostname=target.host, assert_hostname=target.host)
        pool.ConnectionCls = _watched(HTTPSConnection, watchdog)
    else:
        pool = urllib3.HTTPConnectionPool(address, target.port, timeout=limits, maxsize=1, retries=False)
        pool.ConnectionCls = _watched(HTTPConnection, watchdog)
    return pool


def _read(response, deadline: _Deadline) -> bytes:
    chunks, size = [], 0
    while True:
        if deadline.left() <= 0:
            raise BotError("timeout", "the answer was still arriving at the deadline")
        chunk = response.read(16384)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise BotError("reply", f"the answer is larger than {MAX_BODY_BYTES // 1024} KiB")
        chunks.append(chunk)


def _resolve_within(deadline: _Deadline, target: Target, allowed: Sequence[Network],
                    resolver: Resolver | None) -> str:
    """``resolve`` in a thread of its own, waited for until the deadline: a name server that does not
    answer counts against the same deadline as everything else (the thread is left to finish)."""
    try:
        ipaddress.ip_address(target.host)
    except ValueError:
        pass
    else:
        return resolve(target.host, target.port, allowed=allowed)  # a literal: nothing to wait for
    outcome: list[Any] = []
    done = threading.Event()

    def run() -> None:
        try:
            outcome.append(resolve(target.host, target.port, allowed=allowed,
                                   **({"resolver": resolver} if resolver is not None else {})))
        except Exception as error:  # noqa: BLE001 - handed to the caller's thread as it is
            outcome.append(error)
        finally:
            done.set()

    threading.Thread(target=run, name="chat-resolve", daemon=True).start()
    if not done.wait(max(0.0, deadline.left())):
        raise BotError("timeout", f"looking up {target.host} took until the deadline")
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def _attempt(endpoint: Endpoint, body: bytes, deadline: _Deadline, allowed: Sequence[Network],
             resolver: Resolver | None) -> str:
    """One POST (following checked redirects); the reply text or BotError."""
    url = endpoint.request_url
    origin = None
    for _hop in range(MAX_REDIRECTS + 1):
        try:
            target = url_parse(url)
            address = _resolve_within(deadline, target, allowed, resolver)
        except AddressRefused as error:
            raise BotError("address" if origin is None else "redirect",
                           str(error) if origin is None else f"a redirect to {url[:200]} was {error}") from None
        origin = origin or target.origin
        headers = {"Host": target.host_header, "Content-Type": "application/json", "Accept": "application/json",
                   "User-Agent": USER_AGENT}
        if endpoint.key and target.origin == origin:  # never hand the key to another origin
            headers["Authorization"] = f"Bearer {endpoint.key}"
        timeout = min(endpoint.timeout, deadline.left())
        if timeout <= 0:
            raise BotError("timeout", "no time was left for the request")
        watchdog = _Watchdog(deadline.left())
        pool = _pool(target, address, timeout, watchdog)
        try:
            response = pool.urlopen("POST", target.path, body=body, headers=headers, redirect=False,
                                    assert_same_host=False, preload_content=False, release_conn=False)
            try:
                if response.status in REDIRECTS:
                    location = response.headers.get("Location", "")
                    if not location:
                        raise BotError("redirect", f"HTTP {response.status} without a Location")
                    url = urljoin(url, location)
                    continue
                raw = _read(response, deadline)
            finally:
                response.release_conn()
        except NewConnectionError as error:  # a ConnectTimeoutError subclass in urllib3: refused is not slow
            raise BotError("connection", f"could not connect to {target.host}:{target.port} "
                                         f"({str(error)[:200]})") from None
        except Urllib3Timeout:
            raise BotError("timeout", f"no answer within {timeout:.1f} s") from None
        except BotError:
            if watchdog.fired:
                raise BotError("timeout", "the answer was still arriving at the deadline") from None
            raise
        except (Urllib3Error, OSError, ValueError) as error:
            if watchdog.fired:
                raise BotError("timeout", "the answer was still arriving at the deadline") from None
            raise BotError("connection", f"could not talk to {target.host}:{target.port} "
                                         f"({type(error).__name__}: {str(error)[:200]})") from None
        finally:
            watchdog.cancel()
            pool.close()
        if watchdog.fired:
            raise BotError("timeout", "the answer was still arriving at the deadline")
        if response.status != 200:
            raise BotError("status", f"HTTP {response.status}: {raw[:200].decode(errors='replace')}",
                           status=response.status)
        try:
            payload = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise BotError("reply", f"the answer is not JSON: {raw[:80].decode(errors='replace')!r}") from None
        return reply_text(endpoint.protocol, payload)
    raise BotError("redirect", f"more than {MAX_REDIRECTS} redirects")


def bot_reply(endpoint: Endpoint, turns: Sequence[Mapping[str, str]], *, conversation_id: str = "",
              deadline_seconds: float = 25.0, allowed: Sequence[Network] = (),
              resolver: Resolver | None = None, settings: Mapping[str, Any] | None = None) -> BotReply:
    """Ask the endpoint for its next turn. Retries up to ``endpoint.retries`` times while
    ``deadline_seconds`` allows (backoff 0.25 s, 0.5 s, ...); raises BotError with the attempts made."""
    if endpoint.protocol not in PROTOCOLS:
        raise BotError("key", f"unknown protocol {endpoint.protocol!r}")
    body = json.dumps(request_body(endpoint, turns, conversation_id, settings)).encode()
    deadline = _Deadline(deadline_seconds)
    started = time.monotonic()
    attempts = 0
    while True:
        attempts += 1
        try:
            text = _attempt(endpoint, body, deadline, allowed, resolver)
        except BotError as error:
            error.attempts, error.seconds = attempts, time.monotonic() - started
            pause = BACKOFF_SECONDS * 2 ** (attempts - 1)
            if not error.retryable or attempts > endpoint.retries or deadline.left() <= pause + 0.05:
                raise
            time.sleep(pause)
            continue
        seconds = time.monotonic() - started
        return BotReply(text=text, seconds=seconds if math.isfinite(seconds) else 0.0, attempts=attempts)
