"""A small bot server on loopback for the tests and the demo (standard library only, no Django).

It answers both protocols of ``studies.chat.client``: a path ending in ``/v1/chat/completions`` is
OpenAI-compatible, any other path is Concord's (``{"turns": [...]}`` in, ``{"reply": ...}`` out). The
first path segment picks the bot:

- ``/rule/``: a rule-based bot (keyword rules in the style of ELIZA, then a rotation of open questions),
  deterministic, so a test can predict every reply (``rule_reply``);
- ``/parrot/``: repeats the rater's last message back (a poor but well-behaved bot, for comparisons);
- ``/slow/``: the rule bot after ``slow_seconds`` (default 5 s): longer than a test endpoint's timeout;
- ``/gate/``: the rule bot once the test opens ``gate`` (a threading.Event; 30 s at most): a reply that
  arrives exactly when a test says, with no sleep;
- ``/error/``: HTTP 500 every time;
- ``/garbage/``: HTTP 200 with bytes that are not JSON;
- ``/flaky/``: HTTP 503 on the first try of each message, the rule bot's reply on the next (retries);
- ``/redirect/?to=<url>``: 307 to ``to`` (redirect hops are checked by the client);
- ``/drip/``: a valid answer sent one byte every ``drip_seconds`` (default 0.5 s; ``?part=headers`` drips
  the status line and headers too): each byte restarts a read timeout, so only a deadline over the whole
  call stops it;
- ``/odd/``: HTTP 200 ``{"reply": "a\u0000b\ud800"}``: a NUL and a lone surrogate, which neither
  PostgreSQL nor UTF-8 can hold;
- ``/deep/``: HTTP 200 with JSON arrays nested ``DEEP_LEVELS`` deep (valid JSON, 200 kB): Python's
  parser raises RecursionError on it, not ValueError.

``requests`` keeps what was asked (path, headers, parsed body) so a test can check what the bot got.

Run it on its own for the demo: ``python -m studies.chat.local_bot --port 8765``.
"""
from __future__ import annotations

import argparse
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

HOST = "127.0.0.1"
BOTS = ("rule", "parrot", "slow", "gate", "error", "garbage", "flaky", "redirect", "drip", "odd", "deep")
DEEP_LEVELS = 100_000
ODD_REPLY = b'{"reply": "a\\u0000b\\ud800"}'
OPENAI_SUFFIX = "/v1/chat/completions"

RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\b(hello|hi|hey)\b", re.I), "Hello! What would you like to talk about today?"),
    (re.compile(r"\bmy name is (\w+)", re.I), "Nice to meet you, {0}. What do you enjoy doing?"),
    (re.compile(r"\bi (?:like|love|enjoy) ([^.?!]+)", re.I), "What do you like most about {0}?"),
    (re.compile(r"\bi feel ([^.?!]+)", re.I), "Why do you feel {0}?"),
    (re.compile(r"\b(weather|rain|sun)\w*", re.I), "I cannot see outside, but I hope the weather is kind to you."),
    (re.compile(r"\b(bye|goodbye)\b", re.I), "Goodbye! It was nice talking with you."),
    (re.compile(r"\?\s*$"), "That is a good question. What do you think?"),
]
OPEN_QUESTIONS = [
    "Tell me more about that.",
    "How did that make you feel?",
    "What happened next?",
    "Why do you say that?",
]


def rule_reply(turns: list[dict[str, str]]) -> str:
    """The rule bot's next turn: the first rule matching the user's last message, else the next open
    question (by the number of user turns so far)."""
    users = [t.get("text", "") for t in turns if t.get("speaker") == "user"]
    last = users[-1] if users else ""
    for pattern, template in RULES:
        if match := pattern.search(last):
            return template.format(*(g.strip() for g in match.groups()))
    return OPEN_QUESTIONS[(len(users) - 1) % len(OPEN_QUESTIONS)]


def parrot_reply(turns: list[dict[str, str]]) -> str:
    users = [t.get("text", "") for t in turns if t.get("speaker") == "user"]
    return f"You said: {users[-1]}" if users else "Say something."


def _turns(body: Any, openai: bool) -> list[dict[str, str]]:
    if openai:
        return [{"speaker": "user" if m.get("role") == "user" else "system", "text": str(m.get("content", ""))}
                for m in body.get("messages", []) if isinstance(m, dict)]
    return [t for t in body.get("turns", []) if isinstance(t, dict)]


class _Handler(BaseHTTPRequestHandler):
    server: LocalBotHTTPServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass  # quiet in tests and in the demo's terminal

    def _send(self, status: int, payload: bytes, content_type: str = "application/json",
              headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def _drip(self, headers_too: bool) -> None:
        """A well-formed answer, one byte every ``drip_seconds``, until it is all sent or the client hangs up."""
        body = json.dumps({"reply": "Sorry, I am very slow today."}).encode()
        head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n").encode()
        self.close_connection = True
        if not headers_too:
            self.wfile.write(head)
            self.wfile.flush()
        for byte in (head + body if headers_too else body):
            time.sleep(self.server.drip_seconds)
            try:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
            except OSError:
                return  # the client gave up: what a deadline is for

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        parts = urlsplit(self.path)
        bot = parts.path.strip("/").split("/")[0]
        openai = parts.path.rstrip("/").endswith(OPENAI_SUFFIX)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(min(length, 1 << 20))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        if not isinstance(body, dict):
            body = {}
        self.server.record({"path": self.path, "bot": bot, "headers": dict(self.headers.items()), "body": body})
        turns = _turns(body, openai)
        if bot == "redirect":
            target = parse_qs(parts.query).get("to", [""])[0]
            return self._send(307, b"", headers={"Location": target})
        if bot == "error":
            return self._send(500, b'{"error": "the bot broke"}')
        if bot == "garbage":
            return self._send(200, b"\x00<html>Internal things\xff\xfe", content_type="text/html")
        if bot == "flaky" and self.server.first_try(json.dumps(turns, sort_keys=True)):
            return self._send(503, b'{"error": "busy, try again"}')
        if bot == "odd":
            return self._send(200, ODD_REPLY)
        if bot == "deep":
            return self._send(200, b"[" * DEEP_LEVELS + b"]" * DEEP_LEVELS)
        if bot == "drip":
            return self._drip(parse_qs(parts.query).get("part", ["body"])[0] == "headers")
        if bot == "slow":
            time.sleep(self.server.slow_seconds)
        if bot == "gate":
            self.server.gate.wait(timeout=30)
        if bot not in BOTS:
            return self._send(404, b'{"error": "no such bot"}')
        text = parrot_reply(turns) if bot == "parrot" else rule_reply(turns)
        if openai:
            payload = {"id": "chatcmpl-local", "object": "chat.completion", "model": body.get("model", ""),
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": text}}]}
        else:
            payload = {"reply": text}
        return self._send(200, json.dumps(payload).encode())


class LocalBotHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], slow_seconds: float = 5.0, drip_seconds: float = 0.5):
        super().__init__(address, _Handler)
        self.slow_seconds, self.drip_seconds = slow_seconds, drip_seconds
        self.gate = threading.Event()
        self.requests: list[dict[str, Any]] = []
        self._tried: set[str] = set()
        self._lock = threading.Lock()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (a timed-out test call) is expected: no traceback on the terminal."""
        import sys

        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)

    def record(self, request: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(request)

    def first_try(self, key: str) -> bool:
        with self._lock:
            if key in self._tried:
                return False
            self._tried.add(key)
            return True


class LocalBot:
    """The server in a background thread: ``start()``, ``url(bot, protocol)``, ``stop()``."""

    def __init__(self, port: int = 0, slow_seconds: float = 5.0, drip_seconds: float = 0.5):
        self.server = LocalBotHTTPServer((HOST, port), slow_seconds=slow_seconds, drip_seconds=drip_seconds)
        self.thread = threading.Thread(target=self.server.serve_forever, name="local-bot", daemon=True)

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.server.requests

    def url(self, bot: str = "rule", protocol: str = "concord") -> str:
        path = "v1/chat/completions" if protocol == "openai" else "chat"
        return f"http://{HOST}:{self.port}/{bot}/{path}"

    def start(self) -> LocalBot:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def __enter__(self) -> LocalBot:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description="Concord's local rule-based bot server (loopback only).")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--slow-seconds", type=float, default=5.0)
    options = parser.parse_args()
    server = LocalBotHTTPServer((HOST, options.port), slow_seconds=options.slow_seconds)
    print(f"Local bot on http://{HOST}:{options.port}/rule/chat (Concord) and "
          f"http://{HOST}:{options.port}/rule/v1/chat/completions (OpenAI)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
