"""Playwright driving Debian's Chromium (headless, --no-sandbox) against pytest-django's live server.
Screenshots go to test-output/browser/. Tests skip with the reason where Chromium is not installed."""
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("CONCORD_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-output" / "browser"
# The documentation's screenshots are the browser tests' own (`make docs-screenshots` sets the variable): these
# screens are also written, at the viewport's size, to docs/img/screens/ for the guide's pages.
DOCS_SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "img" / "screens"
DOCS_SCREENS = {"item-likert", "item-rme", "item-bws", "item-pairwise", "item-acute-1280", "chat-1200"}
# Playwright's sync API runs an event loop in the test thread; the ORM calls made there are sync.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="session")
def browser():
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        pytest.skip(f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--headless"])
        instance.new_context = _patient(instance.new_context)
        yield instance
        instance.close()


# A report page computed cold (its statistics' first imports included) can take tens of seconds on a busy
# 2-core CI machine running two test workers: Playwright's 30 s default would fail a page that is only slow.
ACTION_TIMEOUT_MS = 60_000
NAVIGATION_TIMEOUT_MS = 120_000


def _patient(new_context):
    def made(*args, **kwargs):
        context = new_context(*args, **kwargs)
        context.set_default_timeout(ACTION_TIMEOUT_MS)
        context.set_default_navigation_timeout(NAVIGATION_TIMEOUT_MS)
        return context
    return made


class _Served:
    """Requests the live server is serving now: Django's ``ServerHandler.run`` (one request, from its
    parsed request line to its last byte written) counted in and out. An idle keep-alive connection's
    thread, waiting for a next request that may never come, is not counted."""
    lock = threading.Lock()
    now = 0

    @classmethod
    def counting(cls, run):
        def counted(handler, application):
            with cls.lock:
                cls.now += 1
            try:
                return run(handler, application)
            finally:
                with cls.lock:
                    cls.now -= 1
        return counted


@pytest.fixture(scope="session", autouse=True)
def _served_requests_counted():
    from django.core.servers.basehttp import ServerHandler

    original = ServerHandler.run
    ServerHandler.run = _Served.counting(original)
    yield
    ServerHandler.run = original


@pytest.fixture(autouse=True)
def _server_requests_end_before_the_database_is_flushed():
    """The live server shares the test's database connection with its request threads. A page that
    flushes answers on ``pagehide`` (rater.js sends a keepalive request) is still being served when its
    browser context closes; flushing the database under that request fails ("couldn't be flushed") and
    leaves rows for the next test. This fixture is set up before the tests' pages, so it is torn down
    after they close and before pytest-django flushes: it waits until no request has been in progress
    for two looks 50 ms apart (a request sent as the page closed may still be on its way in)."""
    yield
    deadline = time.monotonic() + 20
    quiet = 0
    while quiet < 2 and time.monotonic() < deadline:
        quiet = quiet + 1 if _Served.now == 0 else 0
        time.sleep(0.05)


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    tab = context.new_page()
    yield tab
    context.close()


@pytest.fixture
def screenshot():
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def take(tab, name: str) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        tab.screenshot(path=str(path), full_page=True)
        if name in DOCS_SCREENS and os.environ.get("CONCORD_DOCS_SCREENSHOTS"):
            DOCS_SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            tab.screenshot(path=str(DOCS_SCREENSHOTS / f"{name}.png"))
        return path
    return take


def log_in(tab, live_server, username: str, password: str) -> None:
    tab.goto(f"{live_server.url}/accounts/login/")
    tab.fill("#id_username", username)
    tab.fill("#id_password", password)
    tab.click("button[type=submit]")
    tab.wait_for_url(f"{live_server.url}/")


def wait_until(tab, expression: str, timeout: float = 30000) -> None:
    """Poll a JavaScript expression until it is true. Playwright's ``wait_for_function`` compiles its
    predicate with eval() inside the page, which the site's Content-Security-Policy (no 'unsafe-eval')
    forbids; ``evaluate`` goes through the DevTools protocol and is not subject to it."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    guarded = f"(() => {{ try {{ return !!({expression}); }} catch (error) {{ return false; }} }})()"
    deadline = time.monotonic() + timeout / 1000
    while not tab.evaluate(guarded):
        if time.monotonic() > deadline:
            raise PlaywrightTimeoutError(f"timed out after {timeout} ms waiting for {expression}")
        tab.wait_for_timeout(100)
