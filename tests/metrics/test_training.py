"""Training from Django: ``train_metric`` runs MLR then KD on a tiny encoder and toy data, registers
each model, and the trained QuantiDCE scores a study through the normal scoring path; bad settings
change nothing; a cancelled run resumes from its checkpoint; the staff form and API queue runs."""
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from metrics.models import MetricModel, MetricScore, RunStatus, TrainingRun
from metrics.scoring import services
from metrics.scoring.services import builtin_model_names
from metrics.training import services as training
from ml.trainers import Callback
from tests.factories import UserFactory
from tests.ml.toy import tiny_encoder_dir, toy_ddpp, toy_grade
from tests.problems import problem_fields

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    folder = tmp_path_factory.mktemp("toy-django")
    return {"encoder": tiny_encoder_dir(folder / "encoder"), "train": toy_ddpp(folder / "train.json", 24, seed=1),
            "validation": toy_ddpp(folder / "dev.json", 6, seed=2), "grade": toy_grade(folder / "grade.json", 40, seed=3)}


@pytest.fixture(autouse=True)
def artifacts(settings, tmp_path):
    settings.ARTIFACTS_DIR = tmp_path / "artifacts"


def mlr(toy, *extra):
    call_command("train_metric", "quantidce", "--stage", "mlr", "--encoder", str(toy["encoder"]), "--train",
                 str(toy["train"]), "--validation", str(toy["validation"]), "--epochs", "2", "--lr", "1e-3",
                 "--max-length", "32", *extra, verbosity=0)


def test_mlr_then_kd_register_models_that_score_a_study(toy, make_study):
    mlr(toy, "--name", "toy-mlr")
    stage1 = MetricModel.objects.get(name="toy-mlr")
    run = TrainingRun.objects.get(result=stage1)
    assert (run.status, run.stage, run.done, run.total, run.attempts) == ("done", "mlr", 16, 16, 1)  # 24 contexts / 3, 2 epochs
    assert run.best_validation == stage1.validation["best_validation_loss"] == min(
        h["validation"] for h in run.losses if "validation" in h)
    assert len([h for h in run.losses if "loss" in h]) == 16
    call_command("train_metric", "quantidce", "--stage", "kd", "--init-from", "toy-mlr", "--train", str(toy["grade"]),
                 "--epochs", "2", "--lr", "1e-3", "--max-length", "32", "--name", "toy-kd", verbosity=0)
    stage2 = MetricModel.objects.get(name="toy-kd")
    config = TrainingRun.objects.get(result=stage2).config
    assert config["init_from"] == stage1.artifact_path  # the name was resolved to the stage-1 model's directory
    saved = json.loads((Path(stage2.artifact_path) / "metric.json").read_text())
    assert saved["stage"] == "kd" and saved["training"]["alpha"] == 1.0 and saved["training"]["beta"] == 5.0

    study = make_study("likert")
    call_command("score_metric", "quantidce", "--model", "toy-kd", "--study", study.slug, verbosity=0)
    values = list(MetricScore.objects.filter(metric_model=stage2).values_list("value", flat=True))
    assert len(values) == 24 and all(0 < v < 1 for v in values) and len(set(values)) > 1


def test_bad_settings_name_the_field_and_create_nothing(toy, tmp_path):
    with pytest.raises(CommandError, match="train_data: no file"):
        call_command("train_metric", "quantidce", "--train", str(tmp_path / "missing.json"), verbosity=0)
    with pytest.raises(CommandError, match="init_from: KD fine-tuning starts from"):
        call_command("train_metric", "quantidce", "--stage", "kd", "--train", str(toy["grade"]), verbosity=0)
    with pytest.raises(CommandError, match="init_from: .* is not a saved QuantiDCE model"):
        call_command("train_metric", "quantidce", "--stage", "kd", "--init-from", str(tmp_path), "--train",
                     str(toy["grade"]), verbosity=0)
    # the built-in metrics exist from migrate; nothing else was made
    assert not TrainingRun.objects.exists() and not MetricModel.objects.exclude(name__in=builtin_model_names()).exists()


def test_the_paper_configuration_is_three_flags_and_the_model_remembers_it(toy):
    mlr(toy, "--name", "toy-paper", "--representation", "cls", "--no-freeze-encoder", "--head-lr", "0")
    mlr(toy, "--name", "toy-default")
    paper, default = (MetricModel.objects.get(name=n) for n in ("toy-paper", "toy-default"))
    saved = {m.name: json.loads((Path(m.artifact_path) / "metric.json").read_text()) for m in (paper, default)}
    assert saved["toy-paper"]["representation"] == "cls" and saved["toy-paper"]["training"]["freeze_encoder"] is False
    assert saved["toy-default"]["representation"] == "windows" and saved["toy-default"]["training"]["freeze_encoder"] is True
    assert saved["toy-default"]["training"]["cache_features"] is True
    assert saved["toy-default"]["training"]["lr_schedule"] == "auto"  # constant: the encoder is frozen
    mlr(toy, "--name", "toy-decayed", "--lr-schedule", "linear", "--no-cache-features")
    decayed = json.loads((Path(MetricModel.objects.get(name="toy-decayed").artifact_path) / "metric.json").read_text())
    assert (decayed["training"]["lr_schedule"], decayed["training"]["cache_features"]) == ("linear", False)
    with pytest.raises(CommandError, match="invalid choice: 'pooler'"):
        call_command("train_metric", "quantidce", "--representation", "pooler", verbosity=0)
    with pytest.raises(CommandError, match="invalid choice: 'cosine'"):
        call_command("train_metric", "quantidce", "--lr-schedule", "cosine", verbosity=0)


class CancelAfter(Callback):
    def __init__(self, run, step):
        self.run, self.step = run, step

    def on_step(self, state, loss, parts):
        if state.step == self.step:
            training.training_run_cancel(run=self.run)


def test_a_cancelled_run_resumes_from_its_last_checkpoint(toy):
    run = training.training_run_create(metric="quantidce", stage="mlr", encoder=str(toy["encoder"]),
                                       train_data=str(toy["train"]), validation_data=str(toy["validation"]), epochs=2,
                                       learning_rate=1e-3, max_length=32, checkpoint_every=3, enqueue=False)
    run = training.training_run_execute(run=run, callbacks=[CancelAfter(run, 6)])
    assert run.status == RunStatus.CANCELLED and run.result is None
    assert run.checkpoint_path.endswith("step-6") and run.done == 6  # stopped at the checkpoint after the cancel
    call_command("train_metric", "quantidce", "--resume", str(run.pk), verbosity=0)
    run.refresh_from_db()
    assert (run.status, run.attempts, run.done) == ("done", 2, 16)
    steps = [h["step"] for h in run.losses if "loss" in h]
    assert steps == list(range(1, 17))  # steps 7-16 were added to the saved history, none repeated
    assert run.result.name == run.model_name
    with pytest.raises(CommandError, match="done already"):
        call_command("train_metric", "quantidce", "--resume", str(run.pk), verbosity=0)


def test_staff_queue_training_from_the_page_and_the_api(client, toy, settings):
    settings.SHARED_DATA_DIR = toy["train"].parent.parent  # defaults resolve below it
    staff = UserFactory(username="admin", is_staff=True)
    client.force_login(staff)
    page = client.get(reverse("metrics:metric_list"))
    assert b"Train QuantiDCE" in page.content
    bad = client.post(reverse("metrics:training_start"), {"stage": "mlr", "epochs": "two"}, follow=True)
    assert "epochs: &#x27;two&#x27; is not a whole number" in bad.content.decode() and not TrainingRun.objects.exists()
    response = client.post("/api/metrics/training/", {"stage": "mlr", "train_limit": 10, "model_name": "api-mlr",
                                                      "encoder": str(toy["encoder"])}, content_type="application/json")
    assert response.status_code == 400 and "train_data" in problem_fields(response)  # no DailyDialog++ under this data folder
    settings.SHARED_DATA_DIR = toy["train"].parent
    (toy["train"].parent / "dailydialog_pp").mkdir(exist_ok=True)
    for name, source in (("dev.json", toy["train"]), ("test.json", toy["validation"])):
        (toy["train"].parent / "dailydialog_pp" / name).write_text(source.read_text())
    response = client.post("/api/metrics/training/", {"stage": "mlr", "train_limit": 10, "model_name": "api-mlr",
                                                      "encoder": str(toy["encoder"])}, content_type="application/json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["status"], body["stage"], body["model_name"]) == ("queued", "mlr", "api-mlr")
    assert body["config"]["train_limit"] == 10 and body["config"]["train_data"].endswith("dailydialog_pp/dev.json")
    client.force_login(UserFactory(username="rater"))
    assert client.get(f"/api/metrics/training/{body['id']}/").status_code == 403


def test_a_training_run_loss_curve_is_drawn(client, toy):
    run = training.training_run_create(metric="quantidce", stage="mlr", encoder=str(toy["encoder"]),
                                       train_data=str(toy["train"]), validation_data=str(toy["validation"]),
                                       epochs=1, learning_rate=1e-3, max_length=32, enqueue=False)
    training.training_run_execute(run=run)
    client.force_login(UserFactory(username="admin", is_staff=True))
    svg = client.get(reverse("metrics:training_curve", args=[run.pk]))
    assert svg["Content-Type"] == "image/svg+xml" and b"validation" in svg.content and b"<path" in svg.content


def test_heuristic_defaults_do_not_include_learned_metrics():
    assert services.metric_model_default(key="coherence").name == "coherence"
    assert not MetricModel.objects.filter(metric__key="quantidce").exists()


def test_quantidce_without_a_trained_model_says_so():
    from metrics import registry
    from metrics.implementations.base import ScoringInput

    with pytest.raises(ValueError, match="needs a trained model: config 'path' is empty"):
        registry.implementation("quantidce", {}).score([ScoringInput(turns=["hi"], response="hello")])
