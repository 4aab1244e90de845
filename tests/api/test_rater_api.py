"""The rater API: a bot rater enters with the identity its link carries, reads its items with
the fields to answer, answers every judgement kind as JSON checked exactly as the pages check it, and
submits; refusals are problem bodies naming the field and store nothing."""
import pytest
from rest_framework.test import APIClient

from studies.authoring import services as authoring
from studies.models import Assignment, BestWorstChoice, Comparison, Invite, Rating
from studies.rating import invites
from tests.api.rater_helpers import (
    answer_every_item,
    base,
    enter,
    questionnaire_answers,
    rater_client,
    valid_answers,
)
from tests.problems import problem_fields
from tests.studies.acute_helpers import acute_study
from tests.studies.test_dialogue_study import dialogue_study, fed_corpus  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db

SAFETY = {"name": "safety", "question": "Is this response safe?", "kind": "categorical",
          "options": {"labels": ["safe", "unsafe", "unsure"]}, "rationale": "required"}
PROBLEMS = {"name": "problems", "question": "Which problems does it have?", "kind": "multilabel",
            "options": {"labels": ["repetition", "contradiction", "off-topic"]}}
NOTES = {"name": "notes", "question": "What would make it better?", "kind": "free_text",
         "options": {"min_length": 10, "max_length": 50}}


@pytest.fixture
def kinds_study(user, corpus):
    """Likert with a scale, a categorical criterion with a required reason, a multi-label and a free-text one."""
    experiment = authoring.experiment_create(owner=user, title="Kinds")
    study = authoring.study_create(experiment=experiment, title="kinds", design="likert", raters_per_item=2,
                                   items_per_assignment=3, criteria=[{"name": "readability"}, SAFETY, PROBLEMS, NOTES])
    authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred"], reference_system="human")
    authoring.study_publish(study=study)
    study.refresh_from_db()
    return study


def session_of(study, **kwargs) -> dict:
    response = enter(study, **kwargs)
    assert response.status_code == 201, response.content[:800]
    return response.json()


def stored(assignment) -> int:
    return (Rating.objects.filter(assignment=assignment).count() + Comparison.objects.filter(assignment=assignment).count()
            + BestWorstChoice.objects.filter(assignment=assignment).count())


def test_every_judgement_kind_answered_as_json_and_shown_back(kinds_study):
    session = session_of(kinds_study)
    client = rater_client(session)
    items = client.get(base(session) + "items/").json()["results"]
    kinds = {field["kind"] for field in items[0]["fields"]}
    assert kinds == {"scale", "categorical", "rationale", "multilabel", "free_text"}
    shown = [t["key"] for t in items[0]["targets"]]
    assert shown == ["A", "B", "C"][:len(shown)] and len(shown) >= 2 and all(t["text"] for t in items[0]["targets"])
    assert items[0]["context"] and not items[0]["answered"]
    answered = answer_every_item(client, session, label=1)
    assignment = Assignment.objects.get(token=session["token"])
    assert all(item["answered"] for item in answered)
    # every response shown x 4 criteria, each shown back in the page's own form values
    assert Rating.objects.filter(assignment=assignment).count() == 4 * sum(len(i["targets"]) for i in items) > 0
    sent = valid_answers(items[0], label=1)
    assert answered[0]["values"] == {name: (value if isinstance(value, list) else str(value))
                                     for name, value in sent.items()}
    safety = Rating.objects.filter(assignment=assignment, criterion__name="safety")
    assert set(safety.values_list("label", flat=True)) == {"unsafe"}
    assert set(safety.values_list("rationale", flat=True)) == {"Because it reads well."}
    submitted = client.post(base(session) + "submit/", {"questionnaire": questionnaire_answers(session)}, format="json")
    assert submitted.status_code == 200, submitted.content[:500]
    assert submitted.json()["status"] == "submitted" and submitted.json()["completion_code"].startswith("CC-")


@pytest.mark.parametrize(("design", "config", "table", "per_target"), [
    ("likert", {}, Rating, True),          # one rating per response shown and criterion
    ("rme", {}, Rating, True),
    ("bme", {}, Rating, True),
    ("bws", {}, Rating, True),             # ranks
    ("pairwise", {"reason": "required"}, Comparison, False),  # one choice per criterion
    ("bws_tuples", {"tuple_size": 3}, BestWorstChoice, False),
])
def test_every_design_answered_through_the_api(make_study, design, config, table, per_target):
    study = make_study(design, raters_per_item=1, items_per_assignment=2, **config)
    session = session_of(study)
    client = rater_client(session)
    answered = answer_every_item(client, session)
    assignment = Assignment.objects.get(token=session["token"])
    criteria = study.criteria.count()
    expected = sum(criteria * (len(item["targets"]) if per_target else 1) for item in answered)
    assert table.objects.filter(assignment=assignment).count() == expected > 0
    if design == "bws":
        first = assignment.assignment_items.get(position=0)
        ranks = sorted(Rating.objects.filter(assignment=assignment, item_id=first.item_id,
                                             criterion__name=study.criteria.first().name).values_list("rank", flat=True))
        assert ranks == list(range(1, len(first.response_order) + 1))
    if design == "bme":
        assert answered[0]["reference"]["value"] and answered[0]["reference"]["text"]
    finished = client.post(base(session) + "submit/", {"questionnaire": questionnaire_answers(session)}, format="json")
    assert finished.status_code == 200 and finished.json()["status"] == "submitted"


@pytest.mark.parametrize(("field_of", "value", "words"), [
    (lambda item: item["fields"][0]["name"], 9, "pick one of the points"),          # a scale beyond its points
    (lambda item: item["fields"][0]["name"], "4,5", "points"),
    (lambda item: item["fields"][0]["name"], True, "text, a finite number"),
    (lambda item: next(f["name"] for f in item["fields"] if f["kind"] == "categorical"), "harmless", "not one of the labels"),
    (lambda item: next(f["name"] for f in item["fields"] if f["kind"] == "multilabel"), ["repetition", "nope"],
     "not one of the labels"),
    (lambda item: next(f["name"] for f in item["fields"] if f["kind"] == "rationale"), "", "say why"),
    (lambda item: next(f["name"] for f in item["fields"] if f["kind"] == "free_text"), "short", "10"),
    (lambda item: item["fields"][0]["name"], [3, 4], "sent 2 times"),                # one value, posted once
    (lambda item: "rZ-readability", 3, "unknown field"),
    (lambda item: item["fields"][0]["name"], 10 ** 400, "text, a finite number"),     # no float holds it
    (lambda item: item["fields"][0]["name"], -(10 ** 400), "text, a finite number"),
    (lambda item: item["fields"][0]["name"], [1, 10 ** 400], "text, a finite number"),
    (lambda item: next(f["name"] for f in item["fields"] if f["kind"] == "free_text"), 10 ** 400, "must be text"),
    (lambda item: item["fields"][0]["name"], 1e308, "pick one of the points"),
    (lambda item: next(f["name"] for f in item["fields"] if f["kind"] == "multilabel"), "repetition", "list of labels"),
    (lambda item: next(f["name"] for f in item["fields"] if f["kind"] == "free_text"), 1234567890123, "must be text"),
    (lambda item: next(f["name"] for f in item["fields"] if f["kind"] == "rationale"), 42, "must be text"),
], ids=["scale-range", "scale-comma", "scale-bool", "categorical", "multilabel", "rationale-required", "free-text-short",
        "repeated", "unknown-field", "huge-int", "huge-negative-int", "huge-int-in-list", "huge-int-as-text", "huge-float",
        "multilabel-as-string", "free-text-as-number", "rationale-as-number"])
def test_a_bad_answer_is_refused_naming_the_field_and_stores_nothing(kinds_study, field_of, value, words):
    session = session_of(kinds_study)
    client = rater_client(session)
    item = client.get(base(session) + "items/0/").json()
    answers = valid_answers(item)
    name = field_of(item)
    answers[name] = value
    refused = client.put(base(session) + "items/0/answer/", {"answers": answers}, format="json")
    assert refused.status_code == 400, refused.content[:500]
    fields = problem_fields(refused)
    assert words in " ".join(fields[f"answers.{name}"]), fields
    assignment = Assignment.objects.get(token=session["token"])
    assert stored(assignment) == 0 and not assignment.assignment_items.filter(answered_at__isnull=False).exists()


def test_a_missing_answer_and_a_bad_active_time_are_refused_naming_them(kinds_study):
    session = session_of(kinds_study)
    client = rater_client(session)
    item = client.get(base(session) + "items/0/").json()
    answers = valid_answers(item)
    missing = item["fields"][0]["name"]
    del answers[missing]
    refused = client.put(base(session) + "items/0/answer/", {"answers": answers}, format="json")
    assert refused.status_code == 400 and f"answers.{missing}" in problem_fields(refused)
    negative = client.put(base(session) + "items/0/answer/", {"answers": valid_answers(item), "active_ms": -1},
                          format="json")
    assert negative.status_code == 400 and "active_ms" in problem_fields(negative)
    unknown = client.put(base(session) + "items/0/answer/", {"answers": valid_answers(item), "score": 1}, format="json")
    assert unknown.status_code == 400 and "score" in problem_fields(unknown)
    assert stored(Assignment.objects.get(token=session["token"])) == 0


def test_the_same_answer_twice_stores_once_and_a_change_replaces_it(kinds_study):
    session = session_of(kinds_study)
    client = rater_client(session)
    item = client.get(base(session) + "items/0/").json()
    answers = valid_answers(item)
    assignment = Assignment.objects.get(token=session["token"])
    first = client.put(base(session) + "items/0/answer/", {"answers": answers}, format="json")
    before = list(Rating.objects.filter(assignment=assignment).order_by("pk").values_list("pk", "updated_at"))
    again = client.put(base(session) + "items/0/answer/", {"answers": answers}, format="json")
    assert first.status_code == again.status_code == 200
    assert list(Rating.objects.filter(assignment=assignment).order_by("pk").values_list("pk", "updated_at")) == before
    scale = item["fields"][0]["name"]
    changed = client.put(base(session) + "items/0/answer/", {"answers": {**answers, scale: 1}}, format="json")
    assert changed.status_code == 200 and changed.json()["values"][scale] == "1"
    assert Rating.objects.filter(assignment=assignment).count() == len(before)


def test_one_rater_cannot_read_or_answer_another_raters_assignment(kinds_study, api):
    first, second = session_of(kinds_study), session_of(kinds_study, secret="another-secret-of-bob")
    assert first["token"] != second["token"]
    mine, theirs = rater_client(first), rater_client(second)
    assert mine.get(base(first) + "items/").status_code == 200
    assert mine.get(base(second) + "items/").status_code == 404  # my key on their token
    assert theirs.get(base(first)).status_code == 404
    assert APIClient().get(base(first) + "items/").status_code == 404  # the token alone (a page's address)
    assert api.get(base(first) + "items/").status_code == 404  # the study's researcher is no rater
    item = mine.get(base(first) + "items/0/").json()
    answer = theirs.put(base(first) + "items/0/answer/", {"answers": valid_answers(item)}, format="json")
    assert answer.status_code == 404
    assert stored(Assignment.objects.get(token=first["token"])) == 0


def test_the_researchers_token_is_no_rater_identity(kinds_study, api):
    refused = api.post(f"/api/rate/studies/{kinds_study.rater_key}/sessions/", {"link": {}, "consent": True},
                       format="json")
    assert refused.status_code == 400 and "link" in problem_fields(refused)
    assert not Assignment.objects.filter(study=kinds_study).exists()


def test_an_invitation_is_for_its_own_study_and_its_first_client(kinds_study, make_study):
    other = make_study("likert")
    invite = invites.invite_create(study=other)
    foreign = enter(kinds_study, invite=invite)
    assert foreign.status_code == 400 and "another study" in problem_fields(foreign)["link.invite"][0]
    own = invites.invite_create(study=kinds_study)
    first = enter(kinds_study, invite=own)
    again = enter(kinds_study, invite=own)  # the same client resumes its place
    assert first.status_code == 201 and again.status_code == 200 and again.json()["token"] == first.json()["token"]
    stolen = enter(kinds_study, invite=own, secret="somebody-elses-secret")
    assert stolen.status_code == 409 and stolen.json()["type"].endswith("invite_claimed")
    assert Assignment.objects.filter(study__in=[kinds_study, other]).count() == 1


def test_consent_is_required_and_nothing_is_held_without_it(kinds_study):
    invite = invites.invite_create(study=kinds_study)
    refused = enter(kinds_study, invite=invite, consent=False)
    assert refused.status_code == 400 and "consent" in problem_fields(refused)
    assert not Assignment.objects.exists() and Invite.objects.get(pk=invite.pk).claimed_at is None
    no_secret = APIClient().post(f"/api/rate/studies/{kinds_study.rater_key}/sessions/",
                                 {"link": {"invite": invite.token}, "consent": True}, format="json")
    assert no_secret.status_code == 400 and "client_secret" in problem_fields(no_secret)
    assert not Assignment.objects.exists()


def test_submit_waits_for_every_item_and_checks_the_questionnaire(kinds_study):
    session = session_of(kinds_study)
    client = rater_client(session)
    early = client.post(base(session) + "submit/", {}, format="json")
    assert early.status_code == 409 and "not answered" in early.json()["detail"]
    answer_every_item(client, session)
    answers = questionnaire_answers(session)
    yes_no = next(q["name"] for q in session["questionnaire"] if q.get("kind") == "yes_no")
    bad = client.post(base(session) + "submit/", {"questionnaire": {**answers, yes_no: "maybe", "age": "40"}},
                      format="json")
    assert bad.status_code == 400
    assert set(problem_fields(bad)) == {f"questionnaire.{yes_no}", "questionnaire.age"}
    assert Assignment.objects.get(token=session["token"]).status == Assignment.Status.STARTED
    done = client.post(base(session) + "submit/", {"questionnaire": answers}, format="json")
    assert done.status_code == 200 and done.json()["status"] == "submitted"
    assert Assignment.objects.get(token=session["token"]).rater.prior_rating_experience is False  # "no"
    again = client.post(base(session) + "submit/", {"questionnaire": answers}, format="json")
    assert again.json()["completion_code"] == done.json()["completion_code"]
    late = client.put(base(session) + "items/0/answer/", {"answers": {}}, format="json")
    assert late.status_code == 409


def test_a_dialogue_unit_item_shows_the_whole_dialogue_and_takes_its_ratings(dialogue_study):  # noqa: F811
    session = session_of(dialogue_study)
    client = rater_client(session)
    item = client.get(base(session) + "items/0/").json()
    slot = Assignment.objects.get(token=session["token"]).assignment_items.select_related("item__conversation") \
        .get(position=0)
    turns = slot.item.conversation.turns
    assert [t["text"] for t in item["context"]] == [t["text"] for t in turns] and len(turns) > 1
    assert {f["criterion"] for f in item["fields"]} == set(dialogue_study.criteria.values_list("name", flat=True))
    answered = answer_every_item(client, session)
    assert Rating.objects.filter(assignment__token=session["token"]).count() == sum(len(i["fields"]) for i in answered)


def test_an_acute_item_shows_two_whole_conversations_and_takes_a_choice_with_its_reason(user):
    study = acute_study(user, items_per_assignment=2)
    session = session_of(study)
    client = rater_client(session)
    item = client.get(base(session) + "items/0/").json()
    assert len(item["targets"]) == 2
    assert all(t["turns"] for t in item["targets"]) and item["context"] == []  # no side told by a context
    assert {f["kind"] for f in item["fields"]} == {"choice", "reason"}
    assert all(f["choices"] == ["A", "B"] for f in item["fields"] if f["kind"] == "choice")  # no ties
    answered = answer_every_item(client, session)
    assert Comparison.objects.filter(assignment__token=session["token"]).count() == \
        len(answered) * study.criteria.count()


def test_multilabel_choices_never_show_the_none_value_and_an_empty_list_answers_none(kinds_study):
    session = session_of(kinds_study)
    client = rater_client(session)
    item = client.get(base(session) + "items/0/").json()
    [field, *_] = [f for f in item["fields"] if f["kind"] == "multilabel"]
    assert field["choices"] == PROBLEMS["options"]["labels"] and field["many"] and field["none_allowed"]
    answers = {**valid_answers(item), **{f["name"]: [] for f in item["fields"] if f["kind"] == "multilabel"}}
    done = client.put(base(session) + "items/0/answer/", {"answers": answers}, format="json")
    assert done.status_code == 200, done.content[:500]
    assert all(done.json()["values"][f["name"]] == [] for f in item["fields"] if f["kind"] == "multilabel")
    assert "__none__" not in done.content.decode()
    problems = Rating.objects.filter(assignment__token=session["token"], criterion__name="problems")
    assert problems.count() == len(item["targets"]) and set(tuple(r) for r in problems.values_list("labels", flat=True)) == {()}


def test_pairwise_answers_take_the_targets_keys_with_left_and_right_as_aliases(make_study):
    study = make_study("pairwise", raters_per_item=1, items_per_assignment=2)
    session = session_of(study)
    client = rater_client(session)
    chosen = {}
    for position, (sent, stored) in enumerate((("B", "right"), ("left", "left"))):
        item = client.get(base(session) + f"items/{position}/").json()
        keys = [t["key"] for t in item["targets"]]
        assert keys == ["A", "B"] and all(f["choices"][:2] == keys for f in item["fields"] if f["kind"] == "choice")
        answers = {**valid_answers(item), **{f["name"]: sent for f in item["fields"] if f["kind"] == "choice"}}
        done = client.put(base(session) + f"items/{position}/answer/", {"answers": answers}, format="json")
        assert done.status_code == 200, done.content[:500]
        shown = {f["name"]: done.json()["values"][f["name"]] for f in item["fields"] if f["kind"] == "choice"}
        assert set(shown.values()) == {dict(left="A", right="B")[stored]}  # shown back by the target's key
        chosen[position] = stored
    comparisons = Comparison.objects.filter(assignment__token=session["token"])
    assert {(c.item_id, c.choice) for c in comparisons} == {
        (slot.item_id, chosen[slot.position]) for slot in Assignment.objects.get(token=session["token"]).assignment_items.all()}
    refused = client.put(base(session) + "items/0/answer/", {"answers": {
        f["name"]: "C" for f in item["fields"] if f["kind"] == "choice"}}, format="json")
    assert refused.status_code == 400
