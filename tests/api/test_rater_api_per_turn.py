"""The rater API on a per-turn study: an item lists one field per judged turn (its index, the labels), a bot's
JSON answer is stored keyed by turn, a field naming a turn the item does not ask about is a 400 naming it, and
the study's report API carries the per-turn section."""
import pytest

from studies.models import Rating
from tests.api.rater_helpers import base, enter, rater_client, valid_answers
from tests.problems import problem_fields
from tests.studies.per_turn_helpers import study_make

pytestmark = pytest.mark.django_db


@pytest.fixture
def session_and_client(user):
    study = study_make(user, n=2, raters=1)
    session = enter(study).json()
    return study, session, rater_client(session)


def test_per_turn_api_item_lists_a_field_per_judged_turn(session_and_client):
    _, session, client = session_and_client
    item = client.get(base(session) + "items/0/").json()
    fields = [f for f in item["fields"] if f["kind"] == "per_turn"]
    assert [(f["name"], f["turn"], f["target"]) for f in fields] == [("rA-problems.t1", 1, "A"),
                                                                      ("rA-problems.t3", 3, "A")]
    assert fields[0]["choices"] == ["redundant", "irrelevant", "contradiction"] and fields[0]["many"]
    assert fields[0]["required"] is False  # binary behaviours: none ticked is an answer


def test_per_turn_api_answer_stored_by_turn_and_a_forged_turn_named(session_and_client):
    study, session, client = session_and_client
    item = client.get(base(session) + "items/0/").json()
    forged = client.put(base(session) + "items/0/answer/", {"answers": {"rA-problems.t0": ["redundant"]}},
                        format="json")
    assert forged.status_code == 400 and "answers.rA-problems.t0" in problem_fields(forged)
    bad_label = client.put(base(session) + "items/0/answer/", {"answers": {**valid_answers(item),
                                                                           "rA-problems.t1": ["rude"]}}, format="json")
    assert bad_label.status_code == 400
    assert not Rating.objects.exists()
    answers = {**valid_answers(item), "rA-problems.t3": ["irrelevant", "redundant"]}
    put = client.put(base(session) + "items/0/answer/", {"answers": answers}, format="json")
    assert put.status_code == 200, put.content[:400]
    assert Rating.objects.get().turns == {"1": [], "3": ["irrelevant", "redundant"]}


def test_per_turn_api_multilabel_choices_hide_the_none_value_and_an_empty_list_answers_none(user):
    criterion = {"name": "problems", "kind": "per_turn", "question": "What does each bot turn do wrong?",
                 "options": {"mode": "multilabel", "labels": ["redundant", "irrelevant"]}}
    study = study_make(user, criteria=[criterion], n=2, raters=1)
    session = enter(study).json()
    client = rater_client(session)
    item = client.get(base(session) + "items/0/").json()
    fields = [f for f in item["fields"] if f["kind"] == "per_turn"]
    assert fields and all(f["choices"] == ["redundant", "irrelevant"] and f["none_allowed"] for f in fields)
    answers = {**valid_answers(item), **{f["name"]: [] for f in fields}}
    put = client.put(base(session) + "items/0/answer/", {"answers": answers}, format="json")
    assert put.status_code == 200, put.content[:400]
    assert "__none__" not in put.content.decode()
    assert all(put.json()["values"][f["name"]] == [] for f in fields)
