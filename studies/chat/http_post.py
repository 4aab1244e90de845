"""One JSON POST to an outside endpoint, bounded: what the chat client (``studies.chat.client``: a bot's reply)
and the LLM judge client (``metrics.judging.client``: a judgment) share. No Django here.

- **Where:** the host is resolved and checked by ``studies.chat.addresses.resolve`` (the SSRF guard), in a
  thread of its own waited for until the deadline (a name server that does not answer counts against it),
  and the connection goes to that checked address: the host name travels only in the Host header and as TLS
  SNI, the certificate still verified against it. ``AddressRefused`` is raised as it is (the caller says
  whether the address or a redirect was refused).
- **How long:** the caller's ``Deadline`` is one end on the monotonic clock for the whole call (each caller
  spans its retries and their pauses with it). Each attempt has ``timeout`` for connecting and each read, and
  a watchdog (``_Watchdog``) shuts the socket at the deadline wherever the call is blocked: a read timeout
  restarts with every byte, so a server that drips one byte every half second would otherwise outlive it.
  (A TLS handshake is bounded by the per-read timeout only: the socket is watched from when it is done.)
- **How much:** the body is read up to ``max_bytes``; larger is a "reply" failure.
- **Redirects** are never followed here: a 301/302/303/307/308 comes back with its headers and no body, for
  the caller to refuse (the judge) or to check and follow hop by hop (the chat client).

Failures raise ``PostError`` with a ``kind`` both callers use: ``timeout``, ``connection`` or ``reply``."""
from __future__ import annotations

import contextlib
import ipaddress
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import HTTPError as Urllib3Error
from urllib3.exceptions import NewConnectionError
from urllib3.exceptions import TimeoutError as Urllib3Timeout

from studies.chat.addresses import Network, Resolver, Target, resolve, url_parse

REDIRECTS = frozenset({301, 302, 303, 307, 308})
CHUNK = 16384


class PostError(Exception):
    """No usable answer: ``kind`` is ``timeout``, ``connection`` or ``reply``; ``str()`` is the detail."""

    def __init__(self, kind: str, detail: str):
        super().__init__(detail)
        self.kind = kind


class Deadline:
    """One end for a whole call, on the monotonic clock."""

    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic()


@dataclass(frozen=True)
class Posted:
    """What came back: the status, the headers, the body (empty for a redirect) and where it came from."""

    status: int
    headers: Mapping[str, str]
    body: bytes
    target: Target


class _Watchdog:
    """Shuts the attempt's socket at the deadline, wherever the call is blocked (the status line, the
    headers, any read of the body), so no read timeout restarted by a dripping server outlives it."""

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


def _read(response, deadline: Deadline, max_bytes: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        if deadline.left() <= 0:
            raise PostError("timeout", "the answer was still arriving at the deadline")
        chunk = response.read(CHUNK)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > max_bytes:
            raise PostError("reply", f"the answer is larger than {max_bytes // 1024} KiB")
        chunks.append(chunk)


def resolve_within(deadline: Deadline, target: Target, allowed: Sequence[Network], resolver: Resolver | None) -> str:
    """``resolve`` in a thread of its own, waited for until the deadline (the thread is left to finish)."""
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

    threading.Thread(target=run, name="post-resolve", daemon=True).start()
    if not done.wait(max(0.0, deadline.left())):
        raise PostError("timeout", f"looking up {target.host} took until the deadline")
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def post_json(url: str, body: bytes, *, deadline: Deadline, timeout: float, max_bytes: int, user_agent: str,
              headers: Mapping[str, str] | None = None, allowed: Sequence[Network] = (),
              resolver: Resolver | None = None) -> Posted:
    """POST ``body`` (JSON) to ``url`` once, at the checked address, within ``deadline``; ``headers`` are
    added to Host, Content-Type, Accept and User-Agent (an Authorization the caller decided to send)."""
    target = url_parse(url)
    address = resolve_within(deadline, target, allowed, resolver)
    timeout = min(timeout, deadline.left())
    if timeout <= 0:
        raise PostError("timeout", "no time was left for the request")
    sent = {"Host": target.host_header, "Content-Type": "application/json", "Accept": "application/json",
            "User-Agent": user_agent, **(headers or {})}
    watchdog = _Watchdog(deadline.left())
    pool = _pool(target, address, timeout, watchdog)
    try:
        response = pool.urlopen("POST", target.path, body=body, headers=sent, redirect=False,
                                assert_same_host=False, preload_content=False, release_conn=False)
        try:
            raw = b"" if response.status in REDIRECTS else _read(response, deadline, max_bytes)
        finally:
            response.release_conn()
    except NewConnectionError as error:  # a ConnectTimeoutError subclass in urllib3: refused is not slow
        raise PostError("connection", f"could not connect to {target.host}:{target.port} ({str(error)[:200]})") from None
    except Urllib3Timeout:
        raise PostError("timeout", f"no answer within {timeout:.1f} s") from None
    except PostError:
        if watchdog.fired:
            raise PostError("timeout", "the answer was still arriving at the deadline") from None
        raise
    except (Urllib3Error, OSError, ValueError) as error:
        if watchdog.fired:
            raise PostError("timeout", "the answer was still arriving at the deadline") from None
        raise PostError("connection", f"could not talk to {target.host}:{target.port} "
                                      f"({type(error).__name__}: {str(error)[:200]})") from None
    finally:
        watchdog.cancel()
        pool.close()
    if watchdog.fired:
        raise PostError("timeout", "the answer was still arriving at the deadline")
    return Posted(response.status, response.headers, raw, target)
