"""Rater input findings of the security audit, through the item page as a rater's browser posts it:
a NUL in any rater text (a criterion's reason, a free-text answer, a chat message, a questionnaire
answer) is a 400 naming the field, never a database error (PostgreSQL refuses NUL in text); a field
that holds one answer (categorical, a scale, a reason) posted twice is a 400 naming it instead of the
last value stored silently. Nothing is stored either way."""
import pytest

from studies.authoring import services as authoring
from studies.designs.common import target_key
from studies.models import Assignment, Rating
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from studies.rating import form_tokens
from studies.rating.questionnaire import questionnaire_clean

pytestmark = pytest.mark.django_db

SAFETY = {"name": "safety", "question": "Is this response safe?", "kind": "categorical",
          "options": {"labels": ["safe", "unsafe", "unsure"]}, "rationale": "required"}
PROBLEMS = {"name": "problems", "question": "Which problems?", "kind": "multilabel",
            "options": {"labels": ["repetition", "off-topic"]}}
NOTES = {"name": "notes", "question": "What would make it better?", "kind": "free_text",
         "options": {"min_length": 1, "max_length": 200}}


@pytest.fixture
def slot(user, corpus):
    experiment = authoring.experiment_create(owner=user, title="Audit texts")
    study = authoring.study_create(experiment=experiment, title="texts", design="likert", raters_per_item=1,
                                   items_per_assignment=1, criteria=[{"name": "readability"}, SAFETY, PROBLEMS, NOTES])
    authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq"], reference_system="human", limit=1)
    authoring.study_publish(study=study)
    assignment = rater_entry.assignment_start(
        study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id="nul-rater"), seed=1)
    answering.assignment_consent(assignment=assignment)
    return assignment.assignment_items.get()


def _answers(slot, **override):
    """A full answer for every response shown; ``override`` changes the first one's fields."""
    fields = {}
    for target in slot.response_order:
        letter = target_key(slot.response_order, target)
        fields |= {f"r{letter}-readability": "4", f"r{letter}-safety": "safe", f"r{letter}-safety.rationale": "polite",
                   f"r{letter}-problems": ["repetition", "off-topic"], f"r{letter}-notes": "Fine as it is."}
    first = target_key(slot.response_order, slot.response_order[0])
    fields.update({f"r{first}-{name}": value for name, value in override.items()})
    return {"form_token": form_tokens.form_token(slot.assignment.token, "item"), **fields}


def _post(client, slot, data):
    return client.post(f"/r/a/{slot.assignment.token}/items/{slot.position}/", data)


@pytest.mark.parametrize("name", ["safety.rationale", "notes"])
def test_a_nul_in_a_rater_text_is_a_400_naming_the_field(client, slot, name):
    field = f"r{target_key(slot.response_order, slot.response_order[0])}-{name}"
    page = _post(client, slot, _answers(slot, **{name: "fine\x00 really"}))
    assert page.status_code == 400
    assert f'id="{field}-error">this' in page.content.decode() and "control characters" in page.content.decode()
    assert not Rating.objects.exists()
    assert _post(client, slot, _answers(slot)).status_code in (200, 302)  # the same answer without it is stored
    assert Rating.objects.filter(assignment=slot.assignment).exists()


@pytest.mark.parametrize("name", ["safety", "readability", "safety.rationale", "notes"])
def test_a_single_value_field_posted_twice_is_a_400_naming_it(client, slot, name):
    twice = {"safety": ["safe", "unsafe"], "readability": ["1", "5"], "safety.rationale": ["a", "b"],
             "notes": ["one text", "another"]}[name]
    data = _answers(slot, **{name: twice})
    field = f"r{target_key(slot.response_order, slot.response_order[0])}-{name}"
    page = _post(client, slot, data)
    assert page.status_code == 400
    assert f"{field} was sent 2 times" in page.content.decode()
    assert not Rating.objects.exists()


def test_ticked_boxes_of_a_multilabel_field_still_share_one_name(client, slot):
    assert _post(client, slot, _answers(slot)).status_code in (200, 302)
    stored = Rating.objects.filter(assignment=slot.assignment, criterion__name="problems")
    assert stored.count() == len(slot.response_order)
    assert all(sorted(r.labels) == ["off-topic", "repetition"] for r in stored)


def test_a_questionnaire_answer_with_nul_or_sent_twice_is_refused_by_name():
    from django.http import QueryDict

    spec = [{"name": "comment", "question": "Anything else?", "kind": "text"},
            {"name": "again", "question": "Again?", "kind": "yes_no"}]
    post = QueryDict(mutable=True)
    post.setlist("comment", ["fine\x00"])
    post.setlist("again", ["yes", "no"])
    answers, errors = questionnaire_clean(spec, post)
    assert answers == {}
    assert "control characters" in errors["comment"] and "again was sent 2 times" in errors["again"]


def test_nothing_changed_the_assignment(slot, client):
    _post(client, slot, _answers(slot, notes="\x00"))
    assert Assignment.objects.get(pk=slot.assignment.pk).status == Assignment.Status.STARTED
