"""Simulated raters that go through the real rater pages over HTTP: the entry link with platform
parameters, consent, every item, the questionnaire, up to the completion page. For demos and load
tests.

Forms are read generically from the HTML (every input, hidden ones included: CSRF or per-assignment
form tokens are sent back as the page gave them), and filled the way a person could: one choice per
radio group, a distinct rank per select when a group of selects ranks the same options (best-worst
scaling), different picks in a best and a worst radio group of the same question (best-worst tuples:
``...-best-<criterion>`` / ``...-worst-<criterion>``), a number within an input's min/max, a short
sentence in a required text box (``required`` or ``data-required``: a pairwise reason), every
checkbox ticked.
"""
from __future__ import annotations

import http.cookiejar
import random
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

REASONS = ("It reads more naturally.", "It follows on from the conversation.", "It is clearer.", "Hard to say.")
MAGNITUDE_CAP = 200  # typed magnitudes stay in a plausible range even when the allowed maximum is huge


@dataclass
class Form:
    action: str
    method: str
    fields: list[dict[str, Any]] = field(default_factory=list)
    selects: dict[str, list[str]] = field(default_factory=dict)


class FormParser(HTMLParser):
    """Every <form> of a page with its inputs, selects (and their options) and textareas."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.forms: list[Form] = []
        self._select: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = {k: (v if v is not None else "") for k, v in attrs}
        if tag == "form":
            self.forms.append(Form(action=attrs.get("action", ""), method=attrs.get("method", "get").lower()))
        elif not self.forms:
            return
        elif tag == "input" and attrs.get("name"):
            self.forms[-1].fields.append({"kind": attrs.get("type", "text").lower(), **attrs})
        elif tag == "textarea" and attrs.get("name"):
            self.forms[-1].fields.append({"kind": "textarea", **attrs})
        elif tag == "select" and attrs.get("name"):
            self._select = attrs["name"]
            self.forms[-1].selects.setdefault(self._select, [])
        elif tag == "option" and self._select is not None:
            self.forms[-1].selects[self._select].append(attrs.get("value", "\0text"))

    def handle_endtag(self, tag):
        if tag == "select":
            self._select = None


def parse_forms(html: str) -> list[Form]:
    parser = FormParser()
    parser.feed(html)
    return parser.forms


def _number(spec: dict, rng: random.Random) -> str:
    def bound(key, default):
        try:
            return float(spec.get(key, spec.get(f"data-{key}", default)))  # a text box for decimals: data-min/max
        except (TypeError, ValueError):
            return float(default)
    low, high = bound("min", 0), bound("max", MAGNITUDE_CAP)
    low, high = max(low, 1.0), min(high, max(low, 1.0) + MAGNITUDE_CAP)
    return str(rng.randint(int(low), int(max(low, high))))


def fill(form: Form, rng: random.Random) -> dict[str, str]:
    """Answers for a form, as a person might give them (see the module docstring)."""
    data: dict[str, str] = {}
    radios: dict[str, list[str]] = {}
    for spec in form.fields:
        kind, name = spec["kind"], spec["name"]
        if kind == "radio":
            radios.setdefault(name, []).append(spec.get("value", "on"))
        elif kind == "checkbox":
            data[name] = spec.get("value", "on")
        elif kind in ("number", "range") or spec.get("inputmode") in ("decimal", "numeric"):
            data[name] = spec.get("value") or _number(spec, rng)
        elif kind in ("submit", "button", "image", "reset", "file"):
            continue
        elif kind in ("text", "textarea") and not spec.get("value") and ("required" in spec or spec.get("data-required")):
            data[name] = rng.choice(REASONS)  # a required free text (a pairwise study's reason)
        else:  # hidden, text, textarea: keep what the page put there
            data[name] = spec.get("value", "")
    for name, values in radios.items():
        data[name] = rng.choice(values)
    for name, values in radios.items():  # the worst pick is not the best one (the page refuses that)
        best = name.replace("-worst-", "-best-", 1)
        if "-worst-" in name and best in radios and data[best] == data[name] and len(set(values)) > 1:
            data[name] = rng.choice([v for v in values if v != data[best]])
    groups: dict[tuple[str, ...], list[str]] = {}
    for name, options in form.selects.items():
        real = tuple(o for o in options if o not in ("", "\0text"))
        groups.setdefault(real, []).append(name)
    for options, names in groups.items():
        if not options:
            continue
        if len(options) > 1 and len(names) % len(options) == 0:  # rankings (one per criterion, in page order)
            for start in range(0, len(names), len(options)):
                chunk = names[start:start + len(options)]
                for name, value in zip(chunk, rng.sample(options, len(options)), strict=True):
                    data[name] = value
        else:
            for name in names:
                data[name] = rng.choice(options)
    return data


@dataclass
class Page:
    url: str
    status: int
    html: str


class DjangoSession:
    """In-process: Django's test client (CSRF enforced, cookies kept), against the configured database."""

    def __init__(self, host: str = "localhost"):
        from django.test import Client

        self.client = Client(enforce_csrf_checks=True, HTTP_HOST=host)

    def _page(self, response) -> Page:
        chain = getattr(response, "redirect_chain", [])
        url = chain[-1][0] if chain else response.request["PATH_INFO"]
        return Page(url=url, status=response.status_code, html=response.content.decode(errors="replace"))

    def get(self, url: str) -> Page:
        return self._page(self.client.get(url, follow=True))

    def post(self, url: str, data: dict[str, str]) -> Page:
        return self._page(self.client.post(url, data, follow=True))


class HttpSession:
    """Against a running server (``base_url``), with urllib and a cookie jar."""

    def __init__(self, base_url: str, timeout: float = 30):
        self.base_url, self.timeout = base_url.rstrip("/"), timeout
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))

    def _open(self, request) -> Page:
        try:
            with self.opener.open(request, timeout=self.timeout) as response:
                return Page(response.geturl(), response.status, response.read().decode(errors="replace"))
        except urllib.error.HTTPError as error:
            return Page(error.geturl(), error.code, error.read().decode(errors="replace"))

    def _absolute(self, url: str) -> str:
        return url if url.startswith("http") else self.base_url + url

    def get(self, url: str) -> Page:
        return self._open(urllib.request.Request(self._absolute(url)))

    def post(self, url: str, data: dict[str, str]) -> Page:
        url = self._absolute(url)
        origin = "{0.scheme}://{0.netloc}".format(urllib.parse.urlsplit(url))
        return self._open(urllib.request.Request(url, data=urllib.parse.urlencode(data).encode(), method="POST",
                                                 headers={"Referer": url, "Origin": origin}))


@dataclass
class RaterRun:
    rater: str
    completed: bool = False
    pages: int = 0
    seconds: float = 0.0
    problem: str = ""


def simulate_rater(session, *, study_slug: str, rater: str, entry: Mapping[str, str], rng: random.Random,
                   max_pages: int = 500) -> RaterRun:
    """One rater from the entry link (with the platform's ``entry`` parameters, see
    ``CrowdPlatform.simulated_entry``) to the completion page; stops at the first page that is not a
    form to fill (an error or refusal page) and says what it was."""
    result = RaterRun(rater=rater)
    started = time.perf_counter()
    page = session.get(f"/r/{study_slug}/?{urllib.parse.urlencode(entry)}")
    result.pages = 1
    while result.pages < max_pages:
        if page.status >= 400:
            result.problem = f"HTTP {page.status} at {page.url}"
            break
        if urllib.parse.urlsplit(page.url).path.rstrip("/").endswith("/done"):
            result.completed = True
            break
        forms = [f for f in parse_forms(page.html) if f.method == "post" and not f.action.startswith("http")]
        if not forms:
            result.problem = f"no form to fill at {page.url}"
            break
        form = forms[0]
        page = session.post(form.action or urllib.parse.urlsplit(page.url).path, fill(form, rng))
        result.pages += 1
    else:
        result.problem = f"gave up after {max_pages} pages"
    result.seconds = time.perf_counter() - started
    return result
