"""Every researcher page (and the rater pages) on a 375 px wide phone: nothing wider than the screen,
so no page scrolls sideways; wide tables scroll inside their own box instead."""
import pytest

from studies.authoring.demo import DEMO_EXPERIMENT, DEMO_PASSWORD, DEMO_USER, demo_load
from studies.models import Experiment
from tests.browser.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTH = 375
# The elements that stick out past the right edge of the page, to name the culprit when one does.
OFFENDERS = """() => Array.from(document.querySelectorAll('body *'))
  .filter((el) => el.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5
                  && !el.closest('.scroll, .table-scroll, figure.plot, pre'))
  .slice(0, 5).map((el) => `${el.tagName.toLowerCase()}.${el.className} ${Math.round(el.getBoundingClientRect().right)}px`)"""


def researcher_pages(live_server) -> list[str]:
    experiment = Experiment.objects.get(slug=DEMO_EXPERIMENT)
    studies = list(experiment.studies.order_by("pk"))
    pages = ["/", f"/experiments/{experiment.slug}/studies/new/",
             f"/experiments/{experiment.slug}/report/", "/import/", "/metrics/",
             f"/experiments/{experiment.slug}/metrics/readability/"]
    for study in studies:
        pages.append(f"/studies/{study.slug}/")
    first = studies[0].slug
    pages += [f"/studies/{first}/report/", f"/studies/{first}/checks/", f"/studies/{first}/crowd/",
              f"/studies/{first}/preview/", f"/studies/{first}/edit/", f"/studies/{first}/browse/"]
    return [live_server.url + p for p in pages]


def test_researcher_pages_fit_a_375px_phone(live_server, browser, screenshot):
    demo_load()
    context = browser.new_context(viewport={"width": WIDTH, "height": 740}, is_mobile=True, has_touch=True,
                                  device_scale_factor=2)
    tab = context.new_page()
    try:
        log_in(tab, live_server, DEMO_USER, DEMO_PASSWORD)
        tab.goto(f"{live_server.url}/metrics/")  # makes the default metric models the metric pages name
        too_wide = {}
        for url in researcher_pages(live_server):
            response = tab.goto(url)
            assert response.status == 200, url
            tab.wait_for_load_state("networkidle")
            width = tab.evaluate("document.documentElement.scrollWidth")
            if url.endswith(("/studies/demo-bws/", f"{live_server.url}/")):
                screenshot(tab, "narrow-" + (url.rstrip("/").rsplit("/", 1)[-1] if "studies" in url else "experiments"))
            if width > WIDTH:
                too_wide[url.removeprefix(live_server.url)] = (width, tab.evaluate(OFFENDERS))
        assert too_wide == {}, "\n".join(f"{k}: {v}" for k, v in too_wide.items())
    finally:
        context.close()
