"""The per-turn judgement kind: its settings (ABC-Eval's ready-made set), the turns it judges, the form and
the API field per turn, store-time checks naming the turn or the label, autosave and stored values."""
import pytest
from django.core.exceptions import ValidationError

from studies.authoring import services as authoring
from studies.designs import design_for
from studies.designs.kinds import KINDS, criterion_kind_clean
from studies.designs.kinds.abc_eval import ABC_EVAL_BEHAVIOURS, abc_eval_criterion
from studies.designs.kinds.per_turn import PER_TURN, judged_indices
from studies.designs.rater_reads import study_criteria
from studies.models import Rating
from studies.rating import answers as answering
from studies.rating import form_tokens
from tests.studies.per_turn_helpers import SMALL, abc_study, corpus_make, slot_of, study_make

pytestmark = pytest.mark.django_db


def page_url(slot) -> str:
    return f"/r/a/{slot.assignment.token}/items/{slot.position}/"


def test_abc_eval_set_has_16_behaviours_each_defined_and_passes_the_kinds_checks():
    spec = abc_eval_criterion()
    settings, problems = criterion_kind_clean(spec, takes_kinds=True, prefix="c", level="dialogue")
    assert problems == {}
    assert len(settings["options"]["labels"]) == 16 == len(ABC_EVAL_BEHAVIOURS)
    for name in ("uninterpretable", "antisocial", "preference info", "life info", "empathetic", "lack of empathy",
                 "commonsense contradiction", "fact usage", "fact contradiction", "self contradiction",
                 "partner contradiction", "redundant", "ignore", "irrelevant", "follow-up", "topic switch"):
        assert settings["options"]["definitions"][name]
    assert KINDS["per_turn"] is PER_TURN


@pytest.mark.parametrize(("options", "field", "words"), [
    ({"mode": "sometimes", "labels": ["a", "b"]}, "c.options.mode", "unknown mode"),
    ({"mode": "categorical", "labels": ["only"]}, "c.options.labels", "2 to 24"),
    ({"labels": [f"l{i}" for i in range(25)]}, "c.options.labels", "got 25"),
    ({"labels": ["a", "A"]}, "c.options.labels", "different"),
    ({"labels": ["a", "b"], "definitions": {"c": "what c is"}}, "c.options.definitions", "not one of the labels"),
    ({"labels": ["a", "b"], "speaker": ["bot"]}, "c.options.speaker", "speaker"),
], ids=["mode", "categorical-one-label", "too-many", "same-label", "definition-unknown", "speaker-not-text"])
def test_per_turn_settings_refused_naming_the_field(options, field, words):
    _, problems = criterion_kind_clean({"name": "x", "kind": "per_turn", "options": options}, takes_kinds=True,
                                       prefix="c", level="dialogue")
    assert words in problems[field], problems


def test_per_turn_refused_on_the_response_unit_by_name(user):
    experiment = authoring.experiment_create(owner=user, title="E")
    with pytest.raises(ValidationError) as refused:
        authoring.study_create(experiment=experiment, title="x", design="likert", unit="response", criteria=[SMALL])
    assert "dialogue" in " ".join(refused.value.message_dict["criteria[0].kind"])


def test_per_turn_judged_turns_follow_the_speaker_option():
    turns = [{"speaker": "user", "text": "hi"}, {"speaker": "bot", "text": "hello"},
             {"speaker": "user", "text": "so"}, {"speaker": "bot", "text": "yes"}]
    assert judged_indices(turns, "") == [1, 3]  # the system's side
    assert judged_indices(turns, "user") == [0, 2]
    assert judged_indices(turns, "*") == [0, 1, 2, 3]
    ab = [{"speaker": "B", "text": "x"}, {"speaker": "A", "text": "y"}]
    assert judged_indices(ab, "") == [1]  # no system name: the speaker sorting first, whoever opens


def test_per_turn_page_shows_each_bot_turn_with_its_labels_and_definitions(client, user):
    study = study_make(user)
    slot = slot_of(study)
    answering.assignment_consent(assignment=slot.assignment)
    html = client.get(page_url(slot)).content.decode()
    assert 'name="rA-problems.t1"' in html and 'name="rA-problems.t3"' in html
    assert 'name="rA-problems.t0"' not in html and 'name="rA-problems.t2"' not in html  # the user's turns
    assert "repeats itself" in html  # the definition
    assert 'data-testid="dialogue"' not in html  # the dialogue is shown once, turn by turn


def test_per_turn_form_post_stores_answers_keyed_by_turn_and_shows_them_again(client, user):
    study = study_make(user)
    slot = slot_of(study)
    answering.assignment_consent(assignment=slot.assignment)
    token = form_tokens.form_token(slot.assignment.token, "item")
    response = client.post(page_url(slot), {"form_token": token, "rA-problems.t1": ["redundant", "irrelevant"]})
    assert response.status_code in (200, 302), response.content[:500]
    rating = Rating.objects.get(assignment=slot.assignment, item_id=slot.item_id)
    assert rating.turns == {"1": ["irrelevant", "redundant"], "3": []}
    assert rating.value is None and rating.conversation_id == slot.item.conversation_id
    slot.refresh_from_db()
    values = design_for(study).stored_values(slot, study, study_criteria(study))
    assert values == {"rA-problems.t1": ["irrelevant", "redundant"], "rA-problems.t3": []}
    html = client.get(page_url(slot)).content.decode()
    assert 'name="rA-problems.t1" value="redundant" checked' in html
    assert 'name="rA-problems.t3" value="redundant" checked' not in html


@pytest.mark.parametrize(("field", "value", "words"), [
    ("rA-problems.t1", "rude", "is not one of the labels"),
    ("rA-problems.t2", "redundant", "not a judged turn"),
    ("rA-problems.t9", "redundant", "not a judged turn"),
], ids=["unknown-label", "user-turn", "no-such-turn"])
def test_per_turn_refused_post_names_the_turn_field_and_stores_nothing(client, user, field, value, words):
    study = study_make(user)
    slot = slot_of(study)
    answering.assignment_consent(assignment=slot.assignment)
    token = form_tokens.form_token(slot.assignment.token, "item")
    response = client.post(page_url(slot), {"form_token": token, field: value})
    assert response.status_code == 400
    assert words in response.content.decode()
    assert not Rating.objects.filter(assignment=slot.assignment).exists()


def test_per_turn_categorical_mode_needs_one_label_per_turn(client, user):
    spec = {"name": "quality", "kind": "per_turn", "question": "Is each turn good?",
            "options": {"mode": "categorical", "labels": ["good", "bad"]}}
    study = study_make(user, criteria=[spec])
    slot = slot_of(study)
    answering.assignment_consent(assignment=slot.assignment)
    token = form_tokens.form_token(slot.assignment.token, "item")
    refused = client.post(page_url(slot), {"form_token": token, "rA-quality.t1": "good"})
    assert refused.status_code == 400 and "pick one of the labels for this turn" in refused.content.decode()
    client.post(page_url(slot), {"form_token": token, "rA-quality.t1": "good", "rA-quality.t3": "bad"})
    assert Rating.objects.get(assignment=slot.assignment).turns == {"1": "good", "3": "bad"}


def test_per_turn_multilabel_mode_needs_a_label_or_none_of_these(client, user):
    spec = {**SMALL, "options": {**SMALL["options"], "mode": "multilabel"}}
    study = study_make(user, criteria=[spec])
    slot = slot_of(study)
    answering.assignment_consent(assignment=slot.assignment)
    token = form_tokens.form_token(slot.assignment.token, "item")
    refused = client.post(page_url(slot), {"form_token": token, "rA-problems.t1": "redundant"})
    assert refused.status_code == 400 and "None of these" in refused.content.decode()
    client.post(page_url(slot), {"form_token": token, "rA-problems.t1": "redundant", "rA-problems.t3": "__none__"})
    assert Rating.objects.get(assignment=slot.assignment).turns == {"1": ["redundant"], "3": []}


def test_per_turn_service_refuses_unknown_turn_and_label_by_criterion_and_stores_once(user):
    study = study_make(user)
    slot = slot_of(study)
    cid = slot.item.conversation_id
    for bad, words in (({9: ["redundant"], 1: [], 3: []}, "turn 9 is not a judged turn"),
                       ({1: ["rude"], 3: []}, "turn 1: “rude” is not one of the labels"),
                       ({1: []}, "turn 3 has no answer")):
        with pytest.raises(ValidationError) as refused:
            answering.ratings_record(assignment=slot.assignment, item_id=slot.item_id, answers={"problems": {cid: bad}})
        assert words in " ".join(refused.value.message_dict[f"problems.{cid}"])
    good = {"problems": {cid: {"1": ["redundant"], "3": ["contradiction", "redundant"]}}}
    answering.ratings_record(assignment=slot.assignment, item_id=slot.item_id, answers=good)
    answering.ratings_record(assignment=slot.assignment, item_id=slot.item_id, answers=good)  # double submit
    assert list(Rating.objects.filter(assignment=slot.assignment).values_list("turns", flat=True)) == [
        {"1": ["redundant"], "3": ["contradiction", "redundant"]}]


def test_per_turn_autosave_keeps_each_turns_ticked_labels(client, user):
    study = study_make(user)
    slot = slot_of(study)
    answering.assignment_consent(assignment=slot.assignment)
    draft = {"rA-problems.t1": ["redundant"], "rA-problems.t3": []}
    answering.assignment_item_draft_save(slot=slot, draft=draft)
    slot.refresh_from_db()
    assert slot.draft == draft
    html = client.get(page_url(slot)).content.decode()
    assert 'name="rA-problems.t1" value="redundant" checked' in html


def test_per_turn_repeated_labels_of_one_turn_are_not_a_double_post(client, user):
    study = study_make(user)
    slot = slot_of(study)
    answering.assignment_consent(assignment=slot.assignment)
    token = form_tokens.form_token(slot.assignment.token, "item")
    response = client.post(page_url(slot), {"form_token": token, "rA-problems.t1": ["redundant", "contradiction"],
                                            "rA-problems.t3": ["irrelevant"]})
    assert response.status_code in (200, 302), response.content[:400]


def test_per_turn_export_text_numbers_turns_as_the_rater_saw_them():
    assert PER_TURN.export_text({"turns": {"1": ["redundant"], "3": []}}) == "turn 2: redundant; turn 4: —"
    assert PER_TURN.export_text({"turns": None}) == ""


def test_per_turn_criterion_not_visible_to_another_researcher(client, other_user, user):
    study = study_make(user)
    client.force_login(other_user)
    assert client.get(f"/studies/{study.slug}/").status_code == 404


def test_per_turn_corpus_helper_makes_two_systems(user):
    corpus = corpus_make(user, n=4, slug="two-systems")
    assert sorted({c.metadata["system"] for c in corpus.conversations.all()}) == ["botA", "botB"]


def test_abc_eval_study_simulated_answers_store(user):
    study = abc_study(user)
    slot = slot_of(study)
    import numpy as np

    answers = design_for(study).answers_simulate(study=study, slot=slot, quality={
        (t, "abc-eval"): -1.0 for t in slot.response_order}, reference_quality={}, rng=np.random.default_rng(1),
        criteria=study_criteria(study))
    answering.ratings_record(assignment=slot.assignment, item_id=slot.item_id, answers=answers)
    stored = Rating.objects.get(assignment=slot.assignment).turns
    assert set(stored) == {"1", "3"}
    assert all(set(v) <= {label for label, _ in ABC_EVAL_BEHAVIOURS} for v in stored.values())
