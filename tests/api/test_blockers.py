"""What blocked scripted use of the API: the built-in metrics exist on a fresh database before any page is opened (under
the README's names), a queued run says when no worker has picked it up, NaN never reaches JSON (a label
nobody picked is ``null``), and a labels study's JSON report and PPI do not say "no ratings" while
label ratings exist."""
import math
from datetime import timedelta

import pytest
from django.core.management import call_command

from metrics.models import MetricModel, ScoringRun
from metrics.scoring import services
from studies.authoring.demo import DEMO_CORPUS, DEMO_FILE, demo_user
from studies.authoring.kinds_demo import KINDS_EXPERIMENT, kinds_demo_load
from studies.corpora import services as corpus_imports
from studies.models import Criterion, Rating

pytestmark = pytest.mark.django_db


def test_builtin_metrics_are_listed_before_any_page_is_opened(api):
    listed = {m["name"]: m["metric"] for m in api.get("/api/metrics/models/").json()["results"]}
    assert {"readability": "readability", "coherence": "coherence"}.items() <= listed.items()


@pytest.mark.django_db(transaction=True)
def test_a_flushed_database_registers_them_again_and_an_old_name_is_renamed(user):
    model = MetricModel.objects.get(name="coherence")
    model.name = "coherence-minilm"
    model.save()
    services.builtin_metrics_register()
    assert set(MetricModel.objects.values_list("name", flat=True)) >= {"coherence", "readability"}
    assert MetricModel.objects.get(name="coherence").pk == model.pk  # renamed, scores kept
    call_command("flush", "--no-input")
    assert set(MetricModel.objects.values_list("name", flat=True)) >= {"coherence", "readability"}


def test_a_run_nobody_picked_up_says_so(api, make_study):
    study = make_study("likert")
    created = api.post("/api/metrics/runs/", {"metric_model": "readability", "study": study.slug}, format="json")
    assert created.status_code == 201 and created.json()["waiting"] is None  # young: no word yet
    run = ScoringRun.objects.get(pk=created.json()["id"])
    ScoringRun.objects.filter(pk=run.pk).update(created_at=run.created_at - timedelta(minutes=5))
    waiting = api.get(f"/api/metrics/runs/{run.pk}/").json()["waiting"]
    assert "no worker has picked it up" in waiting


@pytest.fixture
def labels_only():
    """The judgement-kinds demo without its one scale: a study whose criteria are all labels, with
    label ratings submitted by five simulated raters; nobody ever picks "unsure"."""
    owner = demo_user()
    with DEMO_FILE.open("rb") as stream:
        corpus = corpus_imports.dialogues_import(stream=stream, source_name=DEMO_FILE.name, corpus_slug=DEMO_CORPUS,
                                                 owner=owner).corpus
    study = kinds_demo_load(owner=owner, corpus=corpus).studies.get()
    Criterion.objects.filter(study=study, name="readability").delete()
    Rating.objects.filter(criterion__study=study, label="unsure").update(label="safe")
    readability = MetricModel.objects.get(name="readability")
    services.scoring_run_execute(run=services.scoring_run_create(metric_model=readability, study=study, enqueue=False))
    return owner, study


def _client(user):
    from rest_framework.test import APIClient

    from tests.factories import token_for

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_for(user)}")
    return client


def test_human_metric_of_a_labels_study_is_json_with_null_for_a_label_nobody_picked(labels_only):
    owner, study = labels_only
    response = _client(owner).get(f"/api/experiments/{KINDS_EXPERIMENT}/metrics/readability/")
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    data = response.json()
    unsure = [c for c in data["label_cells"] if c["label"] == "unsure"]
    assert unsure and all(c["positives"] == 0 and c["r_pb"] is None and c["auc"] is None for c in unsure)
    picked = [c for c in data["label_cells"] if c["label"] == "safe"]
    assert picked and all(isinstance(c["auc"], float) and math.isfinite(c["auc"]) for c in picked)
    assert not any("No submitted ratings" in note for note in data["notes"])


def test_report_and_ppi_of_a_labels_study_do_not_say_no_ratings(labels_only):
    owner, study = labels_only
    client = _client(owner)
    report = client.get(f"/api/studies/{study.slug}/report/").json()
    assert not any("No submitted ratings" in note for note in report["notes"])
    safety = next(entry for entry in report["labels"] if entry["criterion"] == "safety")
    assert safety["n"] == Rating.objects.filter(criterion__study=study, criterion__name="safety",
                                                item__check_kind="").count() > 0
    ppi = client.get(f"/api/experiments/{KINDS_EXPERIMENT}/metrics/readability/prediction-powered/").json()
    problems = [s["problem"] for s in ppi["studies"]]
    assert problems and not any(p and "no submitted ratings" in p for p in problems)
