"""The MTurk HIT loaded in a cross-site frame whose origin the rater pages'
``frame-ancestors`` does not allow is refused by the browser, yet the entry request had already
created a "working" assignment that held places until its time limit. The entry now refuses such a
load (the browser says, with Sec-Fetch-Dest/Sec-Fetch-Site and the Referer, who is framing it)
before anything is stored; allowed frames (MTurk's sites, CONCORD_FRAME_ANCESTORS) and top-level
loads enter as before."""
import pytest
from django.test import Client

from studies.models import Assignment, Rater
from studies.rating import selectors as rater_selectors

pytestmark = pytest.mark.django_db

MTURK = "workerId=W{n}&assignmentId=A{n}&hitId=H1&turkSubmitTo=https://www.mturk.com"


def _framed(url: str, referer: str | None):
    headers = {"HTTP_SEC_FETCH_DEST": "iframe", "HTTP_SEC_FETCH_SITE": "cross-site"}
    if referer:
        headers["HTTP_REFERER"] = referer
    return Client().get(url, **headers)


@pytest.mark.parametrize("link", ["study", "experiment"])
def test_a_load_framed_by_a_site_not_allowed_creates_no_assignment(make_study, link):
    study = make_study("likert", platform="mturk", raters_per_item=1)
    base = f"/r/{study.slug}/" if link == "study" else f"/r/x/{study.experiment.slug}/"
    refused = _framed(f"{base}?{MTURK.format(n=1)}", "https://evil.example/hit?x=1")
    assert refused.status_code == 403
    assert "https://evil.example" in refused.content.decode()
    assert (Assignment.objects.count(), Rater.objects.count()) == (0, 0)
    assert rater_selectors.study_has_room(study)
    # MTurk's own worker site frames it: the worker enters as before
    allowed = _framed(f"{base}?{MTURK.format(n=2)}", "https://worker.mturk.com/projects/X/tasks/Y")
    assert allowed.status_code == 302 and Assignment.objects.count() == 1


def test_configured_origins_unknown_framers_and_top_level_loads_still_enter(make_study, settings):
    settings.CONCORD_FRAME_ANCESTORS = ["https://*.lab.example"]
    study = make_study("likert", platform="mturk", raters_per_item=3)
    url = f"/r/{study.slug}/?{MTURK.format(n=1)}"
    assert _framed(url, "https://hits.lab.example/").status_code == 302
    top = Client().get(f"/r/{study.slug}/?{MTURK.format(n=3)}", HTTP_SEC_FETCH_DEST="document",
                       HTTP_SEC_FETCH_SITE="cross-site", HTTP_REFERER="https://evil.example/")
    assert top.status_code == 302
    assert Assignment.objects.count() == 2


@pytest.mark.parametrize("link", ["study", "experiment"])
def test_a_framer_that_sends_no_referer_gets_a_start_link_and_nothing_is_stored(make_study, link):
    """A no-referrer framer may be allowed or not: nothing is stored on its load; the answer is a page
    (with the rater pages' frame-ancestors, so the browser shows it only to an allowed framer) whose link
    starts the task with a same-origin load."""
    study = make_study("likert", platform="mturk", raters_per_item=1)
    base = f"/r/{study.slug}/" if link == "study" else f"/r/x/{study.experiment.slug}/"
    url = f"{base}?{MTURK.format(n=1)}"
    hidden = _framed(url, None)
    assert hidden.status_code == 200 and 'data-testid="framed-start"' in hidden.content.decode()
    assert "frame-ancestors 'self' https://worker.mturk.com" in hidden["Content-Security-Policy"]
    assert (Assignment.objects.count(), Rater.objects.count()) == (0, 0)
    started = Client().get(url, HTTP_SEC_FETCH_DEST="iframe", HTTP_SEC_FETCH_SITE="same-origin")
    assert started.status_code == 302 and Assignment.objects.count() == 1
