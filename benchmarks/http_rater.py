"""A simulated rater for benchmarks/http_load.py: one browser-like HTTP client (standard library only).

It knows no URL of the app it drives beyond the first one: it reads every page's forms (action,
method, every input including hidden ones such as CSRF or per-assignment tokens), fills them the way
a person would (ticks the consent box, picks one point per rating scale, types into text fields,
signs in with its own name), follows redirects, and loads a same-site ``<iframe>`` when the page
holds its task there (Turkle). A submit may be answered by a redirect (POST-redirect-GET) or by the
next page directly; both count. A request whose connection fails (a killed server process) is sent
again unchanged, as a person would press the button again: that is where a server could store an
answer twice. Each rater keeps its own cookies."""
from __future__ import annotations

import http.client
import random
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from http.cookies import SimpleCookie
from urllib.parse import urlencode, urljoin, urlsplit

RETRYABLE = (ConnectionError, http.client.HTTPException, socket.timeout, TimeoutError)


@dataclass
class Form:
    action: str
    method: str
    inputs: list[dict] = field(default_factory=list)  # {"tag", "type", "name", "value", "checked", ...}
    selects: dict[str, list[str]] = field(default_factory=dict)

    def radio_groups(self) -> dict[str, list[str]]:
        groups: dict[str, list[str]] = {}
        for i in self.inputs:
            if i["type"] == "radio" and i.get("name"):
                groups.setdefault(i["name"], []).append(i.get("value", "on"))
        return groups

    def has(self, input_type: str) -> bool:
        return any(i["type"] == input_type for i in self.inputs)


class PageParser(HTMLParser):
    """Forms (with their inputs, selects and textareas) and iframe sources of one HTML page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.forms: list[Form] = []
        self.iframes: list[str] = []
        self._form: Form | None = None
        self._select: str | None = None

    def handle_starttag(self, tag, attrs):
        a = {k: (v if v is not None else "") for k, v in attrs}
        if tag == "form":
            self._form = Form(action=a.get("action", ""), method=a.get("method", "get").lower())
            self.forms.append(self._form)
        elif tag == "iframe" and a.get("src"):
            self.iframes.append(a["src"])
        elif self._form is None:
            return
        elif tag == "input":
            self._form.inputs.append({"tag": "input", "type": a.get("type", "text").lower(), "name": a.get("name"),
                                      "value": a.get("value", ""), "checked": "checked" in a,
                                      "min": a.get("min"), "max": a.get("max")})
        elif tag == "textarea":
            self._form.inputs.append({"tag": "textarea", "type": "textarea", "name": a.get("name"), "value": ""})
        elif tag == "select" and a.get("name"):
            self._select = a["name"]
            self._form.selects[self._select] = []
        elif tag == "option" and self._select is not None:
            self._form.selects[self._select].append(a.get("value", ""))

    def handle_endtag(self, tag):
        if tag == "form":
            self._form = None
        elif tag == "select":
            self._select = None


def parse_page(html: str) -> PageParser:
    parser = PageParser()
    parser.feed(html)
    parser.close()
    return parser


class CookieJar:
    """Name -> value for one host (every benchmark run talks to one loopback address)."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    def update(self, set_cookie_headers: list[str]) -> None:
        for header in set_cookie_headers:
            cookie = SimpleCookie()
            cookie.load(header)
            for name, morsel in cookie.items():
                if morsel["max-age"] == "0" or (not morsel.value and morsel["expires"]):
                    self.values.pop(name, None)
                else:
                    self.values[name] = morsel.value

    def header(self) -> str:
        return "; ".join(f"{k}={v}" for k, v in self.values.items())


@dataclass
class Answer:
    status: int
    headers: http.client.HTTPMessage
    body: str
    url: str


class ServerError(Exception):
    """A 5xx answer, kept with what was sent (for the report)."""


class Deadline(Exception):
    """The run's time is up."""


@dataclass
class Stats:
    """What all raters saw, shared between threads."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    submit_ms: list[float] = field(default_factory=list)      # the item POST alone
    get_ms: list[float] = field(default_factory=list)         # every GET (pages, redirects, iframes)
    cycle_ms: list[float] = field(default_factory=list)       # item POST until the next form is on screen
    acknowledged: list[dict] = field(default_factory=list)    # item submits answered with success
    retries: int = 0
    connection_errors: dict[str, int] = field(default_factory=dict)
    server_errors: list[dict] = field(default_factory=list)
    client_errors: list[dict] = field(default_factory=list)
    unfinished: list[dict] = field(default_factory=list)
    first_item_at: list[float] = field(default_factory=list)
    last_ack_at: float = 0.0

    def add(self, name: str, value) -> None:
        with self.lock:
            getattr(self, name).append(value)


class StartLine:
    """Holds every rater at its first item form until all have arrived (or given up), so that the
    rating phase is measured with all raters at work; log-ins, consent and entry stay outside it."""

    def __init__(self, raters: int) -> None:
        self.waiting = raters
        self.arrived: set[int] = set()
        self.condition = threading.Condition()
        self.opened_at: float | None = None

    def arrive(self, rater: Rater) -> None:
        with self.condition:
            if rater.index in self.arrived:
                return
            self.arrived.add(rater.index)
            if len(self.arrived) >= self.waiting and self.opened_at is None:
                self.opened_at = time.monotonic()
                self.condition.notify_all()

    def wait(self, deadline: float) -> None:
        with self.condition:
            self.condition.wait_for(lambda: self.opened_at is not None, timeout=max(0.0, deadline - time.monotonic()))


class Rater:
    """One simulated person. ``run`` goes from ``start_url`` until ``items`` item forms are submitted
    (and, with ``questionnaire``, the forms after them), then stops."""

    def __init__(self, *, index: int, host: str, port: int, start_url: str, items: int, stats: Stats,
                 deadline: float, ready: StartLine | None = None, username: str = "", password: str = "",
                 questionnaire: bool = False, max_retries: int = 12, timeout: float = 60.0) -> None:
        self.index, self.host, self.port = index, host, port
        self.origin = f"http://{host}:{port}"
        self.start_url, self.items, self.stats, self.deadline = start_url, items, stats, deadline
        self.ready, self.username, self.password = ready, username, password
        self.questionnaire, self.max_retries, self.timeout = questionnaire, max_retries, timeout
        self.cookies = CookieJar()
        self.rng = random.Random(index)
        self.rated = 0
        self.last_body = ""
        self.urls: list[str] = []  # every URL this rater was sent to (the assignment token is in them)

    # --- HTTP ----------------------------------------------------------------------------------

    def _once(self, method: str, url: str, body: bytes | None) -> Answer:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            headers = {"Host": f"{self.host}:{self.port}", "User-Agent": "concord-http-load",
                       "Accept": "text/html", "Connection": "close"}
            if self.cookies.values:
                headers["Cookie"] = self.cookies.header()
            if body is not None:
                headers["Content-Type"] = "application/x-www-form-urlencoded"
                headers["Origin"] = self.origin
            connection.request(method, url, body=body, headers=headers)
            response = connection.getresponse()
            text = response.read().decode("utf-8", "replace")
            self.cookies.update(response.headers.get_all("Set-Cookie") or [])
            return Answer(response.status, response.headers, text, url)
        finally:
            connection.close()

    def request(self, method: str, url: str, fields: list[tuple[str, str]] | None = None, *,
                timing: str | None = None) -> Answer:
        """Send; on a failed connection send the same request again (bounded); 5xx raises ServerError
        after three. ``timing`` names the Stats list the answer time goes to (GETs always count)."""
        body = urlencode(fields).encode() if fields is not None else None
        server_errors = 0
        for attempt in range(self.max_retries + 1):
            if time.monotonic() > self.deadline:
                raise Deadline("the run's time is up")
            started = time.perf_counter()
            try:
                answer = self._once(method, url, body)
            except RETRYABLE as error:
                with self.stats.lock:
                    self.stats.retries += 1
                    name = type(error).__name__
                    self.stats.connection_errors[name] = self.stats.connection_errors.get(name, 0) + 1
                time.sleep(min(0.1 * 2 ** attempt, 2.0))
                continue
            elapsed = (time.perf_counter() - started) * 1000
            if answer.status >= 500:
                self.stats.add("server_errors", {"rater": self.index, "method": method, "url": url, "fields": fields,
                                                 "status": answer.status, "body": _text(answer.body)[:500],
                                                 "at": time.strftime("%H:%M:%S")})
                server_errors += 1
                if server_errors >= 3:
                    raise ServerError(f"{method} {url} answered {answer.status} three times")
                time.sleep(0.5)
                continue
            if timing or method == "GET":
                self.stats.add(timing or "get_ms", elapsed)
            return answer
        raise ConnectionError(f"{method} {url}: no answer after {self.max_retries + 1} attempts")

    def follow(self, answer: Answer, hops: int = 10) -> Answer:
        """GET redirect targets on this site until a page arrives."""
        while answer.status in (301, 302, 303, 307, 308) and hops > 0:
            target = urljoin(answer.url, answer.headers.get("Location", ""))
            if urlsplit(target).netloc not in ("", f"{self.host}:{self.port}"):
                return answer
            path = _path(target)
            self.urls.append(path)
            answer = self.request("GET", path)
            hops -= 1
        return answer

    # --- forms ---------------------------------------------------------------------------------

    def _local(self, action: str, page_url: str) -> str | None:
        target = urljoin(page_url, action or page_url)
        return _path(target) if urlsplit(target).netloc in ("", f"{self.host}:{self.port}") else None

    def pick(self, page: Answer) -> tuple[str, Form, str] | None:
        """(kind, form, action path) of the form a person would fill on this page, or None.

        A form with rating scales (radio groups or selects) is an item until this rater has rated
        its share; after that the next such form is the closing questionnaire. Forms that post to
        another site (MTurk's externalSubmit) are never sent."""
        parsed = parse_page(page.body)
        posts = [(f, self._local(f.action, page.url)) for f in parsed.forms if f.method == "post"]
        posts = [(f, a) for f, a in posts if a is not None]
        scales = [(f, a) for f, a in posts if f.radio_groups() or f.selects]
        for form, action in posts:
            if form.has("password"):
                return "login", form, action
        if scales and self.rated < self.items:
            return "item", *scales[0]
        for form, action in posts:
            if form.has("checkbox") and not (form.radio_groups() or form.selects):
                return "consent", form, action
        if parsed.iframes and not scales:
            return "iframe", Form(action="", method="get"), self._local(parsed.iframes[0], page.url) or ""
        for form, action in scales or posts:
            if any(i["type"] not in ("hidden", "submit", "button") for i in form.inputs) or form.selects:
                return "questionnaire", form, action
        return None

    def fill(self, kind: str, form: Form) -> list[tuple[str, str]]:
        fields: list[tuple[str, str]] = []
        groups = form.radio_groups()
        for i in form.inputs:
            name, kind_of = i.get("name"), i["type"]
            if not name or kind_of in ("submit", "button", "image", "reset", "file", "radio"):
                continue
            if kind_of == "checkbox":
                fields.append((name, i["value"] or "on"))
            elif kind_of == "password":
                fields.append((name, self.password))
            elif kind_of == "number":
                low, high = int(float(i.get("min") or 0)), int(float(i.get("max") or 100))
                fields.append((name, str(self.rng.randint(low, min(high, low + 100)))))
            elif kind_of in ("text", "email", "textarea") and not i["value"]:
                fields.append((name, self.username if "user" in name.lower() else "benchmark answer"))
            else:  # hidden inputs (CSRF, per-assignment tokens, active_ms) and prefilled fields go back unchanged
                fields.append((name, i["value"]))
        for name, values in groups.items():
            fields.append((name, self.rng.choice(values)))
        for name, options in form.selects.items():
            chosen = [o for o in options if o]
            if chosen:
                fields.append((name, self.rng.choice(chosen)))
        return fields

    # --- the flow ------------------------------------------------------------------------------

    def run(self) -> None:
        try:
            self._run()
            if self.rated < self.items:
                self.stats.add("unfinished", {"rater": self.index, "rated": self.rated, "why": "the flow ended early",
                                              "last_url": self.urls[-1] if self.urls else None,
                                              "page": _text(self.last_body)[:300]})
        except (Deadline, ServerError, ConnectionError) as error:
            self.stats.add("unfinished", {"rater": self.index, "rated": self.rated,
                                          "why": f"{type(error).__name__}: {error}"})
        finally:
            if self.ready is not None:
                self.ready.arrive(self)  # a rater that failed early must not hold the others back

    def _run(self) -> None:
        self.urls.append(self.start_url)
        page = self.follow(self.request("GET", self.start_url))
        seen_item = False
        for _ in range(self.items * 6 + 20):  # bounded: a page loop cannot spin forever
            if page.status >= 400:
                self.stats.add("client_errors", {"rater": self.index, "url": page.url, "status": page.status,
                                                 "body": _text(page.body)[:300]})
                if page.status != 400 or not self.rated:
                    return
            self.last_body = page.body
            picked = self.pick(page)
            if picked is None:
                return
            kind, form, action = picked
            if kind == "iframe":
                self.urls.append(action)
                page = self.follow(self.request("GET", action))
                continue
            if kind == "item" and not seen_item:
                seen_item = True
                self.stats.add("first_item_at", time.monotonic())
                if self.ready is not None:
                    self.ready.arrive(self)
                    self.ready.wait(self.deadline)
            if kind == "item" and self.rated >= self.items:
                return
            if kind == "questionnaire" and not self.questionnaire:
                return
            fields = self.fill(kind, form)
            started = time.perf_counter()
            answer = self.request("POST", action, fields, timing="submit_ms" if kind == "item" else None)
            if kind == "item" and answer.status < 400:
                self.rated += 1
                ack = {"rater": self.index, "action": action, "fields": fields,
                       "urls": self.urls[-3:], "at": time.monotonic()}
                self.stats.add("acknowledged", ack)
                with self.stats.lock:
                    self.stats.last_ack_at = max(self.stats.last_ack_at, ack["at"])
                if self.rated >= self.items and not self.questionnaire:
                    return
            page = self.follow(answer)
            if kind == "item" and answer.status < 400:
                self.stats.add("cycle_ms", (time.perf_counter() - started) * 1000)
        self.stats.add("unfinished", {"rater": self.index, "rated": self.rated, "why": "page loop bound reached"})


def _path(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).strip()
