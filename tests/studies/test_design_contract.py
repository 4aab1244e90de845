"""The design contract: every registered design on every unit it runs on goes through one harness
(as torchmetrics' MetricTester runs every metric): build its items, record an answer twice (stored
once), reject a bad answer with a field-level error, score a check item, export, render the report
section and the live panel, duplicate the study. A unit whose raters make the dialogue first (a chat)
chats with the local bot server before each rating. A new design registered in studies.designs passes
or fails here without anyone adding it to a list; a design that refuses a unit says why."""

import csv
import io
import json
import re

import numpy as np
import pytest
from django.core.exceptions import ValidationError
from django.template.loader import render_to_string

from studies.authoring import checks, editing
from studies.authoring import services as authoring
from studies.chat import endpoints, turn_questions
from studies.chat import services as chatting
from studies.corpora import services as corpus_imports
from studies.designs import DESIGNS, KINDS, UNITS, design_for, unit_for
from studies.designs.common import target_key
from studies.designs.kinds.per_turn import judged_indices
from studies.errors import StudyStateError
from studies.models import BestWorstChoice, Chat, Comparison, Rating, Study, System
from studies.rating import answers as answering
from studies.rating import chat_checks, dialogue_checks, form_tokens
from studies.rating import entry as rater_entry
from studies.reports import exporting
from tests.conftest import small_corpus_lines
from tests.studies.test_import_dialogue import dump, fed_dialogue


def key(slot, target):
    """The letter a rater page names ``target`` by on ``slot``'s screen (its fields never carry an id)."""
    return target_key(slot.response_order, target)


pytestmark = pytest.mark.django_db
CRITERIA = ("readability", "coherence")
COMBINATIONS = [(d, u) for d in DESIGNS for u in UNITS]  # every registered design on every registered unit
RUNS = [(d, u) for d, u in COMBINATIONS if design_for(d).unit_problem(unit_for(u)) is None]  # those it runs on
CHAT_SYSTEMS = ("contract-alpha", "contract-beta")
_BOT: dict = {}


@pytest.fixture(autouse=True)
def chat_bot(request):
    """A unit whose raters make the dialogue first (a chat) talks to the local bot server."""
    params = getattr(getattr(request.node, "callspec", None), "params", {})
    if not unit_for(params.get("unit_key", "response")).collects_dialogues:
        yield None
        return
    request.getfixturevalue("loopback_allowed")
    _BOT["bot"] = request.getfixturevalue("local_bot")
    yield _BOT["bot"]
    _BOT.clear()


def have_chats(study: Study, assignment) -> None:
    """Each slot's chat, had and ended (``min_turns`` messages), for a unit whose raters make the
    dialogue first: the slots then hold the conversations the rater rates."""
    if not unit_for(study).collects_dialogues:
        return
    turns = study.unit_config["min_turns"]
    for slot in assignment.assignment_items.order_by("position"):
        chatting.chat_open(assignment=assignment, item_id=slot.item_id)
        for i in range(turns):
            answer_turn_questions(assignment, slot.item_id)  # a per-turn criterion's questions after each reply
            chatting.chat_turn_post(assignment=assignment, item_id=slot.item_id, text=f"Hello {i}", client_id=str(i))
        chatting.chat_end(assignment=assignment, item_id=slot.item_id)


def answer_turn_questions(assignment, item_id: int) -> None:
    """Answer the questions a chat asks after each bot reply (none ticked, "None of these", or the first label)."""
    asked = turn_questions.turn_questions(assignment, item_id)
    if not asked or not asked["pending"]:
        return
    modes = {c["name"]: c for c in asked["criteria"]}
    turn_questions.turn_answers_save(assignment=assignment, item_id=item_id, answers={
        entry["field"]: {"binary": [], "multilabel": [modes[name]["none_value"]]}.get(
            modes[name]["mode"], modes[name]["labels"][0]["label"])
        for turns in asked["turns"].values() for name, entry in turns.items() if not entry["answered"]})


def dialogue_corpus_bytes(n: int = 10) -> bytes:
    """Whole dialogues of two systems in FED's dialogue-level format (the system in the metadata)."""
    return dump([fed_dialogue(i, model=["Meena", "Mitsuku"][i % 2]) for i in range(n)])


def build(user, design_key: str, unit_key: str, *, publish: bool = True, check: bool = False) -> Study:
    """A study of the design on the unit, items built (and, with ``check``, a check item that passes
    when response 1 is judged the better), published."""
    design, unit = design_for(design_key), unit_for(unit_key)
    experiment = authoring.experiment_create(owner=user, title=f"Contract {design_key} {unit_key}")
    study = authoring.study_create(experiment=experiment, title=f"{design_key} on {unit_key}", design=design_key,
                                   unit=unit_key, raters_per_item=3, items_per_assignment=40, criteria=list(CRITERIA))
    if unit.collects_dialogues:  # chats: systems with endpoints on the local bot server
        for name in CHAT_SYSTEMS:
            system, _ = System.objects.get_or_create(name=name)
            endpoints.endpoint_set(owner=user, system=system, protocol="concord", url=_BOT["bot"].url("rule"),
                                   retries=0)
        authoring.study_items_build(study=study, systems=list(CHAT_SYSTEMS))
    elif unit.level == "dialogue":
        corpus = corpus_imports.dialogues_import(stream=io.BytesIO(dialogue_corpus_bytes()), source_name="fed.json",
                                                 owner=user).corpus
        authoring.study_items_build(study=study, corpus=corpus, seed=1,
                                    reference_conversation="fed-d0" if design.anchored else None)
    else:
        corpus = corpus_imports.dialogues_import(stream=io.BytesIO(small_corpus_lines()), source_name="s.jsonl",
                                                 owner=user).corpus
        authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred", "thred"],
                                    reference_system="human")
    study.refresh_from_db()
    if design.anchor_from_metric:  # the metrics app fills these from a metric's scores
        authoring.study_item_reference_values_set(
            study=study, values={pk: 60.0 + pk % 9 for pk in study.items.values_list("pk", flat=True)})
    if check and unit.collects_dialogues:  # a chat: a scripted bot reply, rated at least 2 by a careful rater
        scripted_check(study, {"response": 1, "min": 2})
    elif check:
        n = min(checks.regular_shown_counts(study))  # as many responses as the items show, or it stands out
        rule = {"best": 1} if "best" in design.check_rule_kinds else {"greater": 1, "than": 2}
        if unit.checks_judge_the_context and not design.check_conversations and not design.ranks:
            rule = {"response": 1, "min": 2}  # one whole dialogue judged: rated at least 2 (beside any anchor)
        if design.check_conversations:  # a known-answer pair of whole conversations (ACUTE-Eval)
            checks.check_item_create(study=study, kind="gold", rules=[rule], conversations=[
                "user: Are you there?\nbot: Yes, I am here. How can I help?",
                "user: Are you there?\nbot: Banana.\nuser: Hello?\nbot: Banana."][:n])
        else:
            value, _ = design.check_reference_value(study.design_config, 100.0)
            checks.check_item_create(study=study, kind="gold", context="Are you there?",
                                     responses=["Yes, I am here."] + [f"Banana {i}." for i in range(n - 1)],
                                     rules=[rule], reference="I am here." if design.anchored else None,
                                     reference_value=value)
        checks.study_checks_configure(study=study, per_assignment=1)
    if publish:
        authoring.study_publish(study=study)
    study.refresh_from_db()
    return study


def scripted_check(study: Study, rule: dict) -> None:
    """A chat study's check item: a scripted bot reply at the first reply, ``rule`` naming the rater's
    conversation 1 (``studies.rating.chat_checks``), one per rater."""
    checks.check_item_create(study=study, kind="gold", scripted_reply="Yes, I am here. How can I help?", position=1,
                             rules=[rule])
    checks.study_checks_configure(study=study, per_assignment=1)


def check_refusal(design, unit) -> str | None:
    """Why check items are refused for the design on the unit: a chat's are scripted bot replies, refused only
    side by side."""
    if unit.collects_dialogues:
        return chat_checks.SIDE_BY_SIDE_REFUSAL if design.ranks else None
    return unit.checks_refusal(design) or design.checks_problem()


def simulated_answers(study: Study, slot, *, seed: int = 0, ranking: list[int] | None = None,
                      shift: float = 0.0) -> dict:
    """What a simulated rater answers on a slot (the design's own simulator): random qualities, or
    with ``ranking`` (targets from best to worst) clearly that order."""
    rng = np.random.default_rng(seed)
    if ranking is None:
        quality = {(t, c): float(rng.normal()) for t in slot.response_order for c in CRITERIA}
    else:
        quality = {(t, c): -3.0 * ranking.index(t) + shift for t in slot.response_order for c in CRITERIA}
    return design_for(study).answers_simulate(study=study, slot=slot, quality=quality,
                                              reference_quality=dict.fromkeys(CRITERIA, 0.0), rng=rng,
                                              criteria=list(study.criteria.all()))


def stored(assignment) -> int:
    """Judgments stored for an assignment, whatever their table."""
    return sum(m.objects.filter(assignment=assignment).count() for m in (Rating, BestWorstChoice, Comparison))


def rate(study: Study, name: str, *, seed: int, check_right: bool = True):
    """A rater who answers every item (random qualities) and each check item right (response 1 the
    best) or wrong (response 1 the worst; conversation 1 in a design comparing conversations), then submits."""
    assignment = rater_entry.assignment_start(
        study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id=name), seed=seed)
    have_chats(study, assignment)
    for slot in assignment.assignment_items.select_related("item").order_by("position"):
        ranking, shift = None, 0.0
        if slot.item.check_kind and unit_for(study.unit).collects_dialogues:
            # a chat's check: the rater's own conversation, rated as expected or far lower
            ranking, shift = [slot.response_order[0]], 0.0 if check_right else -6.0
        elif slot.item.check_kind and unit_for(study.unit).checks_judge_the_context \
                and not design_for(study).check_conversations and design_for(study).ranks:
            # the written dialogue ranked among the study's own: best by a careful rater, worst by a careless one
            others = [t for t in slot.response_order if t != slot.item.conversation_id]
            ranking = [slot.item.conversation_id, *others] if check_right else [*others, slot.item.conversation_id]
        elif slot.item.check_kind and unit_for(study.unit).checks_judge_the_context \
                and not design_for(study).check_conversations:
            # one whole dialogue: a careful rater rates it as expected, a careless one far lower
            ranking, shift = [slot.item.conversation_id], 0.0 if check_right else -6.0
        elif slot.item.check_kind:
            shown = (slot.item.item_conversations.values_list("conversation_id", flat=True)
                     if design_for(study).check_conversations
                     else slot.item.item_responses.values_list("response_id", flat=True))
            ranking = list(shown.order_by("position"))
            ranking = ranking if check_right else ranking[::-1]
        answers = simulated_answers(study, slot, seed=seed * 100 + slot.position, ranking=ranking, shift=shift)
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers, seconds=4.0)
    return answering.assignment_submit(assignment=assignment)


@pytest.mark.parametrize(("design_key", "unit_key"), COMBINATIONS)
def test_a_design_refuses_a_unit_only_with_a_reason_and_at_creation(user, design_key, unit_key):
    problem = design_for(design_key).unit_problem(unit_for(unit_key))
    if problem is None:
        study = build(user, design_key, unit_key, publish=False)
        assert study.items.filter(check_kind="").exists()
        return
    assert len(problem) > 20
    experiment = authoring.experiment_create(owner=user, title="refused")
    with pytest.raises(ValidationError) as refused:
        authoring.study_create(experiment=experiment, title="no", design=design_key, unit=unit_key)
    assert refused.value.message_dict["unit"] == [problem]
    assert not Study.objects.filter(experiment=experiment).exists()


@pytest.mark.parametrize(("design_key", "unit_key"), RUNS)
def test_items_build_publish_and_each_rater_sees_every_target_of_an_item(user, design_key, unit_key):
    study = build(user, design_key, unit_key)
    assert study.status == Study.Status.PUBLISHED and study.design_config == design_for(study).config(study)
    assignment = rater_entry.assignment_start(
        study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id="r1"), seed=1)
    targets = unit_for(study).item_targets(assignment.assignment_items.values_list("item_id", flat=True))
    have_chats(study, assignment)
    for chat in Chat.objects.filter(assignment=assignment):  # a chat's targets are the rater's own conversations
        targets.setdefault(chat.item_id, []).append(chat.conversation_id)
    for slot in assignment.assignment_items.all():
        assert sorted(slot.response_order) == sorted(targets[slot.item_id]) and len(slot.response_order) >= 1


@pytest.mark.parametrize(("design_key", "unit_key"), RUNS)
def test_an_answer_recorded_twice_is_stored_once_and_a_change_replaces_it(user, design_key, unit_key):
    study = build(user, design_key, unit_key)
    assignment = rater_entry.assignment_start(
        study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id="twice"), seed=2)
    have_chats(study, assignment)
    slot = assignment.assignment_items.select_related("item").order_by("position").first()
    answers = simulated_answers(study, slot, ranking=list(slot.response_order))
    first = answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers, seconds=3.0)
    count = stored(assignment)
    assert first >= len(CRITERIA) and count >= len(CRITERIA)
    again = answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers, seconds=3.0)
    assert again == first and stored(assignment) == count
    slot.refresh_from_db()
    shown = design_for(study).stored_values(slot, study, list(study.criteria.all()))
    assert shown, "the stored answer is shown again on the item page"
    other = simulated_answers(study, slot, ranking=list(slot.response_order)[::-1])
    answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=other, seconds=3.0)
    slot.refresh_from_db()
    assert stored(assignment) == count
    if other != answers:
        assert design_for(study).stored_values(slot, study, list(study.criteria.all())) != shown


@pytest.mark.parametrize(("design_key", "unit_key"), RUNS)
def test_a_bad_answer_is_refused_field_by_field_and_stores_nothing(client, user, design_key, unit_key):
    study = build(user, design_key, unit_key)
    assignment = rater_entry.assignment_start(
        study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id="bad"), seed=3)
    answering.assignment_consent(assignment=assignment)
    have_chats(study, assignment)
    slot = assignment.assignment_items.order_by("position").first()
    page = client.post(f"/r/a/{assignment.token}/items/{slot.position}/",
                       {"form_token": form_tokens.form_token(assignment.token, "item")})
    assert page.status_code == 400
    _, errors = design_for(study).answers_parse({}, study=study, order=slot.response_order,
                                                criteria=list(study.criteria.all()))
    html = page.content.decode()
    assert errors and all(message.split("“")[0] in html for message in errors.values())
    assert all(f'name="{field}"' in html or field in CRITERIA for field in errors), errors
    with pytest.raises(ValidationError) as refused:
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers={c: "nonsense" for c in CRITERIA})
    assert refused.value.message_dict and all(
        any(c in key for c in CRITERIA) for key in refused.value.message_dict), refused.value.message_dict
    assert stored(assignment) == 0


@pytest.mark.parametrize(("design_key", "unit_key"), RUNS)
def test_a_check_item_is_scored_pass_and_fail_or_refused_with_a_reason(user, design_key, unit_key):
    design, unit = design_for(design_key), unit_for(unit_key)
    refusal = check_refusal(design, unit)
    if refusal:
        with pytest.raises((ValidationError, StudyStateError)) as refused:  # at creation, or at publish
            build(user, design_key, unit_key, check=True)
        assert refusal.split(" (")[0] in str(refused.value)
        return
    study = build(user, design_key, unit_key, check=True)
    good, bad = rate(study, "good", seed=5), rate(study, "bad", seed=6, check_right=False)
    assert (good.checks_shown, good.checks_passed, good.checks_failed) == (1, 1, False)
    assert (bad.checks_shown, bad.checks_passed, bad.checks_failed) == (1, 0, True)


@pytest.mark.parametrize(("design_key", "unit_key"), RUNS)
def test_exports_report_section_live_panel_and_pages_render(client, user, design_key, unit_key):
    client.force_login(user)
    study = build(user, design_key, unit_key)
    for i in range(3):
        rate(study, f"rater{i}", seed=10 + i)
    studies = Study.objects.filter(pk=study.pk)
    lines = "".join(exporting.export_lines(studies, "csv"))
    rows = list(csv.DictReader(io.StringIO(lines)))
    assert rows and {r["study"] for r in rows} == {study.slug}
    jsonl = [json.loads(line) for line in exporting.export_lines(studies, "jsonl")]
    assert len(jsonl) == len(rows)
    assert exporting.export_xlsx(studies, io.BytesIO()) == len(rows)
    design = design_for(study)
    for section in design.report_sections(studies, exclude_flagged=False):
        assert render_to_string(section.template, {"section": section.data}).strip()
    for panel in design.live_panels(study):
        assert render_to_string(panel.template, {"rows": panel.data}).strip()
    for url in (f"/studies/{study.slug}/", f"/studies/{study.slug}/report/", f"/studies/{study.slug}/browse/",
                f"/studies/{study.slug}/report.xlsx", f"/studies/{study.slug}/preview/"):
        assert client.get(url).status_code == 200, url


@pytest.mark.parametrize(("design_key", "unit_key"), RUNS)
def test_a_duplicate_is_a_draft_with_the_same_settings_and_items(user, design_key, unit_key):
    study = build(user, design_key, unit_key)
    copy = editing.study_duplicate(study=study)

    def items(s):
        return [(i.position, i.conversation_id, i.reference_response_id, i.reference_conversation_id,
                 i.reference_value, list(i.item_responses.values_list("response_id", "position")),
                 list(i.item_conversations.values_list("conversation_id", "position")),
                 list(i.item_systems.values_list("system_id", "position")))
                for i in s.items.order_by("position")]

    assert copy.status == Study.Status.DRAFT and (copy.design, copy.unit) == (study.design, study.unit)
    assert copy.design_config == study.design_config and items(copy) == items(study)
    authoring.study_publish(study=copy)  # the copy is complete: it publishes as it is


# --- judgement kinds: every kind other than the scale, in every design that takes kinds ------------------

KIND_OPTIONS = {
    "categorical": {"labels": ["safe", "unsafe", "unsure"]},
    "multilabel": {"labels": ["repetition", "contradiction", "off-topic", "ungrammatical"], "none_option": True},
    "free_text": {"min_length": 5, "max_length": 300},
    "spans": {"labels": ["factual error", "unsafe", "off-topic"], "overlap": False},
    "per_turn": {"mode": "multilabel", "labels": ["redundant", "irrelevant", "contradiction"]},
}
CHECK_DIALOGUE = "user: Are you there?\nbot: Yes, I am here.\nuser: Good.\nbot: Banana."
# Every kind in every design that takes kinds, on every unit the design runs on (a chat's raters chat with
# the local bot first, as in the scale contract above).
KIND_RUNS = [(k, d, u) for k in KINDS if k != "scale" for d in DESIGNS if design_for(d).takes_kinds
             for u in UNITS if design_for(d).unit_problem(unit_for(u)) is None and unit_for(u).level in KINDS[k].levels]
KIND_CRITERIA = ("readability", "verdict")  # a scale criterion beside one of the kind (with a required reason)


def build_kind(user, kind_key: str, design_key: str, unit_key: str = "response", *, check: bool = False) -> Study:
    """A study of the design on the unit whose criterion ``verdict`` is of the kind (a reason required),
    beside the scale criterion ``readability``; with ``check``, a gold item expecting what a rater who
    sees response 1 as the best answers (a label rule; an order rule on the scale for free text)."""
    design = design_for(design_key)
    experiment = authoring.experiment_create(owner=user, title=f"Kind {kind_key} {design_key} {unit_key}")
    study = authoring.study_create(
        experiment=experiment, title=f"{kind_key} in {design_key}", design=design_key, raters_per_item=3,
        items_per_assignment=40, unit=unit_key,
        criteria=[{"name": "readability"},
                  {"name": "verdict", "question": "Your verdict?", "kind": kind_key,
                   "options": KIND_OPTIONS[kind_key], "rationale": "required"}])
    if unit_for(unit_key).collects_dialogues:  # chats: systems with endpoints on the local bot server
        for name in CHAT_SYSTEMS:
            system, _ = System.objects.get_or_create(name=name)
            endpoints.endpoint_set(owner=user, system=system, protocol="concord", url=_BOT["bot"].url("rule"),
                                   retries=0)
        authoring.study_items_build(study=study, systems=list(CHAT_SYSTEMS))
    elif unit_for(unit_key).level == "dialogue":
        corpus = corpus_imports.dialogues_import(stream=io.BytesIO(dialogue_corpus_bytes()), source_name="fed.json",
                                                 owner=user).corpus
        authoring.study_items_build(study=study, corpus=corpus, seed=1,
                                    reference_conversation="fed-d0" if design.anchored else None)
    else:
        corpus = corpus_imports.dialogues_import(stream=io.BytesIO(small_corpus_lines()), source_name="s.jsonl",
                                                 owner=user).corpus
        authoring.study_items_build(study=study, corpus=corpus, systems=["seq2seq", "hred", "thred"],
                                    reference_system="human")
    study.refresh_from_db()
    if design.anchor_from_metric:
        authoring.study_item_reference_values_set(
            study=study, values={pk: 60.0 + pk % 9 for pk in study.items.values_list("pk", flat=True)})
    if check and unit_for(unit_key).collects_dialogues:  # a chat: a scripted bot reply
        kind = KINDS[kind_key]
        if kind.check_rule_key in ("label", "labels"):  # what a rater who sees it as the best answers
            expected = kind.simulate(study.criteria.get(name="verdict"), 0.0, None)
            scripted_check(study, {"criterion": "verdict", "response": 1, kind.check_rule_key:
                                   [] if expected == ["__none__"] else expected})
        else:  # free text, spans, per-turn: judged by its readability
            scripted_check(study, {"criterion": "readability", "response": 1, "min": 2})
    elif check and KINDS[kind_key].checks_dialogues:  # a dialogue written for the check, per turn (or refused)
        verdict = study.criteria.get(name="verdict")
        turns = [{"speaker": line.split(": ")[0], "text": line.split(": ")[1]} for line in CHECK_DIALOGUE.splitlines()]
        expected = {str(i): [] for i in judged_indices(turns, "")}  # a careful rater: no problem on any turn
        checks.check_item_create(study=study, kind="gold", context=CHECK_DIALOGUE, rules=[
            {"criterion": verdict.name, "response": 1, KINDS[kind_key].check_rule_key: expected, "min_match": 1.0}])
        checks.study_checks_configure(study=study, per_assignment=1)
    elif check:
        kind, verdict = KINDS[kind_key], study.criteria.get(name="verdict")
        if unit_for(unit_key).checks_judge_the_context and not design.check_conversations and not kind.check_rule_key \
                and not design.ranks:
            # a whole dialogue judged as a check (a known bad one, or here a good one): its readability
            rule = {"criterion": "readability", "response": 1, "min": 2}
        elif kind.check_rule_key:
            expected = kind.simulate(verdict, 0.0, None)  # what a rater who sees response 1 as the best answers
            expected = [] if expected == ["__none__"] else expected
            rule = {"criterion": "verdict", "response": 1, kind.check_rule_key: expected}
        else:
            rule = ({"criterion": "readability", "best": 1} if "best" in design.check_rule_kinds
                    else {"criterion": "readability", "greater": 1, "than": 2})
        value, _ = design.check_reference_value(study.design_config, 100.0)
        n = min(checks.regular_shown_counts(study))  # as many responses as the items show, or it stands out
        checks.check_item_create(study=study, kind="gold", context="Are you there?",
                                 responses=["Yes, I am here."] + [f"Banana {i}." for i in range(n - 1)], rules=[rule],
                                 reference="I am here." if design.anchored else None, reference_value=value)
        checks.study_checks_configure(study=study, per_assignment=1)
    authoring.study_publish(study=study)
    study.refresh_from_db()
    return study


def kind_answers(study: Study, slot, *, seed: int = 0, ranking: list[int] | None = None, shift: float = 0.0) -> dict:
    """Simulated answers (``simulated_answers``' shape); ``shift`` moves every quality (a changed answer
    where an item shows one target)."""
    rng = np.random.default_rng(seed)
    if ranking is None:
        quality = {(t, c): float(rng.normal()) for t in slot.response_order for c in KIND_CRITERIA}
    else:
        quality = {(t, c): -3.0 * ranking.index(t) + shift for t in slot.response_order for c in KIND_CRITERIA}
    return design_for(study).answers_simulate(study=study, slot=slot, quality=quality,
                                              reference_quality=dict.fromkeys(KIND_CRITERIA, 0.0), rng=rng,
                                              criteria=list(study.criteria.all()))


def rate_kind(study: Study, name: str, *, seed: int, check_right: bool = True):
    assignment = rater_entry.assignment_start(
        study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id=name), seed=seed)
    have_chats(study, assignment)
    for slot in assignment.assignment_items.select_related("item").order_by("position"):
        ranking, shift = None, 0.0
        if slot.item.check_kind and unit_for(study.unit).collects_dialogues:
            # a chat's check: the rater's own conversation, judged as expected or far lower
            ranking, shift = [slot.response_order[0]], 0.0 if check_right else -6.0
        elif slot.item.check_kind and unit_for(study.unit).checks_judge_the_context \
                and not design_for(study).check_conversations and design_for(study).ranks \
                and not dialogue_checks.written_dialogue_checks(study):
            # the written dialogue ranked among the study's own: best by a careful rater, worst by a careless one
            others = [t for t in slot.response_order if t != slot.item.conversation_id]
            ranking = [slot.item.conversation_id, *others] if check_right else [*others, slot.item.conversation_id]
        elif slot.item.check_kind and unit_for(study.unit).checks_judge_the_context \
                and not design_for(study).check_conversations and not dialogue_checks.written_dialogue_checks(study):
            # one whole dialogue: a careful rater rates it as expected, a careless one far lower
            ranking, shift = [slot.item.conversation_id], 0.0 if check_right else -6.0
        elif slot.item.check_kind:
            shown = (slot.item.item_conversations.values_list("conversation_id", flat=True)
                     if design_for(study).check_conversations
                     else slot.item.item_responses.values_list("response_id", flat=True))
            ranking = list(shown.order_by("position")) or list(slot.response_order)  # or a written dialogue
            ranking = ranking if check_right else ranking[::-1]
            shift = 0.0 if check_right or len(ranking) > 1 else -3.0  # one dialogue: a careless rater's worse answer
        answers = kind_answers(study, slot, seed=seed * 100 + slot.position, ranking=ranking, shift=shift)
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers, seconds=4.0)
    return answering.assignment_submit(assignment=assignment)


@pytest.mark.parametrize(("kind_key", "design_key", "unit_key"), KIND_RUNS)
def test_kind_categorical_multilabel_free_text_answer_stored_once_changed_and_shown_again(user, kind_key, design_key,
                                                                                       unit_key):
    study = build_kind(user, kind_key, design_key, unit_key)
    assignment = rater_entry.assignment_start(
        study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id="twice"), seed=2)
    have_chats(study, assignment)
    slot = assignment.assignment_items.order_by("position").first()
    answers = kind_answers(study, slot, ranking=list(slot.response_order))
    first = answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers, seconds=3.0)
    assert first == 2 * len(slot.response_order) == stored(assignment)
    assert answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers) == first
    assert stored(assignment) == first
    kind, verdict = KINDS[kind_key], study.criteria.get(name="verdict")
    rows = Rating.objects.filter(assignment=assignment, criterion=verdict)
    assert all(r.value is None and r.rank is None and r.rationale == "Simulated reason." for r in rows)
    assert {kind.export_text({f: getattr(r, f) for f in kind.stored_fields()}) for r in rows} - {""}
    slot.refresh_from_db()
    shown = design_for(study).stored_values(slot, study, list(study.criteria.all()))
    best = slot.response_order[0]
    assert shown[f"r{key(slot, best)}-verdict.rationale"] == "Simulated reason."
    expected = kind.form_values(design_for(study), f"r{key(slot, best)}-verdict", {
        f: getattr(rows.get(**{f"{unit_for(study).target_field}_id": best}), f) for f in kind.stored_fields()}, verdict)
    assert expected and expected.items() <= shown.items()  # one field, or one per judged turn
    other = kind_answers(study, slot, ranking=list(slot.response_order)[::-1], shift=-3.0)
    answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=other, seconds=3.0)
    slot.refresh_from_db()
    assert stored(assignment) == first
    assert design_for(study).stored_values(slot, study, list(study.criteria.all())) != shown


@pytest.mark.parametrize(("kind_key", "design_key", "unit_key"), KIND_RUNS)
def test_kind_categorical_multilabel_free_text_bad_answer_refused_field_by_field(client, user, kind_key, design_key,
                                                                                 unit_key):
    study = build_kind(user, kind_key, design_key, unit_key)
    assignment = rater_entry.assignment_start(
        study=study, rater=rater_entry.rater_get_or_create(platform="invite", external_id="bad"), seed=3)
    have_chats(study, assignment)
    answering.assignment_consent(assignment=assignment)
    slot = assignment.assignment_items.order_by("position").first()
    page = client.post(f"/r/a/{assignment.token}/items/{slot.position}/",
                       {"form_token": form_tokens.form_token(assignment.token, "item")})
    assert page.status_code == 400
    html = page.content.decode()
    for target in slot.response_order:  # the kind's field(s) (one per judged turn) and the reason's, each with its message
        assert re.search(rf'name="r{key(slot, target)}-verdict(\.t\d+)?"', html)
        assert f'name="r{key(slot, target)}-verdict.rationale"' in html
    _, errors = design_for(study).answers_parse({}, study=study, order=slot.response_order,
                                                criteria=list(study.criteria.all()))
    assert all(any(re.fullmatch(rf"r{key(slot, t)}-verdict(\.t\d+)?", name) for name in errors)
               for t in slot.response_order)
    assert {f"r{key(slot, t)}-verdict.rationale" for t in slot.response_order} <= set(errors)
    assert all(message.split("“")[0] in html for message in errors.values())
    with pytest.raises(ValidationError) as refused:
        answering.ratings_record(assignment=assignment, item_id=slot.item_id,
                                 answers={"readability": {t: 1 for t in slot.response_order},
                                          "verdict": {t: 12345 for t in slot.response_order}})
    keys = set(refused.value.message_dict)
    assert {f"verdict.{t}" for t in slot.response_order} <= keys
    assert {f"verdict.rationale.{t}" for t in slot.response_order} <= keys
    assert stored(assignment) == 0


@pytest.mark.parametrize(("kind_key", "design_key", "unit_key"), KIND_RUNS)
def test_kind_categorical_multilabel_free_text_check_item_scored_pass_and_fail(user, kind_key, design_key, unit_key):
    refusal = check_refusal(design_for(design_key), unit_for(unit_key))
    if dialogue_checks.dialogue_checks_possible(design_for(design_key), unit_for(unit_key), [KINDS[kind_key]]):
        refusal = None  # a per-turn kind checks a dialogue written for the check
    if refusal:  # e.g. a dialogue item has no responses for a rule to name
        with pytest.raises((ValidationError, StudyStateError)) as refused:
            build_kind(user, kind_key, design_key, unit_key, check=True)
        assert refusal.split(" (")[0] in str(refused.value)
        return
    study = build_kind(user, kind_key, design_key, unit_key, check=True)
    good, bad = rate_kind(study, "good", seed=5), rate_kind(study, "bad", seed=6, check_right=False)
    assert (good.checks_shown, good.checks_passed, good.checks_failed) == (1, 1, False)
    assert (bad.checks_shown, bad.checks_passed, bad.checks_failed) == (1, 0, True)


@pytest.mark.parametrize(("kind_key", "design_key", "unit_key"), KIND_RUNS)
def test_kind_categorical_multilabel_free_text_exports_report_and_pages(client, user, kind_key, design_key, unit_key):
    client.force_login(user)
    study = build_kind(user, kind_key, design_key, unit_key)
    for i in range(3):
        rate_kind(study, f"rater{i}", seed=10 + i)
    studies = Study.objects.filter(pk=study.pk)
    rows = list(csv.DictReader(io.StringIO("".join(exporting.export_lines(studies, "csv")))))
    verdicts = [r for r in rows if r["criterion"] == "verdict"]
    assert verdicts and all(r["kind"] == kind_key and r["answer"] and r["value"] == "" for r in verdicts)
    assert all(r["rationale"] == "Simulated reason." for r in verdicts)
    jsonl = [json.loads(line) for line in exporting.export_lines(studies, "jsonl")]
    assert len(jsonl) == len(rows) and {r["answer"] for r in jsonl if r["criterion"] == "verdict"} \
        == {r["answer"] for r in verdicts}
    assert exporting.export_xlsx(studies, io.BytesIO()) == len(rows)
    for url in (f"/studies/{study.slug}/", f"/studies/{study.slug}/report/", f"/studies/{study.slug}/browse/",
                f"/studies/{study.slug}/report.xlsx", f"/studies/{study.slug}/preview/"):
        assert client.get(url).status_code == 200, url


@pytest.mark.parametrize(("kind_key", "design_key", "unit_key"), KIND_RUNS)
def test_kind_categorical_multilabel_free_text_duplicate_keeps_kind_options_and_reason(user, kind_key, design_key,
                                                                                      unit_key):
    study = build_kind(user, kind_key, design_key, unit_key)
    copy = editing.study_duplicate(study=study)
    fields = ("name", "kind", "options", "rationale")
    assert list(copy.criteria.values_list(*fields)) == list(study.criteria.values_list(*fields))
    assert copy.criteria.get(name="verdict").kind == kind_key
