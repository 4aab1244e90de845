"""Dialogue-level human judgments: FED dialogue level (DSTC10 format) and the DSTC9 interactive evaluation
(FlowScore/DialoFlow redistribution). Hand-made fixtures in exactly those formats: the whole dialogue is
the rated unit, missing values are counted, several files make one benchmark study, bad input is named by
file, line and field with nothing written."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

from studies.corpora import services
from studies.corpora.importing.parsers import detect_format
from studies.corpora.importing.records import ImportFailed
from studies.models import Conversation, Corpus, Criterion, Rating, Response, Study, System, Unit
from tests.problems import problem_fields

pytestmark = pytest.mark.django_db

FED_QUALITIES = (
    "Coherent",
    "Error recovery",
    "Consistent",
    "Diverse",
    "Depth",
    "Likeable",
    "Understanding",
    "Flexible",
    "Informative",
    "Inquisitive",
    "Overall",
)


def row_counts():
    return tuple(m.objects.count() for m in (Corpus, Conversation, Response, System, Study, Rating))


def fed_dialogue(number: int, model: str = "Meena", **annotations) -> dict:
    """One FED dialogue-level record as the DSTC10 redistribution writes it (fed-dial_eval.json: speakers
    "human" and "model", the system in "model", one list of annotator scores per quality)."""
    scores = {q: [number % 3, (number + 1) % 3, 2][:3] for q in FED_QUALITIES}
    scores["Consistent"] = [number % 2, 1, 0]
    scores["Understanding"] = [1, number % 2, 1]
    scores["Overall"] = [number % 5, (number + 2) % 5, 4]
    scores.update(annotations)
    return {
        "dialog": [
            {"speaker": "human", "text": f"Hi there, I am user {number}."},
            {"speaker": "model", "text": f"Hello {number}! What do you like to do?"},
            {"speaker": "human", "text": "I like hiking."},
            {"speaker": "model", "text": "Hiking is great. Where do you go?"},
        ],
        "annotations": scores,
        "model": model,
        "dialogue_id": f"fed-d{number}",
    }


def dstc9_record(number: int, annotator: int, /, **changes) -> dict:
    """One DSTC9 rating record: the dialogue in ``context`` with prefixes, one number per quality."""
    record = {
        "context": f"User: hello, I am {number}\nSystem: hi {number}, how are you?\nUser: fine\n"
        "System: what did you do today?",
        "coherent": (number + annotator) % 3 + 1,
        "error recovery": (number * annotator) % 3 + 1,
        "consistent": (number + annotator) % 2,
        "diverse": 2,
        "topic depth": 1 + annotator % 2,
        "likeable": 2,
        "understanding": 3,
        "flexible": 2,
        "informative": 1 + number % 3,
        "inquisitive": 3,
        "human (overall)": 1 + (number + annotator) % 5,
    }
    record.update(changes)
    return record


def do_import(data: bytes, name: str = "fed_dial.json", **kwargs):
    return services.dialogues_import(stream=io.BytesIO(data), source_name=name, **kwargs)


def dump(records) -> bytes:
    return json.dumps(records, indent=1).encode()


# --- FED dialogue level ---------------------------------------------------------------------------------


def test_fed_dialogue_level_rates_whole_conversations_and_counts_an_empty_quality_as_missing():
    records = [fed_dialogue(i, model=["Meena", "Mitsuku", "Human"][i % 3]) for i in range(6)]
    records[4]["annotations"]["Error recovery"] = []  # as in the real 125-dialogue file
    summary = do_import(dump(records))
    assert summary.unit == "dialogue" and summary.as_dict()["unit"] == "dialogue"
    assert summary.missing_scores == {"error-recovery": 1}
    assert (summary.conversations, summary.responses) == (6, 0)
    study = summary.benchmark_study
    assert study.unit == Unit.DIALOGUE and study.is_dialogue
    conversation = Conversation.objects.get(corpus=summary.corpus, external_id="fed-d4")
    assert [t["speaker"] for t in conversation.turns] == ["human", "model", "human", "model"]
    assert conversation.turns[-1]["text"] == "Hiking is great. Where do you go?"  # the last turn stays in the dialogue
    assert conversation.metadata["system"] == "Mitsuku"
    ratings = Rating.objects.filter(assignment__study=study)
    assert not ratings.filter(response__isnull=False).exists()
    expected = sum(len(v) for r in records for v in r["annotations"].values())
    assert summary.ratings == ratings.count() == expected
    assert not ratings.filter(conversation=conversation, criterion__name="error-recovery").exists()
    stored = sorted(
        ratings.filter(conversation=conversation, criterion__name="overall").values_list("value", flat=True)
    )
    assert stored == sorted(float(v) for v in records[4]["annotations"]["Overall"])
    scales = {c.name: (c.scale_min, c.scale_max) for c in Criterion.objects.filter(study=study)}
    assert len(scales) == 11
    assert scales["consistent"] == (0, 1) and scales["coherent"] == (0, 2) and scales["overall"] == (0, 4)
    assert scales["understanding"] == (0, 2)  # FED's scale, though these annotators used 0-1 only
    assert not study.items.filter(item_responses__isnull=False).exists()


def test_fed_dialogue_null_quality_is_missing_and_only_nulls_in_a_list_is_a_problem():
    records = [fed_dialogue(1, **{"Error recovery": None}), fed_dialogue(2)]
    summary = do_import(dump(records))
    assert summary.missing_scores == {"error-recovery": 1}


def test_fed_file_mixing_turn_and_dialogue_records_is_refused_by_line():
    turn = {
        "context": "User: Hi\nSystem: Hello",
        "response": "System: Fine.",
        "model": "Meena",
        "annotations": {"Overall": [3]},
    }
    before = row_counts()
    with pytest.raises(ImportFailed) as failure:
        do_import(json.dumps([fed_dialogue(1), turn]).encode())
    assert any(p.line == 1 + 0 or "dialogue-level" in p.message for p in failure.value.problems)
    assert "turn-level record" in str(failure.value) and "line 1" in str(failure.value)
    assert row_counts() == before


# --- DSTC9 --------------------------------------------------------------------------------------------


def test_dstc9_is_detected_and_one_record_per_rating_becomes_annotator_positions():
    records = [dstc9_record(n, k) for k in range(3) for n in range(4)]  # each dialogue once per annotator
    data = dump(records)
    assert detect_format("dstc9_data.json", data[:4096]) == "dstc9"
    summary = do_import(data, name="dstc9_data.json")
    assert summary.format == "dstc9" and summary.unit == "dialogue"
    assert summary.conversations == 4 and summary.responses == 0
    study = summary.benchmark_study
    assert study.unit == Unit.DIALOGUE and study.raters_per_item == 3
    assert set(study.criteria.values_list("name", flat=True)) == {
        "coherent",
        "error-recovery",
        "consistent",
        "diverse",
        "topic-depth",
        "likeable",
        "understanding",
        "flexible",
        "informative",
        "inquisitive",
        "human-overall",
    }
    conversation = Conversation.objects.filter(corpus=summary.corpus).order_by("id")[1]
    assert [t["speaker"] for t in conversation.turns] == ["User", "System", "User", "System"]
    assert conversation.turns[1]["text"] == "hi 1, how are you?"
    overall = (
        Rating.objects.filter(conversation=conversation, criterion__name="human-overall")
        .order_by("assignment__rater__external_id")
        .values_list("value", flat=True)
    )
    assert list(overall) == [float(1 + (1 + k) % 5) for k in range(3)]  # annotator k = k-th record of it
    assert summary.ratings == 4 * 3 * 11
    assert study.criteria.get(name="human-overall").scale_max == 5


def test_dstc9_long_dialogue_is_still_detected():
    record = dstc9_record(1, 0, context="\n".join(f"User: turn {i} " + "x" * 80 for i in range(80)))
    data = dump([record])
    assert detect_format("eval.json", data[:65536]) == "dstc9"
    assert do_import(data, name="eval.json").format == "dstc9"


def test_dstc9_extra_keys_nulls_and_missing_qualities():
    records = [
        dstc9_record(1, 0, model="BlenderBot", extra_note=None, **{"annotator": "W17", "likeable": "2"}),
        dstc9_record(1, 1, coherent=None),
        {k: v for k, v in dstc9_record(2, 0).items() if k != "diverse"},
    ]
    summary = do_import(dump(records), name="dstc9.json", source_format="dstc9")
    assert summary.missing_scores == {"extra_note": 1, "coherent": 1}
    assert Conversation.objects.filter(corpus=summary.corpus, metadata__system="BlenderBot").count() == 1
    first = Conversation.objects.filter(corpus=summary.corpus, metadata__system="BlenderBot").get()
    coherent = Rating.objects.filter(conversation=first, criterion__name="coherent")
    assert coherent.count() == 1  # annotator 2 gave none
    assert first.metadata["fields"] == {"annotator": "W17"}  # other text is kept, not a quality
    assert sorted(
        Rating.objects.filter(conversation=first, criterion__name="likeable").values_list("value", flat=True)
    ) == [
        2.0,
        2.0,
    ]


def test_dstc9_na_and_empty_scores_are_missing_values_counted_per_quality(tmp_path):
    """DSTC9's files write "N/A" where an annotator could not judge a quality (mostly error recovery)."""
    records = [
        dstc9_record(1, 0, **{"error recovery": "N/A"}),
        dstc9_record(1, 1, **{"error recovery": "n/a ", "inquisitive": ""}),
        dstc9_record(2, 0, **{"error recovery": [], "note": ""}),
        dstc9_record(2, 1),
    ]
    summary = do_import(dump(records), name="dstc9.json", source_format="dstc9")
    assert summary.missing_scores == {"error-recovery": 3, "inquisitive": 1}
    recovery = Rating.objects.filter(conversation__corpus=summary.corpus, criterion__name="error-recovery")
    assert list(recovery.values_list("value", flat=True)) == [float((2 * 1) % 3 + 1)]  # the one score given
    assert Rating.objects.filter(conversation__corpus=summary.corpus, criterion__name="inquisitive").count() == 3
    assert not Criterion.objects.filter(name="note").exists()  # an empty text field is no quality
    path = tmp_path / "dstc9.json"
    path.write_bytes(dump(records))
    out = io.StringIO()
    call_command("import_dialogues", str(path), corpus="dstc9-na", stdout=out)
    assert "error-recovery in 3 dialogues" in out.getvalue() and "inquisitive in 1 dialogue" in out.getvalue()


def test_several_dstc9_files_make_one_benchmark_study(tmp_path):
    first = [dstc9_record(n, 0) for n in range(3)]
    second = [dstc9_record(n, 1) for n in range(3)] + [dstc9_record(9, 0)]
    summary = services.dialogues_import(
        stream=io.BytesIO(dump(first)),
        source_name="part1.json",
        more_files=[("part2.json", io.BytesIO(dump(second)))],
        corpus_slug="dstc9",
    )
    assert summary.conversations == 4
    study = summary.benchmark_study
    assert Study.objects.filter(experiment=study.experiment).count() == 1
    per_dialogue = dict(
        Rating.objects.filter(assignment__study=study, criterion__name="coherent")
        .values_list("conversation__external_id")
        .annotate(n=__import__("django").db.models.Count("id"))
    )
    assert sorted(per_dialogue.values()) == [1, 2, 2, 2]
    # the command takes several files too
    for i, records in enumerate((first, second)):
        (tmp_path / f"p{i}.json").write_bytes(dump(records))
    out = io.StringIO()
    call_command(
        "import_dialogues",
        str(tmp_path / "p0.json"),
        str(tmp_path / "p1.json"),
        corpus="dstc9-cmd",
        json=True,
        stdout=out,
    )
    result = json.loads(out.getvalue())
    assert result["conversations"] == 4 and result["unit"] == "dialogue" and result["ratings"] == 7 * 11


DSTC9_BAD = [
    # (records, line, field, words)
    ([dstc9_record(1, 0, coherent="high")], 2, "coherent", "must be a number"),
    ([dstc9_record(1, 0, coherent=True)], 2, "coherent", "list of numbers"),
    ([{k: v for k, v in dstc9_record(1, 0).items() if k != "context"}], 2, "context", "is missing"),
    ([dstc9_record(1, 0, context="   ")], 2, "context", "no turn with text"),
    ([{"context": "User: hi\nSystem: hello"}], 2, "", "no quality score"),
    ([dstc9_record(1, 0, inquisitive=[1, "x"])], 2, "inquisitive[1]", "must be a number"),
]


@pytest.mark.parametrize(("records", "line", "field", "words"), DSTC9_BAD, ids=[b[3] for b in DSTC9_BAD])
def test_dstc9_bad_input_is_named_by_line_and_field_and_nothing_is_written(records, line, field, words):
    before = row_counts()
    with pytest.raises(ImportFailed) as failure:
        do_import(
            json.dumps([dstc9_record(0, 0), *records], indent=None).replace("}, {", "},\n{").encode(),
            name="bad.json",
            source_format="dstc9",
        )
    text = [str(p) for p in failure.value.problems]
    where = f"line {line}, {field}:" if field else f"line {line}:"
    assert any(t.startswith(where) and words in t for t in text), text
    assert row_counts() == before


def test_a_bad_second_file_is_named_and_nothing_is_written():
    before = row_counts()
    bad = json.dumps([dstc9_record(1, 1), dstc9_record(2, 1, likeable={"a": 1})]).replace("}, {", "},\n{")
    with pytest.raises(ImportFailed) as failure:
        services.dialogues_import(
            stream=io.BytesIO(dump([dstc9_record(1, 0)])),
            source_name="a.json",
            more_files=[("b.json", io.BytesIO(bad.encode()))],
        )
    assert [str(p) for p in failure.value.problems][0].startswith("b.json, line 2, likeable: must be a number")
    assert row_counts() == before


def test_files_of_different_formats_are_refused():
    with pytest.raises(ImportFailed) as failure:
        services.dialogues_import(
            stream=io.BytesIO(dump([dstc9_record(1, 0)])),
            source_name="a.json",
            more_files=[("b.json", io.BytesIO(dump([fed_dialogue(1)])))],
        )
    assert "one format" in str(failure.value) and "b.json: fed" in str(failure.value)


def test_command_reports_bad_dstc9_by_line_and_field(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(
        json.dumps([dstc9_record(1, 0), dstc9_record(2, 0, coherent=float("nan"))]).replace("}, {", "},\n{")
    )
    before = row_counts()
    with pytest.raises(CommandError) as failure:
        call_command("import_dialogues", str(path), "--format", "dstc9", verbosity=0)
    assert "line 2, coherent" in str(failure.value) and "NaN" in str(failure.value)
    assert row_counts() == before


def test_api_imports_several_dstc9_files_into_one_study_and_names_bad_input(api):
    from django.core.files.uploadedfile import SimpleUploadedFile

    parts = [dump([dstc9_record(n, k) for n in range(3)]) for k in range(2)]
    response = api.post(
        "/api/imports/",
        {
            "file": SimpleUploadedFile("dstc9-a.json", parts[0]),
            "more_files": [SimpleUploadedFile("dstc9-b.json", parts[1])],
            "corpus": "dstc9-api",
        },
        format="multipart",
    )
    assert response.status_code == 201, response.content[:300]
    body = response.json()
    assert (body["format"], body["unit"], body["conversations"], body["ratings"]) == ("dstc9", "dialogue", 3, 66)
    before = row_counts()
    bad = json.dumps([dstc9_record(1, 0), dstc9_record(2, 0, coherent=[])]).replace("}, {", "},\n{")
    bad = bad.replace('"context": "User: hello, I am 2', '"context": 7, "x": "User: hello, I am 2')
    response = api.post("/api/imports/", {"file": SimpleUploadedFile("bad.json", bad.encode())}, format="multipart")
    assert response.status_code == 400
    assert any(p.startswith("line 2, context: must be text") for p in problem_fields(response)["file"]), response.json()
    assert row_counts() == before


def test_a_dialogue_first_rated_only_in_a_later_file_keeps_its_ratings(settings):
    from studies.corpora import services

    settings.DEBUG = False
    first = [dstc9_record(1, 0, **dict.fromkeys(DSTC9_QUALITIES)), dstc9_record(2, 0)]  # dialogue 1: all null here
    second = [dstc9_record(1, 1), dstc9_record(2, 1)]
    original = services.IMPORT_BATCH
    services.IMPORT_BATCH = 1  # the first file's records are written before the second file is read
    try:
        summary = services.dialogues_import(
            stream=io.BytesIO(dump(first)), source_name="a.json", more_files=[("b.json", io.BytesIO(dump(second)))]
        )
    finally:
        services.IMPORT_BATCH = original
    assert summary.conversations == 2 and summary.ratings == 3 * 11
    one = Conversation.objects.get(corpus=summary.corpus, turns__0__text="hello, I am 1")
    assert Rating.objects.filter(conversation=one).count() == 11
    # the first file's record (all null) kept annotator 1's place: the second file's rating is annotator 2
    raters = set(Rating.objects.filter(conversation=one).values_list("assignment__rater__external_id", flat=True))
    assert raters == {"a:annotator-2"}
    assert summary.missing_scores == dict.fromkeys(DSTC9_QUALITIES_SLUGS, 1)


DSTC9_QUALITIES = [k for k in dstc9_record(0, 0) if k != "context"]
DSTC9_QUALITIES_SLUGS = [k.replace(" (", "-").replace(")", "").replace(" ", "-") for k in DSTC9_QUALITIES]


def test_fed_dialogue_keeps_an_empty_turn_and_names_bad_turns_by_field():
    record = fed_dialogue(1)
    record["dialog"].insert(2, {"speaker": "model", "text": ""})
    summary = do_import(dump([record, fed_dialogue(2)]))
    conversation = Conversation.objects.get(corpus=summary.corpus, external_id="fed-d1")
    assert len(conversation.turns) == 5 and conversation.turns[2] == {"speaker": "model", "text": ""}
    before = row_counts()
    for bad, where in (
        ({"speaker": "model", "text": 5}, "dialog[1].text: must be text"),
        (["x"], "dialog[1]: must be a string"),
    ):
        record = fed_dialogue(3)
        record["dialog"][1] = bad
        with pytest.raises(ImportFailed) as failure:
            do_import(json.dumps([record]).encode(), name="bad-fed.json")
        assert any(str(p).startswith(f"line 1, {where}") for p in failure.value.problems), failure.value.problems
    empty = fed_dialogue(4)
    empty["dialog"] = [{"speaker": "human", "text": " "}]
    with pytest.raises(ImportFailed) as failure:
        do_import(json.dumps([empty]).encode(), name="empty-fed.json")
    assert "line 1, dialog: holds no turn with text" in str(failure.value)
    assert row_counts() == before


def test_dstc9_one_file_per_chatbot_names_the_systems_after_the_files():
    # as redistributed with FlowScore: data/chatbot1.json, data/chatbot2.json, ... without a model key;
    # consecutive records of one context are its annotators, and the last line may end with a newline
    first = [dstc9_record(n, k, context=dstc9_record(n, k)["context"] + "\n") for n in range(2) for k in range(3)]
    second = [dstc9_record(n, k) for n in (5, 6) for k in range(2)]
    summary = services.dialogues_import(
        stream=io.BytesIO(dump(first)),
        source_name="chatbot1.json",
        more_files=[("chatbot2.json", io.BytesIO(dump(second)))],
        corpus_slug="dstc9-bots",
    )
    study = summary.benchmark_study
    per_dialogue = sorted(
        Rating.objects.filter(assignment__study=study, criterion__name="human-overall")
        .values_list("conversation_id")
        .annotate(n=__import__("django").db.models.Count("id"))
        .values_list("conversation__metadata__system", "n")
    )
    assert per_dialogue == [("chatbot1", 3), ("chatbot1", 3), ("chatbot2", 2), ("chatbot2", 2)]
    assert summary.ratings == (2 * 3 + 2 * 2) * 11
    rows = exported_system_means(study)
    assert set(rows) == {"chatbot1", "chatbot2"}


def exported_system_means(study) -> dict:
    from studies.reports.selectors import ratings_frame

    frame = ratings_frame(Study.objects.filter(pk=study.pk))
    return frame.groupby("system")["score"].mean().to_dict()


def test_the_command_and_the_page_report_missing_values(tmp_path, client, user):
    records = [fed_dialogue(i) for i in range(3)]
    records[1]["annotations"]["Error recovery"] = []
    path = tmp_path / "fed_dial_eval.json"
    path.write_bytes(dump(records))
    out = io.StringIO()
    call_command("import_dialogues", str(path), stdout=out, verbosity=0)
    assert "human ratings of whole dialogues" in out.getvalue()
    assert (
        "Missing values (no score given, left out of that quality only): error-recovery in 1 dialogue."
        in out.getvalue()
    )
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(user)
    page = client.post(
        "/import/", {"file": SimpleUploadedFile("fed2.json", dump(records)), "format": "auto"}, follow=True
    ).content.decode()
    assert "error-recovery in 1 dialogue" in page
