"""ACUTE-Eval in the study builder: the new-study page shows the questions raters will read (never empty
question boxes), choosing ACUTE-Eval brings the paper's four questions (Li, Weston and Roller 2019) and
the dialogue unit, the questions stay editable, a blank short name is made from its question, and every
design is explained in one line."""
import html
import json
import re

import pytest

from studies.authoring import services as authoring
from studies.designs import DESIGNS
from studies.designs.acute import ACUTE_CRITERIA
from studies.models import Design

pytestmark = pytest.mark.django_db


@pytest.fixture
def researcher(client, user):
    client.force_login(user)
    authoring.experiment_create(owner=user, title="E", slug="e")
    return client


def page_rows(page: str) -> list[tuple[str, str]]:
    names = re.findall(r'name="c-(\d+)-name" value="([^"]*)"', page)
    questions = dict(re.findall(r'name="c-(\d+)-question" value="([^"]*)"', page))
    return [(html.unescape(name), html.unescape(questions[n])) for n, name in names if n != "__n__"]


def defaults_of(page: str) -> dict:
    return json.loads(re.search(r'<script id="builder-defaults" type="application/json">(.*?)</script>', page,
                                re.S).group(1))


def form(design="acute", **changes):
    data = {"title": "ACUTE", "design": design, "unit": "response", "raters_per_item": 3, "items_per_assignment": 4,
            "platform": "invite", "likert_points": 6}
    data.update(changes)
    return data


def posted_rows(rows):
    data = {}
    for n, row in enumerate(rows):
        data.update({f"c-{n}-{key}": value for key, value in row.items()})
    return data


def test_acute_builder_new_study_page_shows_filled_questions_and_every_designs_defaults(researcher):
    page = researcher.get("/experiments/e/studies/new/").content.decode()
    rows = page_rows(page)
    assert rows == [("readability", "How readable is this response?"),
                    ("coherence", "How coherent is this response with the conversation so far?")]
    defaults = defaults_of(page)
    assert [(r["name"], r["question"]) for r in defaults["rows"]["acute:dialogue"]] == \
        [(c["name"], c["question"]) for c in ACUTE_CRITERIA]
    assert defaults["units"]["acute"] == ["dialogue"] and "acute:response" not in defaults["rows"]
    assert defaults["rows"]["likert:dialogue"][0]["question"] == "How readable is this dialogue?"
    assert 'data-testid="builder-prefilled"' in page


def test_acute_builder_untouched_rows_give_the_papers_four_questions_and_the_dialogue_unit(researcher):
    shown = page_rows(researcher.get("/experiments/e/studies/new/").content.decode())
    untouched = posted_rows([{"name": n, "question": q, "kind": "scale",
                              "help": "Is it fluent, grammatical and easy to understand, whatever the conversation?"
                              if n == "readability" else
                              "Does it follow on from what was said, staying on topic and making sense as a reply?"}
                             for n, q in shown])
    response = researcher.post("/experiments/e/studies/new/", {**form(), **untouched})
    assert response.status_code == 302, response.content.decode()[:3000]
    study = authoring.Study.objects.get(title="ACUTE")
    assert study.design == "acute" and study.unit == "dialogue"
    assert list(study.criteria.order_by("position").values_list("name", "question")) == \
        [(c["name"], c["question"]) for c in ACUTE_CRITERIA]


def test_acute_builder_questions_are_editable_and_a_blank_name_follows_the_question(researcher):
    rows = [{"name": "engagingness", "question": "Who would you rather keep talking to?", "kind": "scale"},
            {"name": "", "question": "Which speaker is kinder?", "kind": "scale"}]
    response = researcher.post("/experiments/e/studies/new/", {**form(unit="dialogue"), **posted_rows(rows)})
    assert response.status_code == 302
    study = authoring.Study.objects.get(title="ACUTE")
    assert list(study.criteria.order_by("position").values_list("name", "question")) == [
        ("engagingness", "Who would you rather keep talking to?"), ("which-speaker-is-kinder", "Which speaker is kinder?")]


def test_acute_builder_a_unit_the_design_cannot_judge_is_refused_when_chosen_on_purpose(researcher):
    response = researcher.post("/experiments/e/studies/new/", {**form(unit="chat"), "criteria": "engagingness"})
    assert response.status_code == 200 and not authoring.Study.objects.exists()
    assert "ACUTE" in response.content.decode()


def test_acute_builder_likert_on_dialogues_with_untouched_rows_asks_of_the_dialogue(researcher):
    shown = page_rows(researcher.get("/experiments/e/studies/new/").content.decode())
    untouched = posted_rows([{"name": n, "question": q, "kind": "scale",
                              "help": "Is it fluent, grammatical and easy to understand, whatever the conversation?"
                              if n == "readability" else
                              "Does it follow on from what was said, staying on topic and making sense as a reply?"}
                             for n, q in shown])
    response = researcher.post("/experiments/e/studies/new/", {**form("likert", unit="dialogue"), **untouched})
    assert response.status_code == 302
    questions = list(authoring.Study.objects.get().criteria.order_by("position").values_list("question", flat=True))
    assert questions == ["How readable is this dialogue?", "How coherent is this dialogue as a whole?"]


def test_acute_builder_every_design_is_explained_in_one_line(researcher):
    page = researcher.get("/experiments/e/studies/new/").content.decode()
    explained = dict(re.findall(r'<dd data-design-explained="([a-z_]+)">([^<]*)</dd>', page))
    assert set(explained) == set(DESIGNS) >= {"pairwise", "acute", "bws_tuples"}
    for key, line in explained.items():
        assert html.unescape(line) == DESIGNS[key].explanation and "\n" not in line
        assert f"<dt>{html.escape(Design(key).label)}</dt>" in page
