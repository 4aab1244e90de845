"""What a rater's item page and answer cost the server: a fixed small number of queries for
a pairwise study too (tests/studies/test_rater_views.py counts a Likert study's), no query on the hot
path joining or sorting tables it does not read, and the Likert points written by a tag with the
markup the template loop gave."""
import re

import pytest
from django.db import connection
from django.template import Context, Template
from django.test import Client
from django.test.utils import CaptureQueriesContext

from studies.designs.rater_reads import item_response_texts, study_criteria
from studies.models import Assignment, Comparison
from studies.rating import form_tokens
from studies.templatetags.rater_forms import likert_points
from tests.studies.test_rater_views import enter, likert_answers, post_item

pytestmark = pytest.mark.django_db
CRITERIA = ("readability", "coherence")


def pairwise_answers(choice="left"):
    return {f"choice-{c}": choice for c in CRITERIA}


def test_a_pairwise_item_costs_a_fixed_small_number_of_queries(make_study, django_assert_max_num_queries):
    """The GET reads its slot with everything in one query and notes when it was first shown; the
    POST reads its slot and the next one, locks and re-reads the slot, inserts the choices in one
    statement, marks the slot, and answers with the next page (noting when it was first shown); under
    the test's transaction the service's atomic block adds a SAVEPOINT and a RELEASE. Response texts
    and the criteria come from the cache once first raters have seen the study and its items."""
    study = make_study("pairwise", platform="prolific", raters_per_item=10, items_per_assignment=4)
    study_criteria(study)  # what the study's and the items' first raters leave in the cache
    for item in study.items.all():
        item_response_texts(item.pk, item.item_responses.values_list("response_id", flat=True))
    client = Client()
    assignment = enter(client, study, "PROLIFIC_PID=9f82f7b375f4aa1bd7d50abe&SESSION_ID=6b86b273ff34fce19d6b804e")
    slots = list(assignment.assignment_items.order_by("position"))
    assert len(slots) >= 3
    with django_assert_max_num_queries(2):  # slot with everything, started_at
        assert client.get(f"/r/a/{assignment.token}/items/0/").status_code == 200
    for slot in slots[:-1]:
        with django_assert_max_num_queries(7):  # read; SAVEPOINT, locked read, insert, slot, RELEASE; next opened
            answer = post_item(client, assignment, slot.position, pairwise_answers())
        assert answer.status_code == 200, answer.content.decode()[:500]
        assert f"Item {slot.position + 2} of {len(slots)}" in answer.content.decode()
        with django_assert_max_num_queries(2):  # back to an answered item: its choices are read
            page = client.get(f"/r/a/{assignment.token}/items/{slot.position}/").content.decode()
        assert len(re.findall(r'value="left"\s+checked', page)) == 2
    assert Comparison.objects.filter(assignment=assignment).count() == 2 * (len(slots) - 1)


def test_the_item_page_and_answer_read_no_table_for_sorting(client, make_study):
    """The models' default orderings chain an assignment item to its assignment, study and experiment:
    an unordered read of one slot must not join the experiment table or sort (it did, and compiling
    that was a fifth of a page's CPU time)."""
    study = make_study("likert", platform="prolific")
    assignment = enter(client, study, "PROLIFIC_PID=dc8ffdbf2736dbdf39508017&SESSION_ID=6b86b273ff34fce19d6b804e")
    slot = assignment.assignment_items.get(position=0)
    with CaptureQueriesContext(connection) as queries:
        assert client.get(f"/r/a/{assignment.token}/items/0/").status_code == 200
        answer = post_item(client, assignment, 0, likert_answers(slot))
    assert answer.status_code == 200 and "Conversation 2 of" in answer.content.decode()
    slot_reads = [q["sql"] for q in queries.captured_queries
                  if q["sql"].startswith("SELECT") and '"studies_assignmentitem"' in q["sql"].split(" FROM ")[1]]
    assert len(slot_reads) >= 2  # the page's read, the answer's read and its locked read
    assert not [sql for sql in slot_reads if "studies_experiment" in sql or "ORDER BY" in sql]
    assert Assignment.objects.get(pk=assignment.pk).assignment_items.get(position=0).answered_at is not None


# The loop raters/designs/likert.html had before the likert_points tag.
LOOP = Template('{% for p in points %}\n    <label class="point"><input type="radio" name="{{ row.field }}" '
                'value="{{ p.value }}" {% if row.value == p.value|stringformat:"d" %}checked{% endif %}>'
                '<span>{{ p.value }}</span>{% if p.label %}<small>{{ p.label }}</small>{% endif %}</label>{% endfor %}')


@pytest.mark.parametrize("points", [
    [{"value": p, "label": ""} for p in range(1, 7)],
    [{"value": 1, "label": "bad <b>\"x\"</b>"}, {"value": 2, "label": ""}, {"value": 3, "label": "great & best"}],
])
@pytest.mark.parametrize("row", [
    {"field": "rA-readability", "value": ""}, {"field": "rB-coherence", "value": "3"},
    {"field": "rC-coherence", "value": "2"}, {"field": "rC-coherence", "value": ["2", "3"]},
    {"field": 'r"<x>', "value": "1"}, {"field": "rD-readability"},
])
def test_likert_points_write_what_the_template_loop_wrote(points, row):
    """The tag's markup is the loop's, byte for byte: the one given value checked (a value posted twice
    checks none), field names and researchers' labels escaped."""
    written = likert_points(row, points)
    assert written == LOOP.render(Context({"row": row, "points": points}))
    checked = re.findall(r'value="(\d+)" checked>', written)
    assert checked == ([row["value"]] if isinstance(row.get("value"), str) and row["value"] in
                       {str(p["value"]) for p in points} else [])
    assert "<b>" not in written and '"<x>' not in written


def test_a_likert_page_checks_the_stored_answers(client, make_study):
    """Through the page: after an answer, going back shows each row's stored point checked, no other."""
    study = make_study("likert", platform="prolific")
    assignment = enter(client, study, "PROLIFIC_PID=aa8ffdbf2736dbdf39508017&SESSION_ID=7b86b273ff34fce19d6b804e")
    slot = assignment.assignment_items.get(position=0)
    assert post_item(client, assignment, 0, likert_answers(slot, value=5)).status_code == 200
    page = client.get(f"/r/a/{assignment.token}/items/0/").content.decode()
    assert re.findall(r'name="(r[A-Z]-\w+)" value="(\d)" checked>', page) == [
        (name, "5") for name in re.findall(r'data-field="(r[A-Z]-\w+)"', page)]
    assert form_tokens.form_token(assignment.token, "item") in page
