"""The simulated rater of benchmarks/http_load.py reads forms generically, keeps hidden inputs, accepts
a submit answered by the next form or by a redirect, and resends a request whose connection died."""
from __future__ import annotations

import http.client
import time
from email.message import Message
from urllib.parse import parse_qsl

from benchmarks.http_rater import Answer, CookieJar, Rater, Stats

CONSENT = '<form method="post"><input type="hidden" name="csrfmiddlewaretoken" value="c1">' \
          '<input type="checkbox" name="agree" value="yes"><button type="submit">Start</button></form>'


def item(n: int) -> str:
    scales = "".join(f'<input type="radio" name="r{r}-clarity" value="{p}">' for r in (7, 8) for p in (1, 2, 3))
    return (f'<form method="post" action="/a/tok/items/{n}/"><input type="hidden" name="form_token" value="ft{n}">'
            f'<input type="hidden" name="active_ms" value="0">{scales}<button>Next</button></form>'
            '<form method="post" action="https://workersandbox.mturk.com/mturk/externalSubmit">'
            '<input type="radio" name="x" value="1"></form>')


def answer(status: int, body: str = "", location: str | None = None, url: str = "") -> Answer:
    headers = Message()
    if location:
        headers["Location"] = location
    headers["Set-Cookie"] = "csrftoken=c1; Path=/"
    return Answer(status, headers, body, url)


class FakeSite:
    """Entry redirects to consent; item 0's submit answers with item 1's form directly (200); item 1's
    first submit loses its connection, the resent one is redirected to the questionnaire."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, dict]] = []
        self.dropped = False

    def __call__(self, method: str, url: str, body: bytes | None) -> Answer:
        fields = dict(parse_qsl(body.decode())) if body else {}
        self.sent.append((method, url, fields))
        if url == "/entry":
            return answer(302, location="/a/tok/start/", url=url)
        if url == "/a/tok/start/":
            return answer(200, CONSENT, url=url) if method == "GET" else answer(302, location="/a/tok/items/0/", url=url)
        if url == "/a/tok/items/0/":
            return answer(200, item(0), url=url) if method == "GET" else answer(200, item(1), url=url)
        if url == "/a/tok/items/1/" and method == "POST":
            if not self.dropped:
                self.dropped = True
                raise http.client.RemoteDisconnected("worker killed")
            return answer(302, location="/a/tok/questionnaire/", url=url)
        return answer(404, "not here", url=url)


def run_rater(site: FakeSite, items: int = 2) -> tuple[Rater, Stats]:
    stats = Stats()
    rater = Rater(index=0, host="127.0.0.1", port=1, start_url="/entry", items=items, stats=stats,
                  deadline=time.monotonic() + 30)
    rater._once = site  # no network: the fake site answers
    rater.run()
    return rater, stats


def test_rates_every_item_whether_the_submit_answers_with_the_next_form_or_a_redirect():
    site = FakeSite()
    rater, stats = run_rater(site)
    posts = [(url, fields) for method, url, fields in site.sent if method == "POST"]
    assert [url for url, _ in posts] == ["/a/tok/start/", "/a/tok/items/0/", "/a/tok/items/1/", "/a/tok/items/1/"]
    assert posts[0][1] == {"csrfmiddlewaretoken": "c1", "agree": "yes"}
    assert [a["action"] for a in stats.acknowledged] == ["/a/tok/items/0/", "/a/tok/items/1/"]
    assert rater.rated == 2 and not stats.unfinished


def test_item_form_keeps_hidden_inputs_and_answers_every_scale_once():
    site = FakeSite()
    _, stats = run_rater(site)
    first = dict(stats.acknowledged[0]["fields"])
    assert first["form_token"] == "ft0" and first["active_ms"] == "0"
    assert {k for k in first if k.startswith("r")} == {"r7-clarity", "r8-clarity"}
    assert all(first[k] in {"1", "2", "3"} for k in ("r7-clarity", "r8-clarity"))
    assert "x" not in first  # the off-site (MTurk) form is never filled


def test_a_submit_whose_connection_died_is_sent_again_unchanged():
    site = FakeSite()
    _, stats = run_rater(site)
    resent = [fields for method, url, fields in site.sent if method == "POST" and url == "/a/tok/items/1/"]
    assert len(resent) == 2 and resent[0] == resent[1]
    assert stats.retries == 1 and stats.connection_errors == {"RemoteDisconnected": 1}
    assert len(stats.acknowledged) == 2


def test_a_flow_that_ends_before_the_items_are_rated_is_reported():
    site = FakeSite()
    _, stats = run_rater(site, items=3)  # the questionnaire's 404 comes before a third item
    assert stats.unfinished and stats.unfinished[0]["rated"] == 2


def test_cookie_jar_keeps_set_cookies_and_forgets_deleted_ones():
    jar = CookieJar()
    jar.update(["csrftoken=abc; Path=/; SameSite=Lax", "sessionid=s1; HttpOnly; Path=/"])
    assert jar.header() == "csrftoken=abc; sessionid=s1"
    jar.update(['sessionid=""; expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; Path=/'])
    assert jar.header() == "csrftoken=abc"
