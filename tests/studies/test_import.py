"""Dialogue import: every format, every kind of bad input (named by line and field, nothing written),
streaming over chunk boundaries, and the real public data sets."""
import io
import json
import os
import subprocess
import sys

import pytest
from django.core.management import CommandError, call_command

from studies.corpora import services
from studies.corpora.importing import reading
from studies.corpora.importing.records import ImportFailed
from studies.models import Assignment, Conversation, Corpus, Criterion, Rating, Response, Study, System
from tests.conftest import jsonl_bytes, shared_file, small_corpus_lines
from tests.problems import problem_fields

pytestmark = pytest.mark.django_db


def row_counts():
    return tuple(m.objects.count() for m in (Corpus, Conversation, Response, System, Study, Rating))


def do_import(data: bytes, name="file.jsonl", **kwargs):
    return services.dialogues_import(stream=io.BytesIO(data), source_name=name, **kwargs)


def test_jsonl_import_stores_turns_responses_and_reference():
    summary = do_import(small_corpus_lines(3))
    assert (summary.conversations, summary.responses) == (3, 12)
    assert sorted(summary.systems_created) == ["hred", "human", "seq2seq", "thred"]
    conversation = Conversation.objects.get(corpus=summary.corpus, external_id="c1")
    assert conversation.turns == [{"speaker": "A", "text": "Hello number 1"}, {"speaker": "B", "text": "Hi there 1, how are you?"}]
    reference = conversation.responses.get(is_reference=True)
    assert (reference.system.name, reference.text) == ("human", "I'm well, thanks for asking 1.")
    assert System.objects.get(name="human").is_human


def test_csv_import_groups_adjacent_rows_and_reads_flags():
    data = (
        b"conversation_id,context,system,response,is_reference\n"
        b'x1,"Hi|||Hello, who is this?",seq2seq,it is me,0\n'
        b'x1,"Hi|||Hello, who is this?",human,"It\'s Sam, from work.",true\n'
        b"x2,How are you?,seq2seq,fine,false\n"
    )
    summary = do_import(data, "pairs.csv", systems=["seq2seq", "human"])
    assert (summary.format, summary.conversations, summary.responses) == ("csv", 2, 3)
    x1 = Conversation.objects.get(external_id="x1")
    assert [t["text"] for t in x1.turns] == ["Hi", "Hello, who is this?"]
    assert x1.responses.get(is_reference=True).system.name == "human"


BAD_INPUTS = [
    pytest.param(small_corpus_lines(2) + b'{"id": "c9", "turns": ["a"], "responses": {"hred": "x"\n', 4, "", "malformed JSON",
                 id="malformed-json"),
    pytest.param(small_corpus_lines(2) + b'{"id": "c9", "responses": {"hred": "x"}}\n', 4, "turns", "non-empty list",
                 id="missing-field"),
    pytest.param(small_corpus_lines(2) + b'{"id": "c9", "turns": ["a"], "responses": {"hred": "  "}}\n', 4,
                 "responses.hred", "empty", id="empty-text"),
    pytest.param(small_corpus_lines(2) + b'{"id": "c9", "turns": ["a"], "responses": {"gpt9": "hello"}}\n', 4,
                 "responses.gpt9", "unknown system", id="unknown-system"),
    pytest.param(small_corpus_lines(2) + b'{"id": "c1", "turns": ["a"], "responses": {"hred": "x"}}\n', 4, "id",
                 "duplicate conversation id 'c1' (first on line 3)", id="duplicate-id"),
    pytest.param(small_corpus_lines(2) + '{"id": "c9", "turns": ["caf\u00e9"], "responses": {"hred": "x"}}\n'.encode("latin-1"),
                 4, "", "not UTF-8", id="non-utf8"),
]


@pytest.mark.parametrize(("data", "line", "field", "message"), BAD_INPUTS)
def test_bad_input_names_line_and_field_and_writes_nothing(data, line, field, message):
    before = row_counts()
    with pytest.raises(ImportFailed) as failure:
        do_import(data)
    problem = failure.value.problems[0]
    assert (problem.line, problem.field) == (line, field)
    assert message in problem.message
    assert row_counts() == before


def test_failure_late_in_a_large_file_rolls_back_earlier_batches():
    conversations = [{"id": f"c{i}", "turns": ["hi"], "responses": {"hred": f"r{i}"}} for i in range(2500)]
    conversations.append({"id": "c0", "turns": ["hi"], "responses": {"hred": "again"}})
    before = row_counts()
    with pytest.raises(ImportFailed) as failure:
        do_import(jsonl_bytes(conversations), systems=["hred"])
    assert failure.value.problems[0].line == 2501
    assert row_counts() == before


def test_too_large_file_is_refused_before_parsing(settings):
    settings.IMPORT_MAX_BYTES = 1000
    with pytest.raises(ImportFailed, match=r"the import limit is"):
        do_import(small_corpus_lines(40))
    assert Corpus.objects.count() == 0


def test_many_problems_are_reported_together():
    lines = [{"id": f"c{i}", "turns": [], "responses": {"hred": "x"}} for i in range(30)]
    with pytest.raises(ImportFailed) as failure:
        do_import(jsonl_bytes(lines), systems=["hred"])
    assert len(failure.value.problems) == services.MAX_REPORTED_PROBLEMS
    assert [p.line for p in failure.value.problems[:3]] == [1, 2, 3]


def test_csv_rows_of_one_conversation_must_be_adjacent():
    data = b"conversation_id,context,system,response\na,hi,hred,x\nb,yo,hred,y\na,hi,hred,z\n"
    with pytest.raises(ImportFailed) as failure:
        do_import(data, "x.csv", systems=["hred"])
    assert str(failure.value.problems[0]) == (
        "line 4, conversation_id: 'a' already appeared (line 2); rows of one conversation must be adjacent")


def test_csv_missing_column_is_named():
    with pytest.raises(ImportFailed) as failure:
        do_import(b"conversation_id,system,response\na,hred,x\n", "x.csv")
    assert [(p.line, p.field) for p in failure.value.problems] == [(1, "context")]


def test_existing_corpus_name_is_refused():
    do_import(small_corpus_lines(1), corpus_slug="mine")
    with pytest.raises(ImportFailed, match="the corpus name 'mine' is not available"):
        do_import(small_corpus_lines(1), corpus_slug="mine")


@pytest.mark.parametrize("chunk", [1, 7, 64])
def test_json_array_reader_matches_json_load_across_chunk_boundaries(monkeypatch, chunk):
    records = [{"ID": i, "text": "é" * (i % 5) + "x" * i, "nested": {"a": [1, 2, {"b": "]"}]}} for i in range(40)]
    text = "[\n" + ",\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n]\n"
    monkeypatch.setattr(reading, "CHUNK", chunk)
    parsed = list(reading.json_array_records(io.BytesIO(text.encode())))
    assert [value for _, value in parsed] == json.loads(text)
    assert [line for line, _ in parsed] == list(range(2, 42))


def test_json_array_reader_names_the_line_of_a_broken_element(monkeypatch):
    monkeypatch.setattr(reading, "CHUNK", 5)
    text = b'[\n {"a": 1},\n {"a": 2},\n {"a": 3 "b": 4}\n]'
    with pytest.raises(ImportFailed) as failure:
        list(reading.json_array_records(io.BytesIO(text)))
    assert failure.value.problems[0].line == 4


def test_command_prints_problems_and_exits_non_zero(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(small_corpus_lines(1) + b'{"id": "c9", "turns": ["a"], "responses": {"mystery": "x"}}\n')
    with pytest.raises(CommandError, match=r"line 3, responses.mystery: unknown system"):
        call_command("import_dialogues", str(bad))
    assert Corpus.objects.count() == 0


def test_command_exit_status_is_non_zero_in_a_real_process(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"\xff\xfe garbage")
    env = {"DJANGO_SETTINGS_MODULE": "config.settings.test", "CONCORD_VAR_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], env=env, check=True, timeout=300)
    result = subprocess.run([sys.executable, "manage.py", "import_dialogues", str(bad)], capture_output=True, text=True,
                            env=env, timeout=120)
    assert result.returncode != 0
    assert "not UTF-8" in result.stderr
    assert "Traceback" not in result.stderr


# --- the real public data sets ---------------------------------------------------------------------

def test_grade_imports_as_a_closed_benchmark_study_with_every_score():
    path = shared_file("grade", "dailydialog_EVAL.json")
    records = json.loads(path.read_text())
    call_command("import_dialogues", str(path), verbosity=0)
    study = Study.objects.get(platform="benchmark")
    assert (study.status, study.design, study.experiment.is_benchmark) == ("closed", "likert", True)
    assert study.items.count() == len(records) == 300
    scores = [json.loads(r["HumanScores"]) for r in records]
    assert Rating.objects.filter(assignment__study=study).count() == sum(len(s) for s in scores)
    assert Assignment.objects.filter(study=study).count() == max(len(s) for s in scores)
    criterion = Criterion.objects.get(study=study)
    assert (criterion.name, criterion.scale_min, criterion.scale_max) == ("coherence", 1, 5)
    first = Conversation.objects.get(external_id=str(records[0]["ID"]))
    stored = sorted(Rating.objects.filter(item__conversation=first).values_list("value", flat=True))
    assert stored == sorted(float(s) for s in scores[0])
    assert first.turns[-1]["text"] == records[0]["Context"].split("|||")[-1].strip()


def test_fed_imports_nine_qualities_with_their_scales_and_missing_annotators():
    path = shared_file("fed", "fed-turn_eval.json")
    records = json.loads(path.read_text())
    summary = do_import(path.read_bytes(), path.name)
    study = summary.benchmark_study
    scales = dict((c.name, (c.scale_min, c.scale_max)) for c in study.criteria.all())
    assert len(scales) == 9
    assert scales["understandable"] == (0, 1) and scales["overall"] == (0, 4) and scales["relevant"] == (0, 2)
    expected = sum(len(v) for r in records for v in r["annotations"].values())
    assert summary.ratings == expected
    assert set(System.objects.filter(responses__conversation__corpus=summary.corpus).values_list("name", flat=True)) == {
        "Human", "Meena", "Mitsuku"}  # names keep their case


def test_dailydialog_pp_imports_three_levels_of_five_responses():
    path = shared_file("dailydialog_pp", "dev.json")
    with path.open("rb") as stream:
        summary = services.dialogues_import(stream=stream, source_name=path.name)
    assert summary.conversations == 1028 and summary.responses == 1028 * 15
    conversation = Conversation.objects.filter(corpus=summary.corpus).first()
    levels = dict(conversation.responses.values_list("system__name").annotate(__import__("django").db.models.Count("id")))
    assert levels == {"ddpp-relevant": 5, "ddpp-adversarial": 5, "ddpp-random": 5}


# --- inputs that were HTTP 500s: each a line/field problem through the API and the command, nothing written ---

HEADER = {"concord": "dialogues/1", "systems": ["bot", "human"], "reference": "human"}


def _conversation(**changes) -> dict:
    return {"id": "c1", "turns": ["Hi", "Hello, how are you?"], "responses": {"bot": "Fine.", "human": "Good, you?"},
            **changes}


def _jsonl(*conversations, header=HEADER) -> bytes:
    return ("\n".join([json.dumps(header), *conversations]) + "\n").encode()


def _fed(records) -> bytes:
    return json.dumps(records).encode()


def _grade_record(scores, **changes) -> dict:
    return {"ID": "g1", "Dataset": "dd", "DialogModel": "transformer", "Context": "Hi|||Hello there",
            "Response": "How are you?", "HumanScores": scores, **changes}


def _fed_record(**annotations) -> dict:
    return {"context": "User: Hi\nSystem: Hello\nUser: How are you?", "response": "System: Fine thanks.",
            "model": "Meena", "annotations": annotations}


DEEP = "[" * 100_000 + "]" * 100_000
BAD_INPUTS = [
    # (name, file bytes, line, field, words in the message)
    ("deep.jsonl", _jsonl('{"id": "c1", "turns": ' + DEEP + ', "responses": {"bot": "x"}}'), 2, "turns", "nested"),
    ("deep.json", ('[{"ID": "g1", "HumanScores": "[3]", "Context": ' + DEEP + "}]").encode(), 1, "Context", "nested"),
    ("nul-text.jsonl", _jsonl(json.dumps(_conversation(turns=["Hi\u0000", "Hello"]))), 2, "turns[0]", "NUL"),
    ("nul-id.jsonl", _jsonl(json.dumps(_conversation(id="c\u00001"))), 2, "id", "NUL"),
    ("nul.csv", b"conversation_id,context,system,response\nc1,Hi|||Hello,bot,Fi\x00ne\n", 2, "responses.bot", "NUL"),
    ("surrogate-text.jsonl", _jsonl('{"id": "c1", "turns": ["Hi", "Hello"], "responses": {"bot": "x\\ud800"}}'),
     2, "responses.bot", "surrogate"),
    ("surrogate-id.jsonl", _jsonl('{"id": "c\\udfff", "turns": ["Hi", "Hello"], "responses": {"bot": "x"}}'),
     2, "id", "surrogate"),
    ("nan-id.jsonl", _jsonl('{"id": NaN, "turns": ["Hi", "Hello"], "responses": {"bot": "x"}}'), 2, "id", "NaN"),
    ("nan-metadata.jsonl", _jsonl('{"id": "c1", "turns": ["Hi", "Hello"], "responses": {"bot": "x"}, '
                                  '"metadata": {"score": -Infinity}}'), 2, "metadata.score", "-Infinity"),
    ("long-ids.jsonl", _jsonl(json.dumps(_conversation(id="x" * 120 + "a")), json.dumps(_conversation(id="x" * 120 + "b"))),
     2, "id", "at most 120"),
    ("long-system.jsonl", _jsonl(json.dumps(_conversation(responses={"s" * 81: "x"})),
                                 header={**HEADER, "systems": ["s" * 81, "human"]}), 2, "responses.", "at most 80"),
    ("many.jsonl", _jsonl(json.dumps(_conversation(responses={"bot": ["r"] * 40_000}))), 2, "responses", "at most 1000"),
    ("header.jsonl", _jsonl(json.dumps(_conversation()), header={**HEADER, "human_systems": 5}), 1, "human_systems",
     "list of system names"),
    ("null-scores.json", _fed([_fed_record(overall=[None])]), 1, "annotations.overall", "no score"),
    ("nan-fed.json", _fed([_fed_record(overall=[float("nan"), 3])]), 1, "annotations.overall[0]", "NaN"),
    ("inf-fed.json", _fed([_fed_record(overall=[3, float("inf")])]), 1, "annotations.overall[1]", "Infinity"),
    ("nan-grade.json", _fed([_grade_record("[3, NaN, 4]")]), 1, "HumanScores[1]", "NaN"),
    ("huge-grade.json", _fed([_grade_record([3, 1e999])]).replace(b"Infinity", b"1e999"), 1, "HumanScores[1]",
     "too large"),
]


@pytest.mark.parametrize(("name", "data", "line", "field", "words"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_inputs_that_were_500s_are_line_and_field_problems(api, tmp_path, name, data, line, field, words):
    from django.core.files.uploadedfile import SimpleUploadedFile

    before = row_counts()
    response = api.post("/api/imports/", {"file": SimpleUploadedFile(name, data)}, format="multipart")
    assert response.status_code == 400, response.content[:300]
    problems = problem_fields(response)["file"]
    assert any(p.startswith(f"line {line}, {field}") and words in p for p in problems), problems
    assert row_counts() == before
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(CommandError) as failure:
        call_command("import_dialogues", str(path), verbosity=0)
    assert f"line {line}, {field}" in str(failure.value) and words in str(failure.value)
    assert row_counts() == before


def test_fed_empty_annotation_list_is_a_missing_value_and_a_bare_number_one_rating():
    records = [_fed_record(overall=[3, 4], interesting=[]), _fed_record(overall=2, interesting=[1])]
    records[1]["context"] = "User: Good morning\nSystem: Morning!"
    summary = do_import(_fed(records), name="fed.json")
    assert summary.missing_scores == {"interesting": 1}
    ratings = Rating.objects.filter(assignment__study=summary.benchmark_study)
    assert sorted(ratings.filter(criterion__name="overall").values_list("value", flat=True)) == [2, 3, 4]
    assert list(ratings.filter(criterion__name="interesting").values_list("value", flat=True)) == [1]


# --- background imports ------------------------------------------------------------------------------

@pytest.fixture
def uploads(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    return tmp_path / "imports"


def _background(api, data: bytes, name="pilot.jsonl"):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return api.post("/api/imports/", {"file": SimpleUploadedFile(name, data), "run_in_background": "true"},
                    format="multipart")


def test_oversized_upload_is_refused_and_nothing_is_kept(api, uploads, settings):
    from studies.models import ImportJob

    settings.IMPORT_MAX_BYTES = 100_000
    for background in (True, False):
        from django.core.files.uploadedfile import SimpleUploadedFile
        response = api.post("/api/imports/", {"file": SimpleUploadedFile("big.jsonl", small_corpus_lines(2000)),
                                              "run_in_background": str(background).lower()}, format="multipart")
        assert response.status_code == 400
        assert "larger than the import limit" in problem_fields(response)["file"][0]
    assert not ImportJob.objects.exists() and not Corpus.objects.exists()
    assert not uploads.exists() or not any(uploads.iterdir())


def test_size_limit_handler_stops_reading_at_the_limit():
    from django.core.files.uploadhandler import StopUpload

    from studies.corpora.importing.uploads import SizeLimitUploadHandler

    handler = SizeLimitUploadHandler(limit=10_000)
    handler.new_file("file", "big.jsonl", "application/octet-stream", None)
    received = 0
    for _ in range(100):  # a 400 KB upload in 4 KiB chunks
        try:
            handler.receive_data_chunk(b"x" * 4096, received)
        except StopUpload:
            break
        received += 4096
    assert handler.exceeded and received == 8192  # stopped at the first chunk past the limit


def test_background_job_done_or_failed_deletes_its_upload(api, uploads):
    from studies.models import ImportJob

    ok = _background(api, small_corpus_lines(3))
    bad = _background(api, b'{"id": "c1"}\n', name="bad.jsonl")
    assert (ok.status_code, bad.status_code) == (202, 202)
    jobs = [ImportJob.objects.get(pk=r.json()["job"]) for r in (ok, bad)]
    assert all(os.path.exists(job.path) for job in jobs)
    done, failed = (services.import_job_run(job=job) for job in jobs)
    assert (done.status, failed.status) == ("done", "failed")
    assert "line 1, turns" in failed.message
    assert not any(os.path.exists(job.path) for job in jobs)
    assert api.get(f"/api/imports/{failed.pk}/").json()["status"] == "failed"


def test_background_job_with_an_unexpected_error_ends_failed_with_a_message(api, uploads, monkeypatch):
    from studies.models import ImportJob

    job = ImportJob.objects.get(pk=_background(api, small_corpus_lines(3)).json()["job"])

    def broken(**kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(services, "dialogues_import", broken)
    job = services.import_job_run(job=job)
    assert job.status == "failed" and "unexpected error (RuntimeError)" in job.message and str(job.pk) in job.message
    assert job.finished_at is not None and not os.path.exists(job.path)


def test_a_redelivered_import_task_takes_over_a_job_left_running(api, uploads):
    from studies.models import ImportJob
    from studies.tasks import import_job_run

    job = ImportJob.objects.get(pk=_background(api, small_corpus_lines(3)).json()["job"])
    ImportJob.objects.filter(pk=job.pk).update(status="running")  # its first worker was killed
    assert import_job_run.apply(args=[job.pk]).get() == "running"  # a plain second delivery leaves it alone
    import_job_run.push_request(delivery_info={"redelivered": True})
    try:
        assert import_job_run.run(job.pk) == "done"
    finally:
        import_job_run.pop_request()
    assert Corpus.objects.filter(slug="pilot").exists() and not os.path.exists(job.path)


def test_one_rating_per_record_files_become_annotator_positions_of_one_item():
    grade = [_grade_record([3]), _grade_record([4]), _grade_record(5), _grade_record([2], ID="g2", Response="Bye.")]
    summary = do_import(_fed(grade), name="grade-long.json")
    assert (summary.conversations, summary.ratings) == (2, 4)
    ratings = Rating.objects.filter(assignment__study=summary.benchmark_study)
    g1 = ratings.filter(item__conversation__external_id="g1")
    assert sorted(g1.values_list("value", flat=True)) == [3, 4, 5] and g1.values("assignment").distinct().count() == 3
    fed = [_fed_record(overall=[3]), _fed_record(overall=[4], fluent=[1]), _fed_record(overall=2)]
    summary = do_import(_fed(fed), name="fed-long.json")
    assert (summary.conversations, summary.ratings) == (1, 4)
    clash = [_grade_record([3]), _grade_record([4], Response="Something else.")]
    with pytest.raises(ImportFailed, match="line 1, id: duplicate conversation id 'g1'"):
        do_import(_fed(clash), name="clash.json")
