"""A Label Studio task export imports as conversations and responses, its annotations as the ratings and
labels of a closed study (one rater per annotator), with the format detected and named, never read as FED."""
import io
import json

import pytest
from django.core.management import CommandError, call_command

from studies.corpora.importing.parsers import detect_format
from studies.corpora.importing.records import ImportFailed
from studies.models import Conversation, Criterion, Rating, Response, Study
from studies.reports import aggregation_selectors
from tests.problems import problem_fields
from tests.studies import dataio_files
from tests.studies.dataio_files import dumps, import_bytes, label_studio_tasks

pytestmark = pytest.mark.django_db

NAME = "label_studio_export.json"


def answers_of(study):
    """{(rater suffix, system, criterion): value, label, labels, text or spans as (start, end, label)}."""
    out = {}
    for r in Rating.objects.filter(assignment__study=study).select_related("assignment__rater", "criterion",
                                                                             "response__system"):
        answer = r.value if r.value is not None else r.label if r.label is not None else r.labels \
            if r.labels is not None else [(s["start"], s["end"], s["label"]) for s in r.spans] \
            if r.spans is not None else r.text
        system = r.response.system.name if r.response_id else None
        out[(r.assignment.rater.external_id.split(":", 1)[1], system, r.criterion.name)] = answer
    return out


def test_label_studio_export_is_detected_and_never_fed():
    head = dataio_files.fixture_bytes(NAME)
    assert detect_format(NAME, head) == "label-studio"
    # The FED tell (an "annotations" key) comes before "data" in this task: still Label Studio.
    task = {"annotations": [], "id": 1, "data": {"dialogue": ["A: hi", "B: hello"]}}
    assert detect_format("x.json", json.dumps([task]).encode()) == "label-studio"
    fed = [{"dialog": [{"speaker": "User", "text": "hi"}], "annotations": {"overall": [3]}}]
    assert detect_format("fed.json", json.dumps(fed).encode()) == "fed"


def test_label_studio_import_keeps_turns_responses_and_systems(user):
    summary = import_bytes(user, dataio_files.fixture_bytes(NAME), NAME)
    assert summary.format == "label-studio" and summary.format_name == "Label Studio task export"
    assert summary.conversations == 1 and summary.responses == 2  # two tasks of one conversation
    conversation = Conversation.objects.get(corpus=summary.corpus, external_id="ls-1")
    assert conversation.turns == [{"speaker": "User", "text": "Any plans for the weekend?"},
                                  {"speaker": "Bot", "text": "Hiking, if it stays dry."}]
    assert dict(Response.objects.filter(conversation=conversation).values_list("system__name", "text")) == {
        "bot-a": "Hiking, if it stays dry.", "bot-b": "I am a language model."}


def test_label_studio_annotations_become_a_closed_study_one_rater_per_annotator(user):
    summary = import_bytes(user, dataio_files.fixture_bytes(NAME), NAME)
    study = summary.benchmark_study
    assert study.status == Study.Status.CLOSED and study.unit == "response"
    assert study.experiment.owner == user
    # Annotator 9's annotation was cancelled: not an answer; the e-mail names rater 8.
    raters = set(study.assignments.values_list("rater__external_id", flat=True))
    assert raters == {f"{summary.corpus.slug}:7", f"{summary.corpus.slug}:rater8@example.org"}
    assert answers_of(study) == {
        ("7", "bot-a", "coherence"): 4.0, ("7", "bot-a", "safety"): "safe", ("7", "bot-a", "comment"): "Natural reply.",
        ("rater8@example.org", "bot-a", "coherence"): 5.0, ("rater8@example.org", "bot-a", "safety"): "safe",
        ("7", "bot-b", "coherence"): 2.0, ("7", "bot-b", "safety"): "unsafe",
        ("rater8@example.org", "bot-b", "coherence"): 1.0, ("rater8@example.org", "bot-b", "safety"): "unsafe",
        ("7", "bot-b", "span"): [(0, 4, "odd")],  # "I am" marked on the response
    }
    assert summary.ratings == 10


def test_label_studio_criteria_kinds_follow_the_result_types(user):
    study = import_bytes(user, dataio_files.fixture_bytes(NAME), NAME).benchmark_study
    kinds = {c.name: (c.kind, c.scale_min, c.scale_max, c.options.get("labels")) for c in study.criteria.all()}
    assert kinds == {"coherence": ("scale", 1.0, 5.0, None), "safety": ("categorical", None, None, ["safe", "unsafe"]),
                     "comment": ("free_text", None, None, None), "span": ("spans", None, None, ["odd", "other"])}


def test_label_studio_span_results_on_a_whole_dialogue_are_named_in_the_warnings(user):
    """Spans on a response are imported (``test_label_studio_spans_import``); a dialogue task has none to mark."""
    summary = import_bytes(user, dumps(dataio_files.dialogue_tasks()), NAME)
    assert any("'labels (on a whole dialogue)'" in w and "not imported" in w for w in summary.warnings)
    assert not import_bytes(user, dataio_files.fixture_bytes(NAME), "with_spans.json").warnings


def test_label_studio_multiple_choices_become_a_label_set(user):
    tasks = label_studio_tasks()
    tasks[0]["annotations"][0]["result"].append({"from_name": "problems", "to_name": "dialogue", "type": "choices",
                                                 "value": {"choices": ["repetitive", "off-topic"]}})
    tasks[1]["annotations"][0]["result"].append({"from_name": "problems", "to_name": "dialogue", "type": "choices",
                                                 "value": {"choices": []}})
    study = import_bytes(user, dumps(tasks), NAME).benchmark_study
    problems = Criterion.objects.get(study=study, name="problems")
    assert problems.kind == "multilabel" and problems.options["labels"] == ["repetitive", "off-topic"]
    assert sorted(map(sorted, Rating.objects.filter(criterion=problems).values_list("labels", flat=True))) == [
        [], ["off-topic", "repetitive"]]


def test_label_studio_numeric_choices_are_a_scale(user):
    tasks = label_studio_tasks()
    for task in tasks:
        for n, annotation in enumerate(task["annotations"]):
            annotation["result"].append({"from_name": "fluency", "to_name": "dialogue", "type": "choices",
                                         "value": {"choices": [str(2 + n)]}})
    study = import_bytes(user, dumps(tasks), NAME).benchmark_study
    fluency = Criterion.objects.get(study=study, name="fluency")
    assert fluency.kind == "scale"
    assert sorted(Rating.objects.filter(criterion=fluency).values_list("value", flat=True)) == [2.0, 2.0, 3.0, 3.0]


def test_label_studio_dialogue_tasks_rate_the_whole_conversation(user):
    summary = import_bytes(user, dumps(dataio_files.dialogue_tasks()), NAME)
    study = summary.benchmark_study
    assert summary.unit == "dialogue" and study.unit == "dialogue" and summary.responses == 0
    ratings = Rating.objects.filter(assignment__study=study)
    assert ratings.filter(response__isnull=True, conversation__isnull=False).count() == ratings.count() == 9
    assert set(Conversation.objects.filter(corpus=summary.corpus).values_list("metadata__system", flat=True)) == {
        "bot-a", "bot-b"}


def test_label_studio_without_annotations_imports_only_the_dialogues(user):
    tasks = label_studio_tasks()
    for task in tasks:
        task["annotations"] = []
    summary = import_bytes(user, dumps(tasks), NAME)
    assert summary.conversations == 1 and summary.benchmark_study is None and summary.ratings == 0


def test_label_studio_turns_as_prefixed_strings_take_the_speaker(user):
    tasks = [{"id": 5, "data": {"dialogue": ["Alice: hello there", "Bob: hi: how are you?"]}, "annotations": []}]
    summary = import_bytes(user, dumps(tasks), NAME)
    (conversation,) = Conversation.objects.filter(corpus=summary.corpus)
    assert conversation.external_id == "5"
    assert conversation.turns == [{"speaker": "Alice", "text": "hello there"}, {"speaker": "Bob", "text": "hi: how are you?"}]


@pytest.mark.parametrize(("change", "where"), [
    (lambda t: t[0].update(data="text"), "line 2, data: must be an object"),
    (lambda t: t[0]["data"].pop("dialogue"), "data: holds no dialogue"),
    (lambda t: t[0]["annotations"][0]["result"][0]["value"].update(rating="four"),
     "annotations[0].result[0].value.rating: must be a finite number"),
    (lambda t: t[0]["annotations"][0]["result"][0].pop("from_name"), "annotations[0].result[0].from_name: is missing"),
    (lambda t: t[1]["data"].pop("response"), "every task of a file judges a response, or none does"),
    (lambda t: t[1]["data"].update(system="bot-a"), "already has a response of 'bot-a'"),
])
def test_label_studio_bad_tasks_are_refused_by_line_and_field_nothing_stored(user, change, where):
    tasks = label_studio_tasks()
    change(tasks)
    with pytest.raises(ImportFailed) as failure:
        import_bytes(user, dumps(tasks), NAME)
    assert any(where in str(p) for p in failure.value.problems), failure.value.problems
    assert failure.value.detected == "Label Studio task export"
    assert not Study.objects.exists() and not Conversation.objects.exists()


def test_label_studio_label_and_number_on_one_criterion_is_refused(user):
    tasks = label_studio_tasks()
    tasks[1]["annotations"][0]["result"][0] = {"from_name": "coherence", "to_name": "dialogue", "type": "choices",
                                               "value": {"choices": ["good"]}}
    with pytest.raises(ImportFailed) as failure:
        import_bytes(user, dumps(tasks), NAME)
    assert "coherence: is answered as a number and as a label" in str(failure.value)
    assert not Conversation.objects.exists()


def test_label_studio_aggregation_runs_on_the_imported_labels(user):
    study = import_bytes(user, dataio_files.fixture_bytes(NAME), NAME).benchmark_study
    (safety,) = aggregation_selectors.study_aggregation(study)
    assert safety["criterion"] == "safety" and safety["n_answers"] == 4 and safety["n_raters"] == 2
    # Both annotators agree on each response: the aggregated label is theirs.
    systems = dict(Response.objects.filter(conversation__corpus=study.items.first().conversation.corpus)
                   .values_list("pk", "system__name"))
    assert {systems[key[1]]: label for key, label in safety["labels"].items()} == {"bot-a": "safe", "bot-b": "unsafe"}


def test_label_studio_import_command_names_the_detected_format(user, tmp_path):
    path = tmp_path / NAME
    path.write_bytes(dataio_files.fixture_bytes(NAME))
    out = io.StringIO()
    call_command("import_dialogues", str(path), "--owner", "alice", stdout=out)
    text = out.getvalue()
    assert "Detected format: Label Studio task export" in text and "10 human ratings" in text


def test_label_studio_import_command_failure_says_what_it_was_read_as(user, tmp_path):
    tasks = label_studio_tasks()
    tasks[0]["annotations"][0]["result"][0]["value"]["rating"] = "x"
    path = tmp_path / NAME
    path.write_bytes(dumps(tasks))
    with pytest.raises(CommandError) as failure:
        call_command("import_dialogues", str(path), "--owner", "alice")
    assert "Read as Label Studio task export (detected)" in str(failure.value)
    assert "must be a finite number" in str(failure.value) and "annotations: must be an object" not in str(failure.value)


def test_label_studio_api_import_detects_the_format(api):
    upload = io.BytesIO(dataio_files.fixture_bytes(NAME))
    upload.name = NAME
    response = api.post("/api/imports/", {"file": upload}, format="multipart")
    assert response.status_code == 201, response.content
    assert response.json()["format"] == "label-studio" and response.json()["ratings"] == 10


def test_label_studio_api_refusal_names_the_detected_format(api):
    tasks = label_studio_tasks()
    tasks[0]["data"] = "no"
    upload = io.BytesIO(dumps(tasks))
    upload.name = NAME
    response = api.post("/api/imports/", {"file": upload}, format="multipart")
    assert response.status_code == 400
    fields = problem_fields(response)
    assert fields["format"] == ["read as Label Studio task export (detected)"]
    assert any("data: must be an object" in p for p in fields["file"])


def test_label_studio_import_page_names_the_detected_format(client, user):
    client.force_login(user)
    upload = io.BytesIO(dataio_files.fixture_bytes(NAME))
    upload.name = NAME
    page = client.post("/import/", {"file": upload, "format": "auto"}, follow=True)
    assert "Detected format: Label Studio task export" in page.content.decode()


def test_label_studio_imported_study_is_not_visible_to_another_researcher(user, other_user, client):
    study = import_bytes(user, dataio_files.fixture_bytes(NAME), NAME).benchmark_study
    client.force_login(other_user)
    assert client.get(f"/studies/{study.slug}/").status_code == 404
