"""ParlAI files import as ParlAI wrote them: ACUTE-Eval pairings (exactly their pairs, the judged speakers
from speakers_to_eval, the onboarding pair as a check pair with its correct answer), self-chat logs and
model-chat logs, every speaker keeping its name, the format detected and named, a turn without a speaker
warned about by line. Hand-made fixtures in ParlAI's shapes (tests/parlai_files.py)."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

from studies.corpora import services
from studies.corpora.importing.parsers import detect_format
from studies.corpora.importing.records import ImportFailed
from studies.designs import design_for
from studies.models import Conversation, Corpus, Study, StudyItemConversation
from studies.rating.checks import check_passed
from tests import parlai_files
from tests.problems import problem_fields

pytestmark = pytest.mark.django_db


def pairings_import(user, records=None, **kwargs):
    data = parlai_files.jsonl(records or parlai_files.pairings_lines())
    return services.dialogues_import(stream=io.BytesIO(data), source_name="pairings.jsonl", owner=user, **kwargs)


def side_view(item):
    """[(external id, judged speaker, system)] of an item's two sides, in canonical order."""
    return [(s.conversation.external_id, s.speaker, s.conversation.metadata.get("system"))
            for s in StudyItemConversation.objects.filter(item=item).select_related("conversation").order_by("position")]


def test_parlai_pairings_import_keeps_exactly_the_pairs_their_speakers_and_the_check_pair(user):
    lines = parlai_files.pairings_lines()
    summary = pairings_import(user)
    assert summary.format == "parlai-pairings" and summary.unit == "dialogue" and summary.warnings == []
    # Four distinct dialogues (the seq2seq dialogue of pair 1 comes back in pair 3): one conversation each.
    corpus = summary.corpus
    assert summary.conversations == 4
    for line in lines[1:]:
        for dialogue in line["dialogue_dicts"]:
            stored = Conversation.objects.get(corpus=corpus, external_id=dialogue["id"])
            assert [(t["speaker"], t["text"]) for t in stored.turns] == [(t["id"], t["text"]) for t in dialogue["dialogue"]]
    study = summary.acute_study
    assert study.design == "acute" and study.unit == "dialogue" and study.status == Study.Status.DRAFT
    assert list(study.criteria.values_list("name", flat=True)) == [
        "engagingness", "interestingness", "humanness", "knowledgeability"]
    items = list(study.items.filter(check_kind="").order_by("position"))
    expected = [[(d["id"], speaker, speaker) for d, speaker in zip(line["dialogue_dicts"], line["speakers_to_eval"],
                                                                    strict=True)] for line in lines[1:]]
    assert [side_view(item) for item in items] == expected
    # human_evaluator is never the judged speaker: speakers_to_eval decides, not the sort order.
    assert not StudyItemConversation.objects.filter(item__study=study, speaker="human_evaluator").exists()
    (check,) = study.items.filter(check_kind="gold")
    sides = side_view(check)
    assert [s[1] for s in sides] == ["model_1", "model_2"]
    onboarding = lines[0]["dialogue_dicts"]
    stored = [s.conversation for s in StudyItemConversation.objects.filter(item=check).order_by("position")]
    assert [[t["text"] for t in c.turns] for c in stored] == [[t["text"] for t in d["dialogue"]] for d in onboarding]
    assert check.check_rules == [{"greater": stored[1].pk, "than": stored[0].pk}]  # correct_answer: model_2
    assert study.checks_config["per_assignment"] == 1


def test_parlai_onboarding_check_pair_scores_the_correct_answer(user):
    study = pairings_import(user).acute_study
    (check,) = study.items.filter(check_kind="gold")
    left, right = StudyItemConversation.objects.filter(item=check).order_by("position").values_list(
        "conversation_id", flat=True)
    criteria = list(study.criteria.values_list("name", flat=True))
    right_wins = {(name, cid): value for name in criteria for cid, value in ((left, 0.0), (right, 1.0))}
    left_wins = {(name, cid): 1.0 - value for (name, cid), value in right_wins.items()}
    assert check_passed(check.check_rules, right_wins, criteria, 2) is True
    assert check_passed(check.check_rules, left_wins, criteria, 2) is False


def test_parlai_pairings_study_publishes_as_the_file_gives_it(user):
    study = pairings_import(user).acute_study
    assert design_for(study).publish_problems(study) == []


def test_parlai_pairings_detected_without_a_flag():
    head = parlai_files.jsonl(parlai_files.pairings_lines())[:4096]
    assert detect_format("pairings.jsonl", head) == "parlai-pairings"


def test_parlai_selfchat_and_modelchat_detected_without_a_flag():
    assert detect_format("model2.blended_skill_talk.jsonl",
                         parlai_files.jsonl(parlai_files.selfchat_lines())) == "parlai-selfchat"
    assert detect_format("20201229_173200_1_live.json",
                         json.dumps(parlai_files.modelchat_record(), indent=4).encode()) == "parlai-modelchat"


def test_parlai_concord_jsonl_is_still_detected_as_concord():
    line = {"id": "c1", "turns": ["hi", "hello"], "responses": {"s": "ok"}}
    assert detect_format("mine.jsonl", json.dumps(line).encode()) == "jsonl"


def test_parlai_pairings_turn_without_speaker_is_warned_by_line_and_kept_by_alternation(user):
    summary = pairings_import(user, parlai_files.pairings_lines(missing_speaker=True))
    assert summary.warnings == [
        "line 3, dialogue_dicts[0].dialogue[2].id: the turn names no speaker; taken as 'human_evaluator', "
        "the speaker two turns away"]
    stored = Conversation.objects.get(corpus=summary.corpus, external_id="s2s-2")
    assert [t["speaker"] for t in stored.turns] == ["human_evaluator", "seq2seq_convai2"] * 2


@pytest.mark.parametrize(("change", "field"), [
    (lambda line: line.update(speakers_to_eval=["blender_90M"]), "speakers_to_eval"),
    (lambda line: line.update(speakers_to_eval=["nobody", "blender_90M"]), "speakers_to_eval[0]"),
    (lambda line: line["dialogue_dicts"].pop(), "dialogue_dicts"),
    (lambda line: line["dialogue_dicts"][1]["dialogue"][0].update(text=7), "dialogue_dicts[1].dialogue[0].text"),
])
def test_parlai_pairings_bad_line_is_refused_by_line_and_field_with_nothing_kept(user, change, field):
    lines = parlai_files.pairings_lines()
    change(lines[2])
    with pytest.raises(ImportFailed) as failure:
        pairings_import(user, lines)
    assert [(p.line, p.field) for p in failure.value.problems] == [(3, field)]
    assert not Corpus.objects.exists() and not Study.objects.exists()


def test_parlai_onboarding_correct_answer_must_name_a_judged_speaker(user):
    lines = parlai_files.pairings_lines()
    lines[0]["correct_answer"] = "model_3"
    with pytest.raises(ImportFailed) as failure:
        pairings_import(user, lines)
    assert [(p.line, p.field) for p in failure.value.problems] == [(1, "correct_answer")]


def test_parlai_dialogue_id_reused_with_other_turns_is_refused(user):
    lines = parlai_files.pairings_lines()
    lines[3]["dialogue_dicts"][1]["dialogue"][0]["text"] = "a different opening"
    with pytest.raises(ImportFailed) as failure:
        pairings_import(user, lines)
    assert [(p.line, p.field) for p in failure.value.problems] == [(4, "dialogue_dicts[1].id")]
    assert "read on line 2" in failure.value.problems[0].message


def test_parlai_selfchat_import_keeps_speaker_names_system_and_context(user):
    data = parlai_files.jsonl(parlai_files.selfchat_lines())
    summary = services.dialogues_import(stream=io.BytesIO(data), source_name="model2.blended_skill_talk.jsonl",
                                        owner=user)
    assert summary.format == "parlai-selfchat" and summary.conversations == 2 and summary.warnings == []
    first = summary.corpus.conversations.order_by("pk").first()
    assert [t["speaker"] for t in first.turns] == ["TransformerGenerator_1", "TransformerGenerator_2"] * 2
    assert first.metadata["system"] == "model2" and first.metadata["judged_speaker"] == "TransformerGenerator_1"
    assert first.metadata["context"][1].startswith("your persona: i like to play guitar.")


def test_parlai_selfchat_judged_speaker_chosen_in_the_import(user):
    data = parlai_files.jsonl(parlai_files.selfchat_lines())
    summary = services.dialogues_import(stream=io.BytesIO(data), source_name="model2.blended_skill_talk.jsonl",
                                        owner=user, judged_speaker="TransformerGenerator_2")
    assert set(summary.corpus.conversations.values_list("metadata__judged_speaker", flat=True)) == {
        "TransformerGenerator_2"}


def test_parlai_modelchat_import_judges_the_bot_and_keeps_personas(user):
    data = json.dumps(parlai_files.modelchat_record(), indent=4).encode()
    summary = services.dialogues_import(stream=io.BytesIO(data), source_name="20201229_173200_1_live.json",
                                        owner=user)
    assert summary.format == "parlai-modelchat" and summary.conversations == 1
    (conversation,) = summary.corpus.conversations.all()
    assert [t["speaker"] for t in conversation.turns] == ["Worker", "TransformerGenerator"] * 2
    assert conversation.metadata["system"] == "blender_90M"
    assert conversation.metadata["judged_speaker"] == "TransformerGenerator"
    assert conversation.metadata["bot_persona_strings"] == ["i am a chef.", "i live in paris."]
    assert conversation.metadata["context_dataset"] == "blended_skill_talk"


def test_parlai_import_dialogues_command_detects_and_keeps_every_speaker(user, tmp_path):
    folder = tmp_path / "task_config"
    (folder / "self_chats").mkdir(parents=True)
    pairings = folder / "pairings.jsonl"
    pairings.write_bytes(parlai_files.jsonl(parlai_files.pairings_lines()))
    selfchat = folder / "self_chats" / "model2.blended_skill_talk.jsonl"
    selfchat.write_bytes(parlai_files.jsonl(parlai_files.selfchat_lines()))
    out = io.StringIO()
    call_command("import_dialogues", str(pairings), "--owner", "alice", stdout=out)
    call_command("import_dialogues", str(selfchat), "--owner", "alice", stdout=out)
    text = out.getvalue()
    assert "Detected format: ParlAI ACUTE-Eval pairings (pairings.jsonl)" in text
    assert "Detected format: ParlAI self-chat log (self_chats/*.jsonl)" in text
    assert "draft ACUTE-Eval study" in text
    speakers = {t["speaker"] for c in Conversation.objects.filter(corpus__slug="pairings") for t in c.turns}
    assert speakers == {"blender_90M", "seq2seq_convai2", "human_evaluator"}
    speakers = {t["speaker"] for c in Conversation.objects.filter(corpus__slug="model2blended_skill_talk")
                for t in c.turns}
    assert speakers == {"TransformerGenerator_1", "TransformerGenerator_2"}


def test_parlai_command_prints_warnings_by_line(user, tmp_path):
    path = tmp_path / "pairings.jsonl"
    path.write_bytes(parlai_files.jsonl(parlai_files.pairings_lines(missing_speaker=True)))
    out = io.StringIO()
    call_command("import_dialogues", str(path), stdout=out)
    assert "Warning: line 3, dialogue_dicts[0].dialogue[2].id: the turn names no speaker" in out.getvalue()


def test_parlai_command_refuses_a_bad_file_naming_the_line(tmp_path):
    lines = parlai_files.pairings_lines()
    lines[1]["speakers_to_eval"] = ["nobody", "seq2seq_convai2"]
    path = tmp_path / "pairings.jsonl"
    path.write_bytes(parlai_files.jsonl(lines))
    with pytest.raises(CommandError, match=r"line 2, speakers_to_eval\[0\]: 'nobody' does not speak"):
        call_command("import_dialogues", str(path))
    assert not Corpus.objects.exists()


def test_parlai_concord_jsonl_turn_key_id_keeps_the_speaker_name(user):
    line = {"id": "c1", "turns": [{"id": "alice_bot", "text": "hi"}, {"id": "human", "text": "hello"}],
            "responses": {"seq2seq": "ok"}}
    summary = services.dialogues_import(stream=io.BytesIO(json.dumps(line).encode()), source_name="own.jsonl",
                                        owner=user, systems=["seq2seq"])
    assert [t["speaker"] for t in summary.corpus.conversations.get().turns] == ["alice_bot", "human"]


def test_parlai_pairings_of_the_older_shape_speaker_key_and_extra_fields(user):
    """ParlAI's first ACUTE-Eval task wrote each turn's speaker under "speaker" and kept the evaluator's
    hashed id in the dialogue; both import, the names kept and the extra fields in the metadata."""
    lines = parlai_files.pairings_lines()
    for line in lines:
        for dialogue in line["dialogue_dicts"]:
            dialogue["evaluator_id_hashed"] = "HUMAN1"
            for turn in dialogue["dialogue"]:
                turn["speaker"] = turn.pop("id")
    summary = pairings_import(user, lines)
    stored = Conversation.objects.get(corpus=summary.corpus, external_id="b90-1")
    assert {t["speaker"] for t in stored.turns} == {"blender_90M", "human_evaluator"}
    assert stored.metadata["parlai"] == {"evaluator_id_hashed": "HUMAN1"}
    assert summary.acute_study.items.filter(check_kind="").count() == 3


def test_parlai_pairings_import_through_the_api_names_the_format_and_the_study(api, user):
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("pairings.jsonl", parlai_files.jsonl(parlai_files.pairings_lines(missing_speaker=True)))
    response = api.post("/api/imports/", {"file": upload}, format="multipart")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["format"] == "parlai-pairings" and body["format_name"] == "ParlAI ACUTE-Eval pairings (pairings.jsonl)"
    assert body["acute_study"] == Study.objects.get(design="acute").slug and body["unit"] == "dialogue"
    assert body["warnings"] == ["line 3, dialogue_dicts[0].dialogue[2].id: the turn names no speaker; taken as "
                                "'human_evaluator', the speaker two turns away"]


def test_parlai_judged_speaker_is_refused_in_a_background_import(api):
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("model2.blended_skill_talk.jsonl", parlai_files.jsonl(parlai_files.selfchat_lines()))
    response = api.post("/api/imports/", {"file": upload, "run_in_background": "true",
                                          "judged_speaker": "TransformerGenerator_2"}, format="multipart")
    assert response.status_code == 400 and "judged_speaker" in problem_fields(response)
    assert not Corpus.objects.exists()


def test_parlai_background_import_is_listed_with_its_summary(api, user, tmp_path):
    """A worker's import of a self-chat log: the job's summary (the format named, the corpus) is listed
    by the API as it is stored (not only its counts)."""
    from studies.models import ImportJob

    path = tmp_path / "upload.jsonl"
    path.write_bytes(parlai_files.jsonl(parlai_files.selfchat_lines()))
    job = services.import_job_create(owner=user, path=str(path), source_name="model2.blended_skill_talk.jsonl",
                                     source_format="auto", corpus_slug="")
    services.import_job_run(job=job)
    job.refresh_from_db()
    assert job.status == ImportJob.Status.DONE, job.message
    listed = api.get("/api/imports/")
    assert listed.status_code == 200
    [entry] = listed.json()["results"]
    assert entry["counts"]["format_name"] == "ParlAI self-chat log (self_chats/*.jsonl)"
    assert entry["counts"]["conversations"] == 2 and entry["counts"]["warnings"] == []


def test_parlai_pairings_study_runs_with_raters_and_reports_the_file_systems(user):
    """The imported study publishes as it is; raters judge its pairs (and the onboarding pair), the careless
    one fails the check pair, and the report compares the file's two models."""
    from studies.authoring import services as authoring
    from studies.designs.acute_report import acute_report
    from tests.studies.acute_helpers import rate_all, system_of

    study = pairings_import(user).acute_study
    study.raters_per_item = 2
    study.save(update_fields=["raters_per_item"])
    authoring.study_publish(study=study)
    (check,) = study.items.filter(check_kind="gold")
    better = check.check_rules[0]["greater"]

    def picks(careful: bool):
        def choose(slot, criterion):
            left, right = slot.response_order
            if slot.item_id == check.pk:
                return "left" if (left == better) == careful else "right"
            return "left" if system_of([left])[left] == "blender_90M" else "right"
        return choose

    careful = rate_all(study, "careful", picks(True), seed=1)
    careless = rate_all(study, "careless", picks(False), seed=2)
    careful.refresh_from_db()
    careless.refresh_from_db()
    assert (careful.checks_shown, careful.checks_failed, careless.checks_failed) == (1, False, True)
    [entry] = acute_report(Study.objects.filter(pk=study.pk), resamples=20)
    assert entry["n"] == 2 * 3 * 4 and entry["failed_included"] == 1
    [row] = entry["criteria"][0]["win_rates"]
    assert {row["system_a"], row["system_b"]} == {"blender_90M", "seq2seq_convai2"}
    wins = row["win_rate_a"] if row["system_a"] == "blender_90M" else 1 - row["win_rate_a"]
    assert wins == 1.0


def test_parlai_pairings_judged_speaker_chosen_in_the_import_applies_to_items_and_metadata(user):
    """Choosing human_evaluator (to judge the people, say) marks them on every side that has them, in the
    items and the conversations alike; the onboarding pair keeps its speakers_to_eval, which its known
    answer is about."""
    study = pairings_import(user, judged_speaker="human_evaluator").acute_study
    sides = StudyItemConversation.objects.filter(item__study=study, item__check_kind="")
    assert set(sides.values_list("speaker", flat=True)) == {"human_evaluator"}
    assert set(Conversation.objects.filter(corpus__slug="pairings").values_list("metadata__judged_speaker",
                                                                                 flat=True)) == {"human_evaluator"}
    check = StudyItemConversation.objects.filter(item__study=study, item__check_kind="gold").order_by("position")
    assert list(check.values_list("speaker", flat=True)) == ["model_1", "model_2"]
