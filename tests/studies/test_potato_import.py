"""Potato's data files (JSON lines) import with the speaker taken from each turn's prefix and the prefix out
of the text; a pairwise instance's texts become responses A, B; the format is detected and named."""
import io
import json

import pytest
from django.core.management import call_command

from studies.corpora.importing.parsers import detect_format
from studies.corpora.importing.records import ImportFailed
from studies.models import Conversation, Response
from tests.studies import dataio_files
from tests.studies.dataio_files import import_bytes

pytestmark = pytest.mark.django_db


def lines(*records) -> bytes:
    return ("\n".join(json.dumps(r) for r in records) + "\n").encode()


def test_potato_dialogues_and_pairwise_files_are_detected():
    assert detect_format("dialogues.json", dataio_files.fixture_bytes("dialogues.json")) == "potato"
    assert detect_format("pairwise-example.json", dataio_files.fixture_bytes("pairwise-example.json")) == "potato"
    # Concord's own JSON lines (turns and responses) stay Concord's.
    concord = lines({"id": "c1", "turns": ["a", "b"], "responses": {"x": "y"}})
    assert detect_format("c.jsonl", concord) == "jsonl"


def test_potato_dialogue_speakers_come_from_the_prefix(user):
    summary = import_bytes(user, dataio_files.fixture_bytes("dialogues.json"), "dialogues.json")
    assert summary.format == "potato" and summary.format_name == "Potato data file" and summary.unit == "dialogue"
    d1 = Conversation.objects.get(corpus=summary.corpus, external_id="d1")
    assert d1.turns == [{"speaker": "Tom", "text": "Did you watch the match last night?"},
                        {"speaker": "Bot", "text": "Yes! The last goal was amazing."},
                        {"speaker": "Tom", "text": "Who scored it?"}, {"speaker": "Bot", "text": "I like pizza."}]
    assert summary.responses == 0


def test_potato_dialogue_turns_as_objects_and_other_fields_kept(user):
    summary = import_bytes(user, dataio_files.fixture_bytes("dialogues.json"), "dialogues.json")
    d3 = Conversation.objects.get(corpus=summary.corpus, external_id="d3")
    assert [t["speaker"] for t in d3.turns] == ["Lee", "Bot"]
    assert d3.metadata == {"context": "objects instead of strings", "source": "potato"}


def test_potato_text_list_with_speakers_is_a_dialogue(user):
    data = lines({"id": "1", "text": ["Alex: Hi!", "Jordan: Hey."], "context": "Very short exchange"},
                 {"id": "2", "text": ["Dr. Smith: It is mild: rest and water.", "Patient: OK."]})
    summary = import_bytes(user, data, "dialogue-example.json")
    assert summary.unit == "dialogue"
    two = Conversation.objects.get(corpus=summary.corpus, external_id="2")
    assert two.turns == [{"speaker": "Dr. Smith", "text": "It is mild: rest and water."},
                         {"speaker": "Patient", "text": "OK."}]


def test_potato_pairwise_texts_become_responses_a_and_b(user):
    summary = import_bytes(user, dataio_files.fixture_bytes("pairwise-example.json"), "pairwise-example.json")
    assert summary.unit == "response" and summary.conversations == 2 and summary.responses == 4
    assert set(summary.systems_created) == {"potato-a", "potato-b"}
    p1 = Conversation.objects.get(corpus=summary.corpus, external_id="p1")
    assert p1.turns == []
    assert list(Response.objects.filter(conversation=p1).order_by("system__name").values_list("system__name", "text")) == [
        ("potato-a", "Isn't the weather lovely today?"), ("potato-b", "I like you.")]


def test_potato_pairwise_context_is_the_conversation(user):
    summary = import_bytes(user, dataio_files.fixture_bytes("pairwise-example.json"), "pairwise-example.json")
    p2 = Conversation.objects.get(corpus=summary.corpus, external_id="p2")
    assert p2.turns == [{"speaker": "User", "text": "When does the train leave?"}]


def test_potato_unprefixed_turn_in_a_conversation_alternates_speakers(user):
    summary = import_bytes(user, lines({"id": "x", "conversation": ["Hello", "Bot: hi"]}), "d.json")
    (conversation,) = Conversation.objects.filter(corpus=summary.corpus)
    assert conversation.turns == [{"speaker": "A", "text": "Hello"}, {"speaker": "Bot", "text": "hi"}]


@pytest.mark.parametrize(("records", "where"), [
    ([{"conversation": ["A: hi"]}], "line 1, id: is missing"),
    ([{"id": "a", "conversation": []}], "line 1, conversation: must be a non-empty list"),
    ([{"id": "a", "conversation": ["A: hi", 3]}], "line 1, conversation[1]: must be"),
    ([{"id": "a", "conversation": ["A: hi"]}, {"id": "b", "text": ["one", "two"]}], "line 2, text: a file holds dialogues"),
    ([{"id": "a", "text": ["one", ""]}], "line 1, text: a pairwise instance lists"),
    ([{"id": "a", "conversation": ["A: hi"]}, {"id": "a", "conversation": ["B: yo"]}], "duplicate conversation id"),
])
def test_potato_bad_lines_are_refused_by_line_nothing_stored(user, records, where):
    with pytest.raises(ImportFailed) as failure:
        import_bytes(user, lines(*records), "d.json", source_format="potato")
    assert any(where in str(p) for p in failure.value.problems), failure.value.problems
    assert not Conversation.objects.exists()


def test_potato_import_command_reads_both_example_files(user, tmp_path):
    for name in ("dialogues.json", "pairwise-example.json"):
        (tmp_path / name).write_bytes(dataio_files.fixture_bytes(name))
        out = io.StringIO()
        call_command("import_dialogues", str(tmp_path / name), "--owner", "alice", stdout=out)
        assert "Detected format: Potato data file" in out.getvalue()
    assert Conversation.objects.count() == 5
