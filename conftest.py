"""Root pytest configuration: shared fixtures for every test package."""
import pytest


@pytest.fixture(autouse=True)
def _isolated_media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture(autouse=True)
def _empty_cache():
    """Reports are cached by a version of their data; a rolled-back test can leave ids that a later
    test reuses, so every test starts and ends with an empty cache."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


BROWSER_TESTS = "tests/browser/"
ENABLE_BROWSER_TESTS = "sudo apt-get install -y chromium"


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """A skipped browser test is easy to miss among the `-ra` lines, and a fresh machine without
    Chromium would otherwise pass `make test` having never driven a page: say so in a banner, after
    pytest's own short summary (this wrapper is outermost, so its second half runs last)."""
    yield
    skipped = [report for report in terminalreporter.stats.get("skipped", [])
               if getattr(report, "nodeid", "").startswith(BROWSER_TESTS)
               or BROWSER_TESTS in str(getattr(report, "location", ("",))[0])]
    if not skipped:
        return
    terminalreporter.write_sep("!", f"{len(skipped)} BROWSER TESTS WERE SKIPPED", red=True, bold=True)
    terminalreporter.write_line("No rater or researcher page was driven in a browser (Chromium is not installed).",
                                red=True, bold=True)
    terminalreporter.write_line(f"Enable them with:  {ENABLE_BROWSER_TESTS}", bold=True)
    terminalreporter.write_line("(or point CONCORD_CHROMIUM at an existing Chromium binary)")
    terminalreporter.write_sep("!", red=True, bold=True)
