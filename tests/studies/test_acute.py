"""ACUTE-Eval (design ``acute``) without a browser: configuration and the paper's questions, pairs of
whole conversations balanced over system pairs with their judged speakers, balanced and recorded
sides, storing choices once, the rater page, the export columns, access by other researchers."""
import csv
import io
import re
from collections import Counter

import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from studies.authoring import services as authoring
from studies.designs import design_for
from studies.designs.acute_schedule import judged_speaker, system_pairs_schedule
from studies.models import Comparison, Conversation, StudyItemConversation
from studies.rating import answers as answering
from studies.rating import entry as rater_entry
from studies.rating import form_tokens
from studies.reports import exporting
from tests.studies.acute_helpers import (
    ACUTE_QUESTIONS,
    acute_study,
    comparisons_of,
    conversations_corpus,
    rate_all,
    system_of,
)

pytestmark = pytest.mark.django_db


def test_acute_config_defaults_and_bad_values_name_the_field():
    design = design_for("acute")
    assert design.config_clean(None) == {"allow_tie": False, "reason": "required", "reason_max_length": 300,
                                         "pairs_per_system_pair": 0, "judged_speaker": "", "schedule_seed": 0}
    with pytest.raises(ValidationError) as error:
        design.config_clean({"allow_tie": "no", "reason": "always", "pairs_per_system_pair": -1, "judged_speaker": 3})
    assert {"design_config.allow_tie", "design_config.reason", "design_config.pairs_per_system_pair",
            "design_config.judged_speaker"} <= set(error.value.message_dict)


def test_acute_default_questions_are_the_papers_four_in_its_wording_and_editable(user):
    study = acute_study(user, publish=False)
    questions = dict(study.criteria.values_list("name", "question"))
    assert tuple(questions) == ACUTE_QUESTIONS
    assert questions["engagingness"] == "Who would you prefer to talk to for a long conversation?"
    assert questions["interestingness"] == ("If you had to say one of these speakers is interesting and one is boring, "
                                            "who would you say is more interesting?")
    assert questions["humanness"] == "Which speaker sounds more human?"
    assert questions["knowledgeability"] == ("If you had to say that one speaker is more knowledgeable and one is more "
                                             "ignorant, who is more knowledgeable?")
    edited = acute_study(user, publish=False, criteria=[{"name": "engagingness", "question": "Whom would you chat with?"}],
                         corpus=conversations_corpus(user, {"a": 2, "b": 2}, slug="edited"))
    assert list(edited.criteria.values_list("question", flat=True)) == ["Whom would you chat with?"]


@pytest.mark.parametrize("unit", ["response", "chat"])
def test_acute_refuses_units_other_than_dialogue_naming_the_unit(user, unit):
    experiment = authoring.experiment_create(owner=user, title="refused")
    with pytest.raises(ValidationError) as refused:
        authoring.study_create(experiment=experiment, title="no", design="acute", unit=unit)
    assert "ACUTE-Eval" in refused.value.message_dict["unit"][0]


def test_acute_items_are_balanced_over_system_pairs_and_never_one_conversation_against_itself(user):
    study = acute_study(user, {"alpha": 5, "beta": 3, "gamma": 4}, publish=False)
    pairs = Counter()
    uses = Counter()
    for item in study.items.all():
        shown = list(item.item_conversations.order_by("position").values_list("conversation_id", flat=True))
        assert len(shown) == 2 and shown[0] != shown[1] and item.conversation_id == shown[0]
        systems = system_of(shown)
        assert systems[shown[0]] < systems[shown[1]]  # canonical order: system a first
        pairs[(systems[shown[0]], systems[shown[1]])] += 1
        uses.update(shown)
    # 0 pairs per system pair: as many as the smaller system has conversations
    assert pairs == {("alpha", "beta"): 3, ("alpha", "gamma"): 4, ("beta", "gamma"): 3}
    alpha = [uses[c] for c in Conversation.objects.filter(metadata__system="alpha").values_list("pk", flat=True)]
    assert max(alpha) - min(alpha) <= 1  # the conversations of a system are used in turn


def test_acute_pairs_per_system_pair_and_limit_cap_the_items(user):
    study = acute_study(user, {"a": 4, "b": 4}, publish=False, pairs_per_system_pair=6)
    assert study.items.count() == 6  # more than either system has: conversations are reused in turn
    authoring.study_items_build(study=study, corpus=study.items.first().conversation.corpus, limit=2)
    assert study.items.count() == 2


def test_acute_schedule_is_seeded_and_pure():
    by_system = {"x": [1, 2, 3], "y": [4, 5], "z": [6, 7, 8, 9]}
    first = system_pairs_schedule(by_system, per_pair=0, seed=3)
    assert first == system_pairs_schedule(by_system, per_pair=0, seed=3)
    assert Counter((a, b) for a, b, _, _ in first) == {("x", "y"): 2, ("x", "z"): 3, ("y", "z"): 2}
    assert all(left in by_system[a] and right in by_system[b] for a, b, left, right in first)


def test_acute_one_system_only_is_refused_naming_systems_and_changes_nothing(user):
    corpus = conversations_corpus(user, {"solo": 4})
    experiment = authoring.experiment_create(owner=user, title="solo")
    study = authoring.study_create(experiment=experiment, title="solo", design="acute", unit="dialogue")
    with pytest.raises(ValidationError) as refused:
        authoring.study_items_build(study=study, corpus=corpus)
    assert "two systems" in refused.value.message_dict["systems"][0]
    assert not study.items.exists()
    with pytest.raises(ValidationError) as unknown:
        authoring.study_items_build(study=study, corpus=corpus, systems=["solo", "ghost"])
    assert "ghost" in unknown.value.message_dict["systems"][0]


def test_acute_judged_speaker_from_metadata_then_setting_then_the_systems_speaker():
    turns = [{"speaker": "Human", "text": "hi"}, {"speaker": "Bot", "text": "hello"}, {"speaker": "Alice", "text": "x"}]
    assert judged_speaker(turns, {"judged_speaker": "Alice"}, "Human") == "Alice"
    assert judged_speaker(turns, {"judged_speaker": "Nobody"}, "Human") == "Human"
    assert judged_speaker(turns, {}, "") == "Bot"
    assert judged_speaker([{"speaker": "B", "text": "x"}, {"speaker": "A", "text": "y"}], {}, "") == "A"


def test_acute_items_store_the_judged_speaker_and_a_duplicate_keeps_it(user):
    corpus = conversations_corpus(user, {"a": 2, "b": 2}, speakers=("Human", "Bot"))
    Conversation.objects.filter(external_id="a-0").update(metadata={"system": "a", "judged_speaker": "Human"})
    study = acute_study(user, corpus=corpus, publish=False)
    speakers = {c: s for c, s in StudyItemConversation.objects.filter(item__study=study)
                .values_list("conversation__external_id", "speaker")}
    assert speakers == {"a-0": "Human", "a-1": "Bot", "b-0": "Bot", "b-1": "Bot"}
    from studies.authoring import editing

    copy = editing.study_duplicate(study=study)
    assert sorted(StudyItemConversation.objects.filter(item__study=copy).values_list("speaker", flat=True)) == \
        sorted(speakers.values())


def test_acute_sides_are_balanced_per_rater_and_recorded_in_each_comparison(user):
    study = acute_study(user, {"a": 6, "b": 6}, raters_per_item=4)
    left_counts = Counter()
    for r in range(4):
        assignment = rate_all(study, f"r{r}", lambda slot, c: "left", seed=r)
        slots = {s.item_id: s.response_order for s in assignment.assignment_items.all()}
        for comparison in comparisons_of(assignment):
            assert [comparison.left_conversation_id, comparison.right_conversation_id] == slots[comparison.item_id]
            assert comparison.left_id is None and comparison.right_id is None
        systems = system_of({c for order in slots.values() for c in order})
        left = Counter(systems[order[0]] for order in slots.values())
        assert abs(left["a"] - left["b"]) <= 1  # each rater sees each system on the left about half the time
        left_counts.update(left)
    assert left_counts["a"] == left_counts["b"]


def test_acute_double_submit_stores_once_with_both_conversations_and_speakers(user):
    study = acute_study(user, {"a": 2, "b": 2})
    assignment = rater_entry.assignment_start(study=study, rater=rater_entry.rater_get_or_create(
        platform="invite", external_id="twice"))
    slot = assignment.assignment_items.order_by("position").first()
    answers = {c: {"choice": "right", "reason": "more fun"} for c in ACUTE_QUESTIONS}
    assert answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers) == 4
    answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers)
    stored = Comparison.objects.filter(assignment=assignment)
    assert stored.count() == 4
    speakers = dict(StudyItemConversation.objects.filter(item_id=slot.item_id).values_list("conversation_id", "speaker"))
    for c in stored:
        assert (c.left_speaker, c.right_speaker) == (speakers[c.left_conversation_id], speakers[c.right_conversation_id])
        assert c.choice == "right" and c.reason == "more fun"


def test_acute_reason_required_by_default_and_no_tie_and_nothing_stored(user):
    study = acute_study(user, {"a": 2, "b": 2})
    assignment = rater_entry.assignment_start(study=study, rater=rater_entry.rater_get_or_create(
        platform="invite", external_id="bad"))
    slot = assignment.assignment_items.order_by("position").first()
    answers = {c: {"choice": "left", "reason": ""} for c in ACUTE_QUESTIONS}
    answers["humanness"] = {"choice": "tie", "reason": "same"}
    with pytest.raises(ValidationError) as refused:
        answering.ratings_record(assignment=assignment, item_id=slot.item_id, answers=answers)
    errors = refused.value.message_dict
    assert "reason-engagingness" in errors and "no ties" in errors["choice-humanness"][0]
    assert not Comparison.objects.filter(assignment=assignment).exists()


def test_acute_rater_page_shows_both_conversations_marks_the_judged_turns_and_hides_the_systems(user):
    corpus = conversations_corpus(user, {"metabot": 2, "otherbot": 2}, speakers=("user", "bot"))
    study = acute_study(user, corpus=corpus)
    assignment = rater_entry.assignment_start(study=study, rater=rater_entry.rater_get_or_create(
        platform="invite", external_id="page"))
    answering.assignment_consent(assignment=assignment)
    slot = assignment.assignment_items.order_by("position").first()
    page = Client().get(f"/r/a/{assignment.token}/items/{slot.position}/")
    html = page.content.decode()
    assert page.status_code == 200
    assert html.count('data-testid="acute-left"') == 1 and html.count('data-testid="acute-right"') == 1
    assert html.count('data-judged="1"') == 4  # two bot turns in each of the two conversations
    assert "Speaker 1" in html and "Speaker 2" in html
    assert 'aria-label="The conversation so far"' not in html  # only the two sides, no third conversation
    left, right = slot.response_order
    assert html.index(Conversation.objects.get(pk=left).turns[0]["text"].split(" turn")[0] + " turn 1") < \
        html.index(Conversation.objects.get(pk=right).turns[0]["text"].split(" turn")[0] + " turn 1")
    assert "Who would you prefer to talk to for a long conversation?" in html
    assert 'name="reason-engagingness"' in html and 'value="tie"' not in html


def test_acute_refused_answer_marks_what_is_missing_as_the_pairwise_page_does(user):
    """The shared questions partial (raters/_pair_questions.html): a missing choice marks the choices, a missing
    required reason the empty "Why?" box only; nothing is stored."""
    study = acute_study(user, {"a": 2, "b": 2})
    assignment = rater_entry.assignment_start(study=study, rater=rater_entry.rater_get_or_create(
        platform="invite", external_id="marks"))
    answering.assignment_consent(assignment=assignment)
    slot = assignment.assignment_items.order_by("position").first()
    url, client = f"/r/a/{assignment.token}/items/{slot.position}/", Client()
    full = {f"choice-{c}": "left" for c in ACUTE_QUESTIONS} | {f"reason-{c}": "fun" for c in ACUTE_QUESTIONS}

    def refused(**changes):
        answers = {k: v for k, v in {**full, **changes}.items() if v is not None}
        page = client.post(url, {**answers, "form_token": form_tokens.form_token(assignment.token, "item")})
        assert page.status_code == 400
        html = page.content.decode()
        marks = {m.group(2): m.group(1).split() for m in re.finditer(
            r'<fieldset class="([^"]*)" data-criterion="(\w+)">', html)}
        return marks, [m.split() for m in re.findall(r'<label class="pair-reason([^"]*)">', html)], html

    marks, reasons, html = refused(**{"choice-engagingness": None})
    assert {"has-error", "choice-missing"} <= set(marks["engagingness"]) and "has-error" not in marks["humanness"]
    assert not any(reasons) and "<b>Speaker 1</b></span>" in html  # speakers, not "A is better"
    marks, reasons, _ = refused(**{"reason-humanness": ""})
    assert "has-error" in marks["humanness"] and "choice-missing" not in marks["humanness"]
    assert "has-error" not in marks["engagingness"] and reasons.count(["reason-missing"]) == 1
    assert not Comparison.objects.filter(assignment=assignment).exists()


def test_acute_export_carries_both_conversation_ids_the_judged_speakers_and_the_shown_order(user):
    study = acute_study(user, {"a": 2, "b": 2}, raters_per_item=1)
    assignment = rate_all(study, "exporter", lambda slot, c: "left")
    rows = list(csv.DictReader(io.StringIO("".join(exporting.export_lines(study.experiment.studies.all(), "csv")))))
    assert len(rows) == 2 * 4
    orders = {s.item_id: s.response_order for s in assignment.assignment_items.all()}
    external = dict(Conversation.objects.values_list("pk", "external_id"))
    for row in rows:
        left, right = orders[int(row["item"])]
        assert (row["left_conversation"], row["right_conversation"]) == (external[left], external[right])
        assert row["shown_order"] == f"{external[left]}|{external[right]}"
        assert row["left_speaker"] == row["right_speaker"] == "bot"
        assert row["winner_conversation"] == external[left] and row["winner_system"] == row["left_system"]


def test_acute_another_researcher_cannot_see_the_study_its_report_or_export(user, other_user):
    study = acute_study(user, {"a": 2, "b": 2}, raters_per_item=1)
    rate_all(study, "seen", lambda slot, c: "left")
    client = Client()
    client.force_login(other_user)
    for url in (f"/studies/{study.slug}/", f"/studies/{study.slug}/report/", f"/studies/{study.slug}/report.xlsx",
                f"/studies/{study.slug}/browse/"):
        assert client.get(url).status_code in (403, 404), url
    client.force_login(user)
    assert client.get(f"/studies/{study.slug}/report/").status_code == 200


def test_acute_item_browser_shows_which_conversation_won(user):
    from studies.reports import browser_selectors

    study = acute_study(user, {"a": 2, "b": 2}, raters_per_item=1)
    assignment = rate_all(study, "browsed", lambda slot, c: "right")
    _, rows = browser_selectors.item_page(study)
    slot = assignment.assignment_items.order_by("position").first()
    row = next(r for r in rows if r.item.pk == slot.item_id)
    line = next(line for line in row.ratings if line["criterion"] == "humanness")
    shown = [r["id"] for r in row.responses]
    left, right = slot.response_order
    assert line["cells"][shown.index(right)] == "better" and line["cells"][shown.index(left)] == "worse"
    client = Client()
    client.force_login(user)
    assert client.get(f"/studies/{study.slug}/browse/").status_code == 200


def test_acute_simulated_raters_complete_a_study_and_every_judgment_names_two_conversations(user):
    from django.core.management import call_command

    from studies.models import Study

    study = acute_study(user, {"a": 3, "b": 3}, publish=False, raters_per_item=2)
    Study.objects.filter(pk=study.pk).update(platform="prolific", items_per_assignment=2)
    authoring.study_publish(study=Study.objects.get(pk=study.pk))
    out, err = io.StringIO(), io.StringIO()
    call_command("simulate_crowd", study.slug, "--raters", "2", "--platform", "prolific", "--seed", "3",
                 stdout=out, stderr=err)
    assert "2/2 simulated raters completed" in out.getvalue(), (out.getvalue(), err.getvalue())
    judged = Comparison.objects.filter(assignment__study=study)
    assert judged.count() == 2 * 2 * 4 and not judged.filter(left_conversation__isnull=True).exists()
    assert all(c.reason for c in judged)  # reasons are required by default


def test_acute_items_from_a_chat_studys_transcripts_use_only_ended_chats(user, local_bot, loopback_allowed):
    from studies.chat import endpoints
    from studies.chat import services as chatting
    from studies.models import Chat, System

    experiment = authoring.experiment_create(owner=user, title="Chats to compare")
    chat_study = authoring.study_create(experiment=experiment, title="chats", design="likert", unit="chat",
                                        raters_per_item=4, items_per_assignment=4)
    for name, bot in (("rule-bot", "rule"), ("parrot-bot", "parrot")):
        system, _ = System.objects.get_or_create(name=name)
        endpoints.endpoint_set(owner=user, system=system, protocol="concord", url=local_bot.url(bot), retries=0)
    authoring.study_items_build(study=chat_study, systems=["rule-bot", "parrot-bot"])
    authoring.study_publish(study=chat_study)
    turns = chat_study.unit_config["min_turns"]
    for r in range(3):
        assignment = rater_entry.assignment_start(study=chat_study, rater=rater_entry.rater_get_or_create(
            platform="invite", external_id=f"chatter{r}"), seed=r)
        for slot in assignment.assignment_items.all():
            chatting.chat_open(assignment=assignment, item_id=slot.item_id)
            for i in range(turns):
                chatting.chat_turn_post(assignment=assignment, item_id=slot.item_id, text=f"I like tea {i}",
                                        client_id=f"{r}-{i}")
            if r < 2:  # the third rater's chats stay open: half conversations
                chatting.chat_end(assignment=assignment, item_id=slot.item_id)
    corpus = chatting.chat_corpus(chat_study)
    ended = set(Chat.objects.filter(status=Chat.Status.ENDED).values_list("conversation_id", flat=True))
    assert Conversation.objects.filter(corpus=corpus).count() > len(ended) > 0
    acute = authoring.study_create(experiment=experiment, title="acute over chats", design="acute", unit="dialogue")
    built = authoring.study_items_build(study=acute, corpus=corpus)
    shown = set(StudyItemConversation.objects.filter(item__study=acute).values_list("conversation_id", flat=True))
    assert built > 0 and shown <= ended
    speakers = set(StudyItemConversation.objects.filter(item__study=acute).values_list("speaker", flat=True))
    bot_speakers = {t["speaker"] for c in Conversation.objects.filter(pk__in=shown) for t in c.turns
                    if t["speaker"].lower() in ("bot", "system", "assistant")}
    assert speakers and speakers <= bot_speakers  # the bot is judged, not the rater
