"""One bot reply over HTTP: the dialogue so far in, one reply out (no Django here).

Two protocols (docs/guide/chat-then-rate.md documents Concord's):

- ``concord``: ``POST <url>`` with ``{"protocol": "concord-chat/1", "model": ..., "conversation_id": ...,
  "turns": [{"speaker": "user" | "system", "text": ...}, ...]}``; the answer is ``{"reply": "..."}``.
- ``openai``: OpenAI-compatible ``POST <base>/v1/chat/completions`` with ``{"model": ..., "messages":
  [{"role": "user" | "assistant", "content": ...}]}``; the reply is ``choices[0].message.content``.

A key, when there is one, goes in ``Authorization: Bearer <key>``, and never to another origin: a
redirect that leaves the endpoint's scheme, host and port drops it (as ``requests`` does).

Bounded: each attempt has the endpoint's timeout (connect and every read), and the whole call one
deadline on the monotonic clock across connecting, the status line, headers, every read of the body,
redirects, retries and their pauses. A read timeout restarts with every byte, so a bot that drips one
byte every half second would outlive it (60 s on a 25 s deadline, measured); a watchdog
shuts the attempt's socket at the deadline instead, and the attempt ends as a timeout. The body is read
up to ``MAX_BODY_BYTES``. The POST itself (checked address, watchdog, bounded read) is
``studies.chat.http_post.post_json``, which the LLM judge client shares.

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

import json
import math
import time
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin

from studies.chat.addresses import AddressRefused, Network, Resolver, url_parse
from studies.chat.http_post import REDIRECTS, Deadline, PostError, post_json

PROTOCOLS = ("concord", "openai")
CONCORD_PROTOCOL = "concord-chat/1"
OPENAI_PATH = "/chat/completions"
MAX_BODY_BYTES = 256 * 1024
MAX_REPLY_CHARS = 4000
MAX_REDIRECTS = 3
BACKOFF_SECONDS = 0.25
USER_AGENT = "Concord-chat/1 (+https://github.com/concord)"

def gettext_noop(text: str) -> str:
    """Marks a text for the rater pages' catalogues (it is translated where it is shown, studies.chat.selectors);
    this module keeps no Django import."""
    return text


# What the rater is told for each kind of failure (the detail stays with the researcher).
RATER_MESSAGES = {
    "timeout": gettext_noop("The system did not answer in time."),
    "connection": gettext_noop("The system could not be reached."),
    "status": gettext_noop("The system answered with an error."),
    "reply": gettext_noop("The system's answer could not be read."),
    "address": gettext_noop("The system's address is not allowed."),
    "redirect": gettext_noop("The system's address sent us elsewhere."),
    "key": gettext_noop("The system is not set up correctly."),
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


def _attempt(endpoint: Endpoint, body: bytes, deadline: Deadline, allowed: Sequence[Network],
             resolver: Resolver | None) -> str:
    """One POST (``studies.chat.http_post``), following checked redirects; the reply text or BotError."""
    url = endpoint.request_url
    origin = None
    for _hop in range(MAX_REDIRECTS + 1):
        try:
            target = url_parse(url)
            origin = origin or target.origin
            key = {"Authorization": f"Bearer {endpoint.key}"} if endpoint.key and target.origin == origin else {}
            posted = post_json(url, body, deadline=deadline, timeout=endpoint.timeout, max_bytes=MAX_BODY_BYTES,
                               user_agent=USER_AGENT, headers=key, allowed=allowed, resolver=resolver)
        except AddressRefused as error:
            first = _hop == 0
            raise BotError("address" if first else "redirect",
                           str(error) if first else f"a redirect to {url[:200]} was {error}") from None
        except PostError as error:
            raise BotError(error.kind, str(error)) from None
        if posted.status in REDIRECTS:  # never hand the key to another origin: checked above, hop by hop
            location = posted.headers.get("Location", "")
            if not location:
                raise BotError("redirect", f"HTTP {posted.status} without a Location")
            url = urljoin(url, location)
            continue
        if posted.status != 200:
            raise BotError("status", f"HTTP {posted.status}: {posted.body[:200].decode(errors='replace')}",
                           status=posted.status)
        try:
            payload = json.loads(posted.body)
        except (ValueError, UnicodeDecodeError):
            raise BotError("reply", f"the answer is not JSON: {posted.body[:80].decode(errors='replace')!r}") from None
        except RecursionError:  # valid JSON nested deeper than the parser's recursion limit
            raise BotError("reply", "the answer is JSON nested too deep to read") from None
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
    deadline = Deadline(deadline_seconds)
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
