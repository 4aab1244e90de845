"""Walkthrough, Polish: raters never see which condition they are in (tab title, default HIT title,
refusal pages), and every page has a favicon."""
import re

import pytest
from django.contrib.staticfiles import finders
from django.test import Client

from crowd.platforms import PLATFORMS
from studies.authoring import services as authoring
from tests.factories import prolific_id

pytestmark = pytest.mark.django_db


def query(name: str) -> dict:
    return {"PROLIFIC_PID": prolific_id(name), "SESSION_ID": prolific_id(name + "-s")}


@pytest.fixture
def conditions(user, make_study):
    experiment = authoring.experiment_create(owner=user, title="Wording experiment")
    return [make_study(design, platform="prolific", experiment=experiment) for design in ("likert", "rme")]


def test_the_start_page_title_does_not_name_the_condition(conditions):
    study = conditions[0]
    client = Client()
    start = client.get(client.get(f"/r/{study.slug}/", query("a"))["Location"])
    title = re.search(r"<title>(.*?)</title>", start.content.decode(), re.S).group(1)
    assert study.title not in start.content.decode() and "study" not in title.lower()


def test_a_second_condition_is_refused_without_naming_conditions(conditions):
    first, second = conditions
    assert Client().get(f"/r/{first.slug}/", query("b")).status_code == 302
    refused = Client().get(f"/r/{second.slug}/", query("b"))
    page = refused.content.decode()
    assert refused.status_code == 403 and "already taken part" in page
    assert "condition" not in page.lower() and second.title not in page and first.title not in page


def test_the_default_hit_title_is_not_the_condition_title(conditions):
    from crowd.models import Publication

    study = conditions[0]
    publication = Publication.objects.create(study=study, platform="prolific", sandbox=False)
    title = PLATFORMS["prolific"].effective_settings(publication)["title"]
    assert study.title not in title and title


@pytest.mark.parametrize("page", ["/accounts/login/", "rater"])
def test_every_page_links_the_favicon(conditions, page):
    if page == "rater":
        client = Client()
        page = client.get(f"/r/{conditions[0].slug}/", query("c"))["Location"]
        html = client.get(page).content.decode()
    else:
        html = Client().get(page).content.decode()
    link = re.search(r'<link rel="icon" href="([^"]+)"', html)
    assert link and link.group(1).endswith("favicon.svg")
    assert finders.find("concord/favicon.svg")


@pytest.mark.parametrize(("design", "label"), [("likert", "Conversation 1 of"), ("bws_tuples", "Set of responses 1 of"),
                                               ("pairwise", "Pair of responses 1 of")])
def test_the_progress_line_names_what_a_screen_shows(make_study, design, label):
    study = make_study(design, platform="prolific")
    client = Client()
    token = client.get(f"/r/{study.slug}/", query("p-" + design))["Location"].split("/")[3]
    from studies.rating import form_tokens

    client.post(f"/r/a/{token}/", {"agree": "yes", "form_token": form_tokens.form_token(token, "consent")})
    page = client.get(f"/r/a/{token}/items/0/").content.decode()
    assert label in page and (design == "likert" or "Conversation 1 of" not in page)
