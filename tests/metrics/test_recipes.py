"""The default recipes: ``train_metric METRIC --name NAME`` runs the metric's declared recipe end to end (each
stage a TrainingRun, each starting from the one before), finishes a stopped recipe instead of starting
over, and ``--recipe paper`` first says how long it would take here. The trainable metrics declare their
stages where they are registered: ``metrics.training.services`` holds no table of metrics."""
import ast
import io
import json
from pathlib import Path

import pytest
import torch
from django.core.management import CommandError, call_command

from metrics import registry
from metrics.models import MetricModel, TrainingDataset, TrainingRun
from metrics.scoring.services import builtin_model_names
from metrics.training import recipes
from ml.models import QuantiDCEModel, SelfEvalModel
from ml.models.mdd_eval import MDDEvalModel
from tests.ml.toy import tiny_encoder_dir, toy_ddpp, toy_dialogues, toy_grade

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """A shared data directory with the files the recipes default to, small."""
    folder = tmp_path_factory.mktemp("shared-recipes")
    (folder / "dailydialog_pp").mkdir()
    toy_ddpp(folder / "dailydialog_pp" / "dev.json", 12, seed=1)
    toy_ddpp(folder / "dailydialog_pp" / "test.json", 8, seed=2)
    toy_dialogues(folder / "dailydialog_pp" / "positives.json", 16, seed=3)
    (folder / "grade").mkdir()
    toy_grade(folder / "grade" / "dailydialog_EVAL.json", 30, seed=4)
    return {"dir": folder, "encoder": tiny_encoder_dir(folder.parent / "encoder-recipes")}


@pytest.fixture(autouse=True)
def places(settings, tmp_path, shared):
    settings.ARTIFACTS_DIR = tmp_path / "artifacts"
    settings.SHARED_DATA_DIR = shared["dir"]


def train(*args) -> str:
    out = io.StringIO()
    call_command("train_metric", *args, "--no-card", stdout=out, verbosity=0)
    return out.getvalue()


def test_the_metrics_declare_their_stages_and_training_py_names_no_metric():
    assert registry.trainable_keys() == ("mdd_eval", "quantidce", "self_eval")
    assert registry.trainable("quantidce").stages == ("mlr", "kd")
    assert registry.trainable("mdd_eval").stages == ("teacher", "augment", "student")
    for key in registry.trainable_keys():
        assert {"default", "paper"} <= set(registry.trainable(key).recipes)
    source = Path(__import__("metrics.training.services").training.services.__file__).read_text()
    names = {node.id for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Name)}
    assert not {"TRAINABLE", "STAGES", "TRAINERS"} & names
    assert all(key not in source.replace("metrics.training.mdd", "") for key in ("mdd_eval", "quantidce", "self_eval"))
    with pytest.raises(ValueError, match="metric: 'coherence' cannot be trained here"):
        registry.trainable("coherence")


def test_quantidce_default_recipe_starts_as_the_cosines_and_is_reused_when_run_again(shared):
    out = train("quantidce", "--name", "q-toy", "--encoder", str(shared["encoder"]), "--epochs", "2",
                "--max-length", "32")
    assert "[1/1] quantidce mlr -> q-toy: run" in out
    model = MetricModel.objects.get(name="q-toy")
    run = TrainingRun.objects.get(result=model)
    config = run.config
    assert (config["floor"], config["evaluate_at_start"], config["select_by"]) == (True, True, "accuracy")
    assert config["validation_data"].endswith("dailydialog_pp/test.json")  # the shared file, found by the runner
    evaluations = [h for h in run.losses if "validation" in h]
    assert evaluations[0]["step"] == 0 and len(evaluations) == 3  # the untrained start is a candidate
    best = max(evaluations, key=lambda h: h["accuracy"])
    assert run.result.validation["best_step"] == best["step"]  # chosen by validation accuracy, not loss
    saved = json.loads((Path(model.artifact_path) / "metric.json").read_text())
    assert saved["floor"] is True and QuantiDCEModel.load(model.artifact_path).floor
    again = train("quantidce", "--name", "q-toy", "--encoder", str(shared["encoder"]), "--epochs", "2",
                  "--max-length", "32")
    assert "made already, reused" in again and TrainingRun.objects.count() == 1


def test_an_untrained_floor_model_orders_pairs_as_the_cosine_blend(shared):
    from ml.data.frozen_features import pair_features_of
    from ml.data.packing import pack_windows
    from ml.models import load_tokenizer

    model = QuantiDCEModel.from_encoder(str(shared["encoder"]), representation="windows", freeze_encoder=True,
                                        floor=True).eval()
    tokenizer = load_tokenizer(str(shared["encoder"]))
    pairs = [(["hello there", "how are you"], r) for r in ("fine", "i like trains", "how are you doing", "no")]
    (features,) = pair_features_of(model, [[pack_windows(tokenizer, c, r) for c, r in pairs]], tokenizer.pad_token_id,
                                   torch.device("cpu"))
    blend = features[:, :, -1].mean(-1)  # the mean of the whole-context and last-turn cosines
    with torch.no_grad():
        scores = model(features=features).score
    assert torch.equal(torch.argsort(scores), torch.argsort(blend))
    assert torch.allclose(scores, torch.sigmoid(10 * blend - 10), atol=1e-6)


def test_self_eval_recipe_trains_coarse_then_fine_from_it(shared):
    out = train("self_eval", "--name", "se-toy", "--encoder", str(shared["encoder"]), "--epochs", "1",
                "--max-length", "64", "--train-limit", "8", "--validation-limit", "4")
    assert "[1/2] self_eval coarse -> se-toy-coarse" in out and "[2/2] self_eval fine -> se-toy" in out
    coarse, fine = MetricModel.objects.get(name="se-toy-coarse"), MetricModel.objects.get(name="se-toy")
    assert TrainingRun.objects.get(result=fine).config["init_from"] == coarse.artifact_path
    assert SelfEvalModel.load(fine.artifact_path).floor and SelfEvalModel.load(fine.artifact_path).representation_name == "pairs"


def test_mdd_eval_recipe_teacher_augment_student_the_student_starting_as_its_teacher(shared):
    out = train("mdd_eval", "--name", "m-toy", "--encoder", str(shared["encoder"]), "--epochs", "1",
                "--max-length", "32", "--pairs-limit", "24", "--threshold", "0.34")
    assert "[3/3] mdd_eval student -> m-toy" in out
    dataset = TrainingDataset.objects.get(name="m-toy-augment")
    teacher, student = MetricModel.objects.get(name="m-toy-teacher"), MetricModel.objects.get(name="m-toy")
    config = TrainingRun.objects.get(result=student).config
    assert (config["init_from"], config["train_data"]) == (teacher.artifact_path, dataset.path)
    run = TrainingRun.objects.get(result=student)
    first = next(h for h in run.losses if "validation" in h)
    teacher_run = TrainingRun.objects.get(result=teacher)
    teacher_best = teacher_run.result.validation["evaluations"]
    # the student's step-0 candidate is its teacher: the same DailyDialog++ validation accuracy
    assert first["step"] == 0 and first["accuracy"] == pytest.approx(
        next(h["accuracy"] for h in teacher_best if h["step"] == teacher_run.result.validation["best_step"]))
    assert student.validation["pseudo_labels"]["pairs_after"] > 0
    assert MDDEvalModel.load(student.artifact_path).floor
    # Both stages chosen by DailyDialog++ validation ranking accuracy of P(relevant), the start a candidate
    for stage_run in (teacher_run, run):
        assert (stage_run.config["select_by"], stage_run.config["evaluate_at_start"]) == ("ranking", True)
        evaluations = [h for h in stage_run.losses if "validation" in h]
        assert evaluations[0]["step"] == 0 and all({"ranking_accuracy", "accuracy"} <= set(h) for h in evaluations)
        best = max(evaluations, key=lambda h: h["ranking_accuracy"])  # the first of equals: ties keep the earlier
        assert stage_run.result.validation["best_step"] == best["step"]
    # the phases' progress as plain lines (a log file shows them, not only a terminal's bar)
    assert "pseudo-labelling: embedding texts: " in out and "embedding training texts: " in out


def test_the_paper_recipe_says_how_long_it_takes_first_and_a_bad_recipe_is_named(shared):
    out = io.StringIO()
    call_command("train_metric", "quantidce", "--recipe", "paper", "--name", "q-paper", "--encoder",
                 str(shared["encoder"]), "--max-length", "32", "--estimate-only", stdout=out, verbosity=0)
    text = out.getvalue()
    assert "mlr: about" in text and "kd: about" in text and "s a step" in text and "h on this device" in text
    # the built-in metrics exist from migrate; nothing else was made
    assert not MetricModel.objects.exclude(name__in=builtin_model_names()).exists() and not TrainingRun.objects.exists()
    with pytest.raises(CommandError, match="recipe: quantidce has recipes default, paper, not 'fast'"):
        train("quantidce", "--recipe", "fast", "--name", "x")
    with pytest.raises(CommandError, match="--name: a recipe registers its model under this name"):
        train("quantidce")
    assert recipes.recipe_plan(metric="mdd_eval", recipe="default", name="m")[2].settings["init_from"] == "m-teacher"
