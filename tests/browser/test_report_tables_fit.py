"""ICC tables ran off sideways on the report page. On a desktop and on a
390 px phone, the report of a seven-condition experiment with ICC tables (the demo's four conditions
and three copies, under long titles; every <details> opened so the table of all six ICC forms is laid
out too) and a study's report are no wider than the window, and the ICC matrices reflow to fit their
box (cells wrap between value, CI and n) instead of needing a sideways scroll: one condition on the
phone, all seven on the desktop."""
import pytest

from studies.authoring import editing
from studies.authoring.demo import DEMO_EXPERIMENT, DEMO_PASSWORD, DEMO_USER, demo_load
from studies.models import Experiment
from tests.browser.conftest import log_in
from tests.browser.test_narrow_screens import OFFENDERS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG = "Walk designs × criteria: {} with labelled points, condition-{}"
# [matrix width, its box's width] of every ICC matrix on the page
MATRICES = "Array.from(document.querySelectorAll('table.icc')).map((t) => [t.scrollWidth, t.parentElement.clientWidth])"


@pytest.mark.parametrize("width", [1280, 390])
def test_report_pages_with_icc_tables_do_not_scroll_sideways(live_server, browser, width):
    demo_load()
    experiment = Experiment.objects.get(slug=DEMO_EXPERIMENT)
    for study in list(experiment.studies.order_by("pk"))[:3]:  # seven conditions, as in the walkthrough
        editing.study_duplicate(study=study, title=f"{study.title} again")
    for study in experiment.studies.all():
        study.title = LONG.format(study.design, study.pk)
        study.save(update_fields=["title"])
    phone = width < 700
    context = browser.new_context(viewport={"width": width, "height": 800}, is_mobile=phone, has_touch=phone)
    tab = context.new_page()
    try:
        log_in(tab, live_server, DEMO_USER, DEMO_PASSWORD)
        first = experiment.studies.order_by("pk").first().slug
        for path in (f"/experiments/{experiment.slug}/report/", f"/studies/{first}/report/"):
            assert tab.goto(live_server.url + path).status == 200
            tab.wait_for_load_state("networkidle")
            assert tab.locator("table.icc").count() >= 1, path  # the page does have ICC tables
            tab.evaluate("() => document.querySelectorAll('details').forEach((d) => { d.open = true; })")
            scroll, inner = tab.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
            assert scroll <= inner, f"{path} at {width}px: {scroll} > {inner}: {tab.evaluate(OFFENDERS)}"
            # and the matrices reflow to fit their box (one condition on the phone, all seven on the desktop)
            # rather than running off sideways; seven conditions on a phone may scroll inside their box
            if not (phone and "/experiments/" in path):
                matrices = tab.evaluate(MATRICES)
                assert all(w <= box for w, box in matrices), f"{path} at {width}px: {matrices}"
    finally:
        context.close()
