"""No JSON anywhere in the UI. A hand-written practice item (the study page's Practice card) and
a hand-written check item (an instructed check, the checks page) take their expected answer from rule rows
(``studies.authoring.rule_rows``): a question, a response by its letter, what it expects and the value,
labels or other response, all chosen by controls. The rows make exactly the rules the API takes, and the
items are stored as the API (or the service it calls) stores them."""
import re

import pytest
from django.http import QueryDict

from studies.authoring.rule_rows import rules_from_rows, rules_text
from studies.models import PracticeItem
from studies.onboarding import services as onboarding
from studies.rating import check_rules

pytestmark = pytest.mark.django_db

CONTEXT = "A: Where do you live?\nB: In a small town."
TEXTS = ["This is an attention check: please choose 2 for this response.", "I like towns.",
         "Towns are quiet at night.", "We moved there last year."]


def rows(*rules):
    """Rule rows as the form's controls post them (a multi-label row's ticks repeat its field)."""
    post = QueryDict(mutable=True)
    for i, fields in enumerate(rules):
        for key, value in fields.items():
            post.setlist(f"rule-{i}-{key}", value if isinstance(value, list) else [value])
    return post


def test_rule_rows_make_the_rules_the_api_takes():
    post = rows({"criterion": "readability", "response": "1", "expects": "value", "value": "2"},
                {"response": "2", "expects": "value", "value": "4", "tolerance": "1"},
                {"response": "3", "expects": "between", "value": "2", "to": "3.5"},
                {"expects": ""},  # a blank row is left out
                {"response": "2", "expects": "greater", "than": "4"})
    post.update(rows({}, {}, {}, {}, {}, {"response": "1", "expects": "max", "value": "3"}))
    rules, numbers, problems = rules_from_rows(post)
    assert problems == {} and numbers == [1, 2, 3]  # only the first four rows are read
    assert rules == [{"criterion": "readability", "response": 1, "value": 2.0}, {"response": 2, "min": 3.0, "max": 5.0},
                     {"response": 3, "min": 2.0, "max": 3.5}]
    labelled, _, problems = rules_from_rows(rows(
        {"criterion": "safety", "response": "2", "expects": "label", "label": "unsafe"},
        {"criterion": "problems", "response": "1", "expects": "labels", "labels": ["repetition", "off-topic"]},
        {"criterion": "problems", "response": "2", "expects": "labels"}, {"response": "3", "expects": "best"}))
    assert problems == {} and labelled == [
        {"criterion": "safety", "response": 2, "label": "unsafe"},
        {"criterion": "problems", "response": 1, "labels": ["repetition", "off-topic"]},
        {"criterion": "problems", "response": 2, "labels": []}, {"best": 3}]
    assert rules_text(labelled, {"safety": "Is it safe?"}) == [
        "Is it safe?: Response B: unsafe", "problems: Response A: repetition, off-topic",
        "problems: Response B: none of these", "Response C ranked best"]
    _, _, problems = rules_from_rows(rows({"response": "1", "expects": "value", "value": "two"},
                                          {"response": "1", "expects": "label"}, {"expects": "value", "value": "2"}))
    assert problems["rules"] == ("rule 1: the value must be a number, not “two”; rule 2: choose the label; "
                                 "rule 3: choose a response")
    assert rules_from_rows(rows())[2] == {"rules": "add at least one rule: choose a response and what it is "
                                                   "expected to get"}


def test_an_instructed_check_by_controls_is_stored_as_through_the_api(client, user, api, make_study):
    page_study = make_study("likert", publish=False, raters_per_item=3, items_per_assignment=4)
    api_study = make_study("likert", publish=False, raters_per_item=3, items_per_assignment=4)
    client.force_login(user)
    url = f"/studies/{page_study.slug}/checks/"
    form = client.get(url).content.decode()
    assert 'data-testid="rule-rows"' in form and "JSON" not in form and 'name="rules"' not in form
    assert re.search(r'<select name="rule-0-expects"[^>]*>.*?<option value="value">is exactly</option>', form, re.S)
    client.post(url + "create/", {
        "kind": "instructed", "context": CONTEXT, "responses": "\n".join(TEXTS),
        **{f"rule-0-{k}": v for k, v in {"criterion": "readability", "response": "1", "expects": "value",
                                          "value": "2"}.items()},
        **{f"rule-1-{k}": v for k, v in {"criterion": "coherence", "response": "1", "expects": "value", "value": "2",
                                          "tolerance": "1"}.items()}})
    made = api.post(f"/api/studies/{api_study.slug}/checks/create/", {
        "kind": "instructed", "context": CONTEXT, "responses": TEXTS,
        "rules": [{"criterion": "readability", "response": 1, "value": 2},
                  {"criterion": "coherence", "response": 1, "min": 1, "max": 3}]}, format="json")
    assert made.status_code == 201
    by_page, by_api = (study.items.get(check_kind="instructed") for study in (page_study, api_study))
    assert check_rules.rules_display(by_page) == check_rules.rules_display(by_api) == made.json()["rules"]
    assert [r.text for r in (link.response for link in by_page.item_responses.order_by("position"))] == TEXTS
    listed = client.get(url).content.decode()  # the rules in the raters' words, not as JSON
    expected = re.search(r'data-testid="check-expected">(.*?)</ul>', listed, re.S).group(1)
    lines = [line.strip() for line in re.findall(r"<li>([^<]*)", expected)]  # each rule's words (a Drop form follows)
    assert [line.split(": ", 1)[1] for line in lines] == ["Response A: 2", "Response A: from 1 to 3"]
    assert "{&#x27;" not in listed and "&quot;response" not in listed


def test_a_practice_rule_by_controls_is_stored_as_through_the_service_the_api_reads(client, user, api, make_study):
    page_study = make_study("likert", publish=False)
    api_study = make_study("likert", publish=False)
    client.force_login(user)
    card = client.get(f"/studies/{page_study.slug}/").content.decode()
    practice_card = card[card.index('data-testid="practice-card"'):]
    assert 'data-testid="rule-rows"' in practice_card and 'name="rules"' not in practice_card
    assert "JSON" not in practice_card[:practice_card.index("</section>")]
    client.post(f"/studies/{page_study.slug}/practice/create/", {
        "context": CONTEXT, "responses": "\n".join(TEXTS[1:3]), "explanation": "A is on topic.",
        "rule-0-response": "1", "rule-0-expects": "greater", "rule-0-than": "2",
        "rule-1-response": "2", "rule-1-expects": "max", "rule-1-value": "3"})
    onboarding.practice_item_create(study=api_study, context=CONTEXT, responses=TEXTS[1:3], explanation="A is on topic.",
                                    rules=[{"greater": 1, "than": 2}, {"response": 2, "max": 3}])
    by_page, by_api = (api.get(f"/api/studies/{s.slug}/practice/").json()["items"] for s in (page_study, api_study))
    assert len(by_page) == 1 and by_page[0]["rules"] == by_api[0]["rules"] == [{"greater": 1, "than": 2},
                                                                                {"response": 2, "max": 3.0}]
    assert by_page[0]["responses"] == by_api[0]["responses"] == TEXTS[1:3]
    shown = client.get(f"/studies/{page_study.slug}/").content.decode()
    assert "Response A above Response B; Response B: at most 3" in shown and PracticeItem.objects.count() == 2
