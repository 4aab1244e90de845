"""Label Studio's span results (``labels`` with start, end and text on the response's text field) import as
the marked spans of a span criterion in the closed study of the annotations: every region of one annotator
and control is one answer, one span per label, offsets into the stored response; a bad region is refused by
its line and field with nothing stored. The spans then read like any span study's (the span API), and
another researcher sees none of it."""
import io
import json

import pytest
from rest_framework.test import APIClient

from studies.corpora.importing.records import ImportFailed
from studies.models import Conversation, Criterion, Rating, Study
from tests.api.test_convention import client_of
from tests.problems import problem_fields
from tests.studies.dataio_files import dumps, import_bytes

pytestmark = pytest.mark.django_db
NAME = "ls_spans.json"
REPLY = "Paris is in Spain, and it is cold."


def region(start, end, labels, rid, *, text=None, name="errors"):
    value = {"start": start, "end": end, "labels": labels}
    if text is not False:
        value["text"] = REPLY[start:end] if text is None else text
    return {"id": rid, "from_name": name, "to_name": "response", "type": "labels", "value": value}


def tasks(**changes):
    """Two annotators marking the one response; annotator 1 draws two regions (one with two labels)."""
    first = [region(12, 17, ["factual error"], "a1"), region(29, 33, ["odd", "factual error"], "a2"),
             {"id": "a3", "from_name": "overall", "to_name": "response", "type": "rating", "value": {"rating": 2}}]
    second = [region(12, 17, ["factual error"], "b1"), region(12, 17, ["factual error"], "b1-again")]
    task = {"id": 1, "data": {"conversation_id": "c1", "dialogue": ["User: Where is Paris?", f"Bot: {REPLY}"],
                              "response": REPLY, "system": "bot-a"},
            "annotations": [{"completed_by": 1, "result": first}, {"completed_by": 2, "result": second}]}
    for key, value in changes.items():
        task["annotations"][0]["result"][0]["value"][key] = value
    return [task]


def spans_by_rater(study):
    return {r.assignment.rater.external_id.split(":", 1)[1]: [(s["start"], s["end"], s["label"]) for s in r.spans]
            for r in Rating.objects.filter(assignment__study=study, criterion__kind="spans")
            .select_related("assignment__rater")}


def test_span_results_become_span_answers_one_per_annotator(user):
    summary = import_bytes(user, dumps(tasks()), NAME)
    study = summary.benchmark_study
    criterion = Criterion.objects.get(study=study, name="errors")
    assert criterion.kind == "spans" and criterion.options == {"labels": ["factual error", "odd"], "overlap": True}
    assert spans_by_rater(study) == {
        "1": [(12, 17, "factual error"), (29, 33, "factual error"), (29, 33, "odd")],
        "2": [(12, 17, "factual error")],  # a region drawn twice is one span
    }
    response = Rating.objects.filter(assignment__study=study, criterion=criterion).first().response
    assert response.text[12:17] == "Spain" and response.text[29:33] == "cold"
    assert summary.ratings == 3 and not summary.warnings  # two span answers and one rating


def test_span_results_without_text_are_taken_by_their_offsets(user):
    summary = import_bytes(user, dumps(_without_text()), NAME)
    assert spans_by_rater(summary.benchmark_study)["1"][0] == (12, 17, "factual error")


def test_span_offsets_follow_the_response_as_stored_without_its_surrounding_spaces(user):
    padded = tasks()
    padded[0]["data"]["response"] = "  " + REPLY
    for annotation in padded[0]["annotations"]:
        for result in annotation["result"]:
            if result["type"] == "labels":
                result["value"].update(start=result["value"]["start"] + 2, end=result["value"]["end"] + 2)
    study = import_bytes(user, dumps(padded), NAME).benchmark_study
    assert spans_by_rater(study)["2"] == [(12, 17, "factual error")]
    assert Rating.objects.filter(assignment__study=study, criterion__kind="spans").first().response.text == REPLY


def _without_text():
    found = tasks()
    found[0]["annotations"][0]["result"][0]["value"].pop("text")
    return found


@pytest.mark.parametrize(("changes", "where"), [
    ({"start": "12"}, "line 2, annotations[0].result[0].value.start: must be a whole number of characters"),
    ({"end": 99}, "annotations[0].result[0].value: [12, 99) is outside the response (it has 34 characters"),
    ({"start": 17, "end": 12}, "annotations[0].result[0].value: [17, 12) is outside the response"),
    ({"text": "Paris"}, "annotations[0].result[0].value.text: 'Paris' is not the response's characters 12 to 17 ('Spain')"),
    ({"labels": []}, "annotations[0].result[0].value.labels: must be a list of labels of 1 to 60 characters"),
])
def test_a_bad_span_row_is_refused_by_line_and_field_nothing_stored(user, changes, where):
    with pytest.raises(ImportFailed) as failure:
        import_bytes(user, dumps(tasks(**changes)), NAME)
    assert any(where in str(p) for p in failure.value.problems), failure.value.problems
    assert not Study.objects.exists() and not Conversation.objects.exists()


def test_spans_and_a_rating_on_one_control_is_refused(user):
    bad = tasks()
    bad[0]["annotations"][1]["result"].append(
        {"id": "x", "from_name": "errors", "to_name": "response", "type": "rating", "value": {"rating": 3}})
    with pytest.raises(ImportFailed) as failure:
        import_bytes(user, dumps(bad), NAME)
    assert "errors: is answered as marked spans and as a rating, choice or text" in str(failure.value)


def test_span_import_through_the_api_then_the_span_api_reads_them(api):
    upload = io.BytesIO(dumps(tasks()))
    upload.name = NAME
    created = api.post("/api/imports/", {"file": upload}, format="multipart")
    assert created.status_code == 201, created.content
    assert created.json()["format"] == "label-studio" and created.json()["ratings"] == 3
    study = Study.objects.get(experiment__is_benchmark=True)
    spans = api.get(f"/api/studies/{study.slug}/spans/?criterion=errors")
    assert spans.status_code == 200, spans.content
    assert "factual error" in json.dumps(spans.json())
    broken = io.BytesIO(dumps(tasks(end=99)))
    broken.name = "other_" + NAME
    refused = api.post("/api/imports/", {"file": broken}, format="multipart")
    assert refused.status_code == 400
    assert any("line 2, annotations[0].result[0].value" in p for p in problem_fields(refused)["file"])


def test_span_import_page_shows_the_line_of_a_bad_row(client, user):
    client.force_login(user)
    upload = io.BytesIO(dumps(tasks(text="Paris")))
    upload.name = NAME
    page = client.post("/import/", {"file": upload, "format": "auto"}, follow=True).content.decode()
    assert "line 2" in page and "is not the response&#x27;s characters 12 to 17" in page
    good = io.BytesIO(dumps(tasks()))
    good.name = NAME
    page = client.post("/import/", {"file": good, "format": "auto"}, follow=True).content.decode()
    assert "(3 ratings)" in page


def test_imported_spans_are_not_visible_to_another_researcher(user, other_user, client):
    study = import_bytes(user, dumps(tasks()), NAME).benchmark_study
    bob = client_of(other_user)
    assert bob.get(f"/api/studies/{study.slug}/spans/").status_code == 404
    client.force_login(other_user)
    assert client.get(f"/studies/{study.slug}/").status_code == 404
    assert APIClient().get(f"/api/studies/{study.slug}/spans/").status_code in (401, 403)
