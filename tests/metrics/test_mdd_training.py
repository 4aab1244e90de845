"""MDD-Eval from Django: ``train_metric mdd_eval`` runs teacher → augment → student on a tiny encoder
and toy data, registers the teacher and student as MetricModels and the augmented set as a versioned
TrainingDataset the student takes by name; the student scores a study through the normal scoring path;
bad settings name their field and create nothing; the staff form and the API queue stages."""
import hashlib
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from metrics import registry
from metrics.implementations.base import ScoringInput
from metrics.models import MetricModel, MetricScore, RunStatus, TrainingDataset, TrainingRun
from metrics.scoring.services import builtin_model_names
from metrics.training import services as training
from tests.factories import UserFactory
from tests.ml.mdd_toy import tiny_masked_lm_dir
from tests.ml.toy import tiny_encoder_dir, toy_ddpp
from tests.problems import problem_fields

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mdd-django")
    return {"encoder": tiny_encoder_dir(folder / "encoder"), "mlm": tiny_masked_lm_dir(folder / "mlm"),
            "train": toy_ddpp(folder / "train.json", 16, seed=1), "dialogues": toy_ddpp(folder / "more.json", 6, seed=2)}


@pytest.fixture(autouse=True)
def artifacts(settings, tmp_path):
    settings.ARTIFACTS_DIR = tmp_path / "artifacts"


def test_teacher_augment_student_from_the_command_line_then_score_a_study(toy, corpus, make_study):
    common = ["--encoder", str(toy["encoder"]), "--max-length", "32", "--lr", "2e-3", "--device", "cpu"]
    call_command("train_metric", "mdd_eval", "--stage", "teacher", "--train", str(toy["train"]), "--epochs", "2",
                 "--batch-size", "32", "--name", "toy-teacher", *common, verbosity=0)
    teacher = MetricModel.objects.get(name="toy-teacher")
    assert teacher.metric.key == "mdd_eval" and set(teacher.validation["validation_accuracy"]) == {
        "random", "adversarial", "relevant", "overall"}
    assert TrainingRun.objects.get(result=teacher).stage == "teacher"

    call_command("train_metric", "mdd_eval", "--stage", "augment", "--name", "toy-aug", "--per-technique", "2",
                 "--sources", f"{toy['dialogues']},corpus:{corpus.slug}", "--mask-model", str(toy["mlm"]),
                 "--device", "cpu", verbosity=0)
    dataset = TrainingDataset.objects.get(name="toy-aug")
    run = TrainingRun.objects.get(config__model_name="toy-aug")
    assert run.status == RunStatus.DONE and dataset.run == run and run.result is None
    assert dataset.sha256 == hashlib.sha256(Path(dataset.path).read_bytes()).hexdigest()  # the version
    techniques = dataset.counts["techniques"]
    assert techniques["mask_fill"] > 0 and techniques["word_drop"] == 2 * techniques["original"]
    assert techniques["generation"] == techniques["back_translation"] == 0
    assert "generation skipped: no dialogue model given" in run.log and "mask_fill skipped" not in run.log
    records = [json.loads(line) for line in Path(dataset.path).read_text().splitlines()]
    assert any(r["pair"].startswith("corpora/") for r in records)  # the Concord corpus was a source
    assert len(records) == dataset.counts["records"] == sum(techniques.values())

    call_command("train_metric", "mdd_eval", "--stage", "student", "--init-from", "toy-teacher", "--dataset", "toy-aug",
                 "--threshold", "0.34", "--epochs", "1", "--batch-size", "32", "--name", "toy-student", *common,
                 verbosity=0)
    student = MetricModel.objects.get(name="toy-student")
    run = TrainingRun.objects.get(result=student)
    assert run.config["train_data"] == dataset.path and run.config["init_from"] == teacher.artifact_path
    labels = student.validation["pseudo_labels"]
    assert labels["pairs_before"] == len(records) and labels["pairs_after"] <= labels["pairs_before"]
    assert "pseudo-labels:" in run.log
    parts = {k for h in run.losses if "loss" in h for k in h}
    assert {"ce", "kl", "mlm"} <= parts

    study = make_study("likert")
    call_command("score_metric", "mdd_eval", "--model", "toy-student", "--study", study.slug, verbosity=0)
    values = list(MetricScore.objects.filter(metric_model=student).values_list("value", flat=True))
    assert len(values) == 24 and all(0 < v < 1 for v in values)
    call_command("score_metric", "mdd_eval", "--model", "toy-student", "--study", study.slug, verbosity=0)
    assert MetricScore.objects.filter(metric_model=student).count() == 24  # idempotent


def test_bad_settings_name_the_field_and_create_nothing(toy, tmp_path):
    with pytest.raises(CommandError, match="train_data: give the augmented data set"):
        call_command("train_metric", "mdd_eval", "--stage", "student", verbosity=0)
    with pytest.raises(CommandError, match="init_from: the student needs a trained MDD-Eval teacher"):
        call_command("train_metric", "mdd_eval", "--stage", "student", "--dataset", str(toy["train"]),
                     "--init-from", str(tmp_path), verbosity=0)
    with pytest.raises(CommandError, match="sources: no corpus 'nope'"):
        call_command("train_metric", "mdd_eval", "--stage", "augment", "--sources", "corpus:nope", verbosity=0)
    with pytest.raises(CommandError, match="sources: no file"):
        call_command("train_metric", "mdd_eval", "--stage", "augment", "--sources", str(tmp_path / "x.jsonl"),
                     verbosity=0)
    with pytest.raises(CommandError, match="threshold: must be in"):
        call_command("train_metric", "mdd_eval", "--stage", "student", "--threshold", "1.5", verbosity=0)
    with pytest.raises(CommandError, match="stage must be one of teacher, augment, student"):
        call_command("train_metric", "mdd_eval", "--stage", "mlr", verbosity=0)
    # the built-in metrics exist from migrate; nothing else was made
    assert not TrainingRun.objects.exists() and not MetricModel.objects.exclude(name__in=builtin_model_names()).exists()
    assert not TrainingDataset.objects.exists()


def test_staff_queue_stages_from_the_page_and_the_api(client, toy, settings):
    settings.SHARED_DATA_DIR = toy["train"].parent
    (toy["train"].parent / "dailydialog_pp").mkdir(exist_ok=True)
    for name in ("dev.json", "positives.json"):
        (toy["train"].parent / "dailydialog_pp" / name).write_text(toy["train"].read_text())
    client.force_login(UserFactory(username="admin", is_staff=True))
    page = client.get(reverse("metrics:metric_list"))
    assert b"Train MDD-Eval" in page.content and b'value="augment"' in page.content
    bad = client.post(reverse("metrics:mdd_training_start"), {"stage": "augment", "per_technique": "ten"}, follow=True)
    assert "per technique: &#x27;ten&#x27; is not a whole number" in bad.content.decode()
    assert not TrainingRun.objects.exists()
    client.post(reverse("metrics:mdd_training_start"), {"stage": "augment", "per_technique": "3", "model_name": "ui-aug"})
    run = TrainingRun.objects.get()
    assert (run.status, run.stage, run.model_name, run.config["per_technique"]) == ("queued", "augment", "ui-aug", 3)
    assert run.config["sources"].endswith("dailydialog_pp/positives.json")  # the shared data by default
    response = client.post("/api/metrics/training/", {"metric": "mdd_eval", "stage": "student", "model_name": "api-s"},
                           content_type="application/json")
    assert response.status_code == 400 and "train_data" in problem_fields(response)
    response = client.post("/api/metrics/training/", {"metric": "mdd_eval", "stage": "teacher", "train_limit": 5,
                                                      "encoder": str(toy["encoder"])}, content_type="application/json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["metric"], body["stage"], body["status"]) == ("mdd_eval", "teacher", "queued")
    assert body["config"]["train_data"].endswith("dailydialog_pp/dev.json") and body["config"]["threshold"] == 0.7


def test_a_cancelled_augmentation_resumes_from_its_part_files(toy):
    from ml.trainers import Callback

    class CancelAfterFirstChunk(Callback):
        def __init__(self, run):
            self.run = run

        def on_step(self, state, loss, parts):
            if state.step == 1:
                training.training_run_cancel(run=self.run)

        def should_stop(self, state):
            return TrainingRun.objects.filter(pk=self.run.pk, status=RunStatus.CANCELLED).exists()

    run = training.training_run_create(metric="mdd_eval", stage="augment", sources=str(toy["dialogues"]),
                                       per_technique=1, augment_chunk=4, enqueue=False)
    run = training.training_run_execute(run=run, callbacks=[CancelAfterFirstChunk(run)])
    assert run.status == RunStatus.CANCELLED and not TrainingDataset.objects.exists()
    parts = sorted((Path(run.config["output_dir"]) / "parts").glob("part-*.jsonl"))
    assert len(parts) == 1
    first = parts[0].read_text()
    call_command("train_metric", "mdd_eval", "--resume", str(run.pk), verbosity=0)
    run.refresh_from_db()
    assert run.status == RunStatus.DONE and run.attempts == 2
    assert parts[0].read_text() == first  # kept, not redone
    dataset = TrainingDataset.objects.get(name=run.model_name)
    assert dataset.counts["pairs"] == 12 and dataset.counts["techniques"]["original"] == 12  # 6 dialogues of 3 turns


def test_mdd_eval_without_a_trained_model_says_so():
    with pytest.raises(ValueError, match="mdd_eval needs a trained model: config 'path' is empty"):
        registry.implementation("mdd_eval", {}).score([ScoringInput(turns=["hi"], response="hello")])


def test_a_student_that_takes_no_step_says_so_on_its_run_model_and_card(toy, tmp_path, settings):
    """A student whose teacher labels no augmented pair confidently takes 0 steps; its run's log
    summary and phase, its model's notes and its card (and the command's card text) say that no pseudo-label
    passed the threshold, not only a line inside the log."""
    from metrics.benchmarking.model_cards import card_compute
    from metrics.management.commands.train_metric import card_text
    from ml.models import load_tokenizer
    from ml.models.mdd_eval import MDDEvalModel

    teacher = MDDEvalModel.from_encoder(str(toy["encoder"]), representation="paired", freeze_encoder=True, floor=True)
    teacher.save(tmp_path / "teacher", tokenizer=load_tokenizer(str(toy["encoder"])), metadata={})
    augmented = tmp_path / "augmented.jsonl"
    augmented.write_text("".join(json.dumps({"context": ["hi", "do you like tea ?"], "response": r, "pair": str(i),
                                             "technique": "original"}) + "\n"
                                 for i, r in enumerate(["yes i do", "tax forms", "no"])))
    run = training.training_run_create(
        metric="mdd_eval", stage="student", model_name="idle-student", enqueue=False, init_from=str(tmp_path / "teacher"),
        train_data=str(augmented), validation_data=str(toy["train"]), student_from_teacher=True, threshold=0.5,
        select_by="ranking", representation="paired", freeze_encoder=True, cache_features=True, floor=True,
        evaluate_at_start=True, batch_size=30, max_length=32, device="cpu")
    run = training.training_run_execute(run=run)
    assert run.status == RunStatus.DONE and run.done == 0
    said = "no training step: no pseudo-label passed the threshold (none of the 3 augmented pairs has a teacher " \
           "probability ≥ 0.5), so the student is its teacher, unchanged"
    assert said in run.log.splitlines()[-1]  # the summary the recipe and the command print
    assert run.phase.startswith("no training step: no pseudo-label passed the threshold")
    model = MetricModel.objects.get(name="idle-student")
    assert model.validation["notes"] == [said]
    card = card_compute(model, [])
    assert card["notes"] == [said] and f"  Note: {said}" in card_text(card).splitlines()
    model.card = card
    model.save(update_fields=["card"])
    from django.test import Client

    staff = UserFactory(is_staff=True)
    client = Client()
    client.force_login(staff)
    page = client.get(reverse("metrics:model_detail", args=[model.name])).content.decode()
    assert 'data-testid="card-note"' in page and "No training step: no pseudo-label passed the threshold" in page
