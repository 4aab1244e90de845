"""Concord's ratings export in Label Studio's task format (a download and the API) with the labeling
configuration, and a round trip Concord -> Label Studio JSON -> Concord keeps every answer."""
import io
import json
from xml.etree import ElementTree

import pytest

from studies.authoring import services as authoring
from studies.authoring.ratings_import import ratings_table_import
from studies.models import Rating
from studies.reports.label_studio_export import label_studio_config, label_studio_tasks
from tests.studies.dataio_files import dumps, import_bytes
from tests.studies.test_ratings_import import SYSTEMS, full_rows, table

pytestmark = pytest.mark.django_db

LABELS = ["repetitive", "off-topic", "rude"]


def rated_study(user, corpus, *, dialogue=False):
    """A closed study with a scale, a categorical, a multi-label and a free-text criterion, rated by three
    raters through the ratings import."""
    experiment = authoring.experiment_create(owner=user, title="to label studio")
    criteria = [{"name": "coherence"},
                {"name": "safety", "question": "Safe?", "kind": "categorical", "options": {"labels": ["safe", "unsafe"]}},
                {"name": "problems", "question": "Problems?", "kind": "multilabel", "options": {"labels": LABELS}},
                {"name": "note", "question": "Anything to add?", "kind": "free_text"}]
    study = authoring.study_create(experiment=experiment, title="ls", design="likert", criteria=criteria,
                                   unit="dialogue" if dialogue else "response")
    if dialogue:
        authoring.study_items_build(study=study, corpus=corpus)
    else:
        authoring.study_items_build(study=study, corpus=corpus, systems=list(SYSTEMS), reference_system="human")
    rows = []
    for i, item in enumerate(study.items.select_related("conversation").order_by("position")):
        for s, system in enumerate([""] if dialogue else SYSTEMS):
            for r, rater in enumerate(("ann1", "ann2", "ann3")):
                target = [rater, item.conversation.external_id, system]
                rows += [target + ["coherence", 1 + (i + s + r) % 5],
                         target + ["safety", ["safe", "unsafe"][(i + r) % 2]],
                         target + ["problems", ";".join(LABELS[: (i + s + r) % 3])],
                         target + ["note", f"note {i}-{s}-{r}" if (i + r) % 2 else ""]]
    rows = [row for row in rows if not (row[3] == "note" and not row[4])]  # a free text left empty: no answer
    ratings_table_import(study=study, stream=io.BytesIO(table(rows)), source_name="r.csv")
    study.refresh_from_db()
    return study


def answers(study):
    """Each rater's answers as a frozenset of (conversation, system, criterion, answer); the raters' sets
    sorted (rater names differ between the two studies, their answers must not)."""
    by_rater = {}
    for r in Rating.objects.filter(assignment__study=study).select_related(
            "criterion", "response__system", "item__conversation", "conversation"):
        answer = r.value if r.value is not None else r.label if r.label is not None else \
            tuple(sorted(r.labels)) if r.labels is not None else r.text
        conversation = (r.conversation or r.item.conversation).external_id
        system = r.response.system.name if r.response_id else None
        by_rater.setdefault(r.assignment_id, set()).add((conversation, system, r.criterion.name, answer))
    return sorted(map(sorted, by_rater.values()))


def test_label_studio_export_has_one_task_per_target_one_annotation_per_rater(user, corpus):
    study = rated_study(user, corpus)
    tasks = label_studio_tasks(study)
    assert len(tasks) == study.items.count() * len(SYSTEMS)
    task = tasks[0]
    assert set(task["data"]) == {"conversation_id", "dialogue", "response", "system"}
    assert task["data"]["dialogue"][0] == {"author": "A", "text": "Hello number 0"}
    assert sorted(a["completed_by"] for a in task["annotations"]) == [1, 2, 3]
    types = {(r["from_name"], r["type"]) for a in task["annotations"] for r in a["result"]}
    assert {("coherence", "rating"), ("safety", "choices"), ("problems", "choices")} <= types
    assert all(r["to_name"] == "response" for a in task["annotations"] for r in a["result"])


def test_label_studio_export_leaves_out_check_items_and_excluded_raters(user, corpus):
    study = rated_study(user, corpus)
    first = study.assignments.order_by("pk").first()
    first.excluded = True
    first.save(update_fields=["excluded"])
    assert all(len(t["annotations"]) == 2 for t in label_studio_tasks(study))


def test_label_studio_round_trip_keeps_every_answer(user, corpus):
    study = rated_study(user, corpus)
    exported = dumps(label_studio_tasks(study))
    back = import_bytes(user, exported, "from-concord.json")
    assert back.format == "label-studio"
    assert answers(back.benchmark_study) == answers(study)
    assert back.ratings == Rating.objects.filter(assignment__study=study).count()


def test_label_studio_round_trip_of_a_dialogue_unit_study(user, corpus):
    study = rated_study(user, corpus, dialogue=True)
    tasks = label_studio_tasks(study)
    assert "response" not in tasks[0]["data"]
    back = import_bytes(user, dumps(tasks), "dialogues-back.json")
    assert back.unit == "dialogue" and back.benchmark_study.unit == "dialogue"
    assert answers(back.benchmark_study) == answers(study)


def test_label_studio_round_trip_keeps_the_rationale(user, corpus):
    study = rated_study(user, corpus)
    Rating.objects.filter(assignment__study=study, criterion__name="safety").update(rationale="because")
    back = import_bytes(user, dumps(label_studio_tasks(study)), "why.json")
    assert set(Rating.objects.filter(assignment__study=back.benchmark_study, criterion__name="safety-rationale")
               .values_list("text", flat=True)) == {"because"}


def test_label_studio_config_names_every_criterion_with_its_control(user, corpus):
    study = rated_study(user, corpus)
    root = ElementTree.fromstring(label_studio_config(study))
    controls = {el.get("name"): el.tag for el in root if el.get("name")}
    assert controls == {"dialogue": "Paragraphs", "response": "Text", "coherence": "Rating", "safety": "Choices",
                        "problems": "Choices", "note": "TextArea"}
    assert root.find("Rating").get("maxRating") == str(study.design_config["points"])
    assert [c.get("value") for c in root.find("Choices[@name='problems']")] == LABELS
    assert root.find("Choices[@name='problems']").get("choice") == "multiple"


def test_label_studio_export_download_and_api(user, corpus, client, api):
    study = rated_study(user, corpus)
    client.force_login(user)
    download = client.get(f"/studies/{study.slug}/label-studio.json")
    assert download.status_code == 200 and "no-store" in download["Cache-Control"]
    assert json.loads(download.content) == label_studio_tasks(study)
    assert client.get(f"/studies/{study.slug}/label-studio.xml").content.decode() == label_studio_config(study)
    body = api.get(f"/api/studies/{study.slug}/label-studio/").json()
    assert body["tasks"] == label_studio_tasks(study) and body["label_config"].startswith("<View>")


def test_label_studio_export_is_refused_to_another_researcher(user, other_user, corpus, client):
    study = rated_study(user, corpus)
    client.force_login(other_user)
    assert client.get(f"/studies/{study.slug}/label-studio.json").status_code == 404
    assert client.get(f"/studies/{study.slug}/label-studio.xml").status_code == 404
    client.logout()
    assert client.get(f"/studies/{study.slug}/label-studio.json").status_code == 302  # to the login page


def test_label_studio_export_api_refused_to_another_researcher(user, other_user, corpus):
    from rest_framework.test import APIClient

    from tests.factories import token_for
    study = rated_study(user, corpus)
    intruder = APIClient()
    intruder.credentials(HTTP_AUTHORIZATION=f"Token {token_for(other_user)}")
    assert intruder.get(f"/api/studies/{study.slug}/label-studio/").status_code == 404


def test_label_studio_export_magnitude_values_are_numbers(make_study):
    study = make_study("rme", publish=False)
    rows = [[r, "c0", "hred", "coherence", v] for r, v in (("a", 150), ("b", 37.5))]
    ratings_table_import(study=study, stream=io.BytesIO(table(rows)), source_name="r.csv")
    (task,) = label_studio_tasks(study)
    assert sorted(r["value"]["number"] for a in task["annotations"] for r in a["result"]) == [37.5, 150.0]
    assert "<Number name=\"coherence\"" in label_studio_config(study)


def test_label_studio_export_of_full_likert_rows_round_trips(make_study, user):
    study = make_study("likert", publish=False)
    ratings_table_import(study=study, stream=io.BytesIO(table(full_rows(study))), source_name="r.csv")
    back = import_bytes(user, dumps(label_studio_tasks(study)), "likert-back.json")
    assert answers(back.benchmark_study) == answers(study)
