"""The rater flow inside a cross-site frame, as Mechanical Turk shows an ExternalQuestion: a page
on ``localhost`` frames the rater pages served on ``127.0.0.1`` (another site), in a Chromium whose
third-party cookies are blocked, so nothing may depend on cookies. Non-rater pages still refuse
to be framed."""
import html
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, urlsplit

import pytest

from studies.designs.common import field_name
from studies.models import Assignment, Rating
from tests.browser.conftest import CHROMIUM

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def no_third_party_cookies(browser):
    """A Chromium that blocks third-party cookies (the test flag for Chrome's cookie phase-out)."""
    strict = browser.browser_type.launch(
        executable_path=CHROMIUM, args=["--no-sandbox", "--headless", "--test-third-party-cookie-phaseout"])
    context = strict.new_context(viewport={"width": 1200, "height": 1000})
    yield context
    context.close()
    strict.close()


@pytest.fixture
def worker_site():
    """A page server on ``localhost`` (another site than the rater pages on 127.0.0.1) that frames
    the address given in ``?src=``, like MTurk's worker site framing an ExternalQuestion. It is a
    real server on the loopback address, so Chromium's local-network checks treat it as local."""
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            query = parse_qs(urlsplit(self.path).query)
            src = query.get("src", [""])[0]
            # ?policy=no-referrer: a framer that hides itself (no Referer on the frame's load)
            policy = ' referrerpolicy="no-referrer"' if query.get("policy") == ["no-referrer"] else ""
            body = (f'<!doctype html><title>Worker site</title><h1>Worker site</h1>'
                    f'<iframe id="task" src="{html.escape(src)}"{policy} width="1150" height="900"></iframe>').encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://localhost:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def framed_url(live_server) -> str:
    """The live server under the name 127.0.0.1, a different site from ``localhost``."""
    return live_server.url.replace("localhost", "127.0.0.1")


def test_the_rater_flow_works_in_a_cross_site_frame_without_cookies(live_server, worker_site, no_third_party_cookies,
                                                                    settings, make_study, screenshot):
    framed_origin = framed_url(live_server)
    assert framed_origin.startswith("http://127.0.0.1:") and worker_site.startswith("http://localhost:")
    settings.CONCORD_FRAME_ANCESTORS = [worker_site]
    study = make_study("likert", platform="mturk", raters_per_item=2, items_per_assignment=2)
    entry = (f"{framed_origin}/r/{study.slug}/?workerId=a1framedworker&assignmentId=ASGFRAME1&hitId=HITF"
             f"&turkSubmitTo=https%3A%2F%2Fworkersandbox.mturk.com")
    page = no_third_party_cookies.new_page()
    posts = []
    page.on("request", lambda r: posts.append(r) if r.method == "POST" else None)
    page.goto(f"{worker_site}/?src={quote(entry)}")
    frame = page.frame_locator("#task")
    frame.locator("input[name=agree]").check()
    frame.locator("button:has-text('Start')").click()
    task = None
    for _ in range(50):
        task = page.frame(url=re.compile(r".*/items/0/$"))
        if task is not None:
            break
        page.wait_for_timeout(100)
    assert task is not None, [f.url for f in page.frames]
    task.wait_for_selector(".likert-row")
    given = {}
    for i, row in enumerate(task.locator(".likert-row").all()):
        value = i % 6 + 1
        row.locator(f"label.point:has(input[value='{value}'])").click()
        given[row.get_attribute("data-field")] = value
    task.locator(".autosave:has-text('Saved')").wait_for()  # the autosave POST worked too
    task.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "item-likert-framed")
    task.locator("form#item-form button[type=submit]").click()
    for _ in range(50):
        if any(f.url.endswith("/items/1/") for f in page.frames):
            break
        page.wait_for_timeout(100)
    assert any(f.url.endswith("/items/1/") for f in page.frames), [f.url for f in page.frames]

    assignment = Assignment.objects.get()
    assert (assignment.rater.external_id, assignment.acceptance_id) == ("A1FRAMEDWORKER", "ASGFRAME1")
    assert assignment.consented_at is not None
    order = assignment.assignment_items.get(position=0).response_order
    stored = {field_name(r, c, order): int(v) for r, c, v in
              Rating.objects.filter(assignment=assignment).values_list("response_id", "criterion__name", "value")}
    assert stored == given and len(stored) == 8
    # consent, autosave and item: three kinds of POST, none carried a cookie
    rater_posts = [r for r in posts if "/r/a/" in r.url]
    assert {r.url.rsplit("/", 2)[-2] for r in rater_posts} >= {assignment.token, "0", "draft"}
    assert all("cookie" not in r.all_headers() for r in rater_posts)
    assert no_third_party_cookies.cookies(framed_origin) == []


def test_researcher_pages_refuse_to_be_framed(live_server, worker_site, no_third_party_cookies, settings, make_study):
    settings.CONCORD_FRAME_ANCESTORS = [worker_site]
    study = make_study("likert", platform="mturk")
    for path, framed in ((f"/r/{study.slug}/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=H", True),
                         ("/accounts/login/", False)):
        page = no_third_party_cookies.new_page()
        responses = []
        page.on("response", lambda r, seen=responses: seen.append(r) if r.url.startswith(framed_url(live_server)) else None)
        page.goto(f"{worker_site}/?src={quote(framed_url(live_server) + path)}")
        page.wait_for_load_state("load")
        page.wait_for_timeout(300)
        shown = page.frame_locator("#task").locator("main, form").count() > 0
        assert shown is framed, (path, [f.url for f in page.frames])
        headers = responses[0].all_headers()
        if framed:
            assert "x-frame-options" not in headers and worker_site in headers["content-security-policy"]
        else:
            assert headers["x-frame-options"] == "DENY"
        page.close()


@pytest.mark.parametrize("policy", ["default", "no-referrer"])
def test_a_frame_the_rater_pages_may_not_be_shown_in_makes_no_assignment(live_server, worker_site, policy,
                                                                          no_third_party_cookies, settings, make_study):
    """A worker site that frame-ancestors does not name frames the HIT: Chromium refuses to
    show it, and the entry (told by Sec-Fetch-Dest and the Referer who frames it) stores nothing, so no
    "working" assignment holds a place until its time limit. A framer that sends no Referer is not
    known: the entry stores nothing either and answers with a start link the browser does not show."""
    settings.CONCORD_FRAME_ANCESTORS = []
    study = make_study("likert", platform="mturk", raters_per_item=1, items_per_assignment=2)
    entry = (f"{framed_url(live_server)}/r/{study.slug}/?workerId=a1refusedworker&assignmentId=ASGREFUSED1&hitId=HITF"
             f"&turkSubmitTo=https%3A%2F%2Fworkersandbox.mturk.com")
    page = no_third_party_cookies.new_page()
    statuses = []
    page.on("response", lambda r: statuses.append(r.status) if r.url.startswith(framed_url(live_server)) else None)
    page.goto(f"{worker_site}/?src={quote(entry)}&policy={policy}")
    page.wait_for_load_state("load")
    page.wait_for_timeout(500)
    assert statuses and statuses[0] == (403 if policy == "default" else 200), statuses
    assert page.frame_locator("#task").locator("main, form").count() == 0  # the browser did not show it
    assert not Assignment.objects.exists()
    page.close()


def test_an_allowed_framer_that_sends_no_referer_starts_from_a_link(live_server, worker_site, no_third_party_cookies,
                                                                     settings, make_study):
    """A framer the policy allows but that hides itself (``referrerpolicy="no-referrer"``): nothing is
    stored on the framed load; the page it is shown offers the start, and the start makes the assignment."""
    settings.CONCORD_FRAME_ANCESTORS = [worker_site]
    study = make_study("likert", platform="mturk", raters_per_item=1, items_per_assignment=2)
    entry = (f"{framed_url(live_server)}/r/{study.slug}/?workerId=a1hiddenworker&assignmentId=ASGHIDDEN1&hitId=HITF"
             f"&turkSubmitTo=https%3A%2F%2Fworkersandbox.mturk.com")
    page = no_third_party_cookies.new_page()
    page.goto(f"{worker_site}/?src={quote(entry)}&policy=no-referrer")
    frame = page.frame_locator("#task")
    frame.get_by_test_id("framed-start").wait_for()
    assert not Assignment.objects.exists()
    frame.get_by_test_id("framed-start").click()
    frame.locator("input[name=agree]").wait_for()
    assert Assignment.objects.get().acceptance_id == "ASGHIDDEN1"
    page.close()
