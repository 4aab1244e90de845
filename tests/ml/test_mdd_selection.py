"""MDD-Eval: checkpoints chosen by DailyDialog++ ranking accuracy of P(relevant) (the untrained
floor start is a candidate and is kept where training does not rank better), and the pseudo-labelling's
progress reaching the callbacks and plain log lines (``LogProgress``), not only a terminal's bar."""
import dataclasses
import json

import pytest
import torch

from ml.data.levels import level_accuracy
from ml.models import load_tokenizer
from ml.models.mdd_eval import MDDEvalModel
from ml.trainers import Callback, LogProgress, TrainingConfig, mdd_eval
from ml.trainers.loop import Trainer
from ml.trainers.mdd_config import MDDEvalConfig
from tests.ml.toy import tiny_encoder_dir, toy_ddpp

FROZEN = {"representation": "paired", "freeze_encoder": True, "cache_features": True, "floor": True,
          "evaluate_at_start": True, "batch_size": 30, "max_length": 32, "device": "cpu"}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mdd-selection")
    reversed_levels = folder / "reversed.json"  # relevant responses filed as random and back: training un-learns
    with reversed_levels.open("w") as stream:
        for line in toy_ddpp(folder / "right.json", 24, seed=5).read_text().splitlines():
            record = json.loads(line)
            record["positive_responses"], record["random_negative_responses"] = (
                record["random_negative_responses"], record["positive_responses"])
            stream.write(json.dumps(record) + "\n")
    return {"encoder": tiny_encoder_dir(folder / "encoder"), "validation": toy_ddpp(folder / "validation.json", 8, seed=6),
            "reversed": reversed_levels, "folder": folder}


# -- the loop: what "ranking" selects on ----------------------------------------------------------
class Scripted:
    """Validation figures by evaluation: the 3-way accuracy rises while the ranking accuracy falls."""

    def __init__(self):
        self.evaluations = 0

    def objective(self, model, batch):
        loss = model(batch["x"]).pow(2).mean()
        if model.training:
            return loss, {}
        return loss, {"accuracy": [0.333, 0.5, 0.7][self.evaluations]}

    def extra(self, model):
        figure = [0.76, 0.74, 0.73][self.evaluations]
        self.evaluations += 1
        return {"ranking_accuracy": figure}


@pytest.mark.parametrize(("select_by", "kept"), [("ranking", 0), ("accuracy", 2)])
def test_ranking_selection_keeps_the_start_where_accuracy_would_keep_the_last(tmp_path, select_by, kept):
    scripted, saved = Scripted(), []
    config = TrainingConfig(output_dir=str(tmp_path), epochs=2, batch_size=1, evaluate_at_start=True,
                            select_by=select_by, device="cpu", checkpoint_every=0)
    data = [torch.ones(2)]
    trainer = Trainer(torch.nn.Linear(2, 1), scripted.objective, data, data, lambda items: {"x": torch.stack(items)},
                      config, save_best=lambda model, path: saved.append(trainer.state.step),
                      validation_extra=scripted.extra)
    state = trainer.train()
    evaluations = [h for h in state.history if "validation" in h]
    assert [h["step"] for h in evaluations] == [0, 1, 2]
    assert all({"accuracy", "ranking_accuracy"} <= set(h) for h in evaluations)  # both figures logged
    assert state.best_step == kept and saved[-1] == kept


def test_ranking_selection_needs_a_ranking_figure(tmp_path):
    config = TrainingConfig(output_dir=str(tmp_path), epochs=1, batch_size=1, select_by="ranking", device="cpu")
    data = [torch.ones(2)]
    trainer = Trainer(torch.nn.Linear(2, 1), lambda m, b: (m(b["x"]).sum(), {"accuracy": 1.0}), data, data,
                      lambda items: {"x": torch.stack(items)}, config, save_best=lambda model, path: None)
    with pytest.raises(ValueError, match="select_by: ranking needs a validation ranking accuracy"):
        trainer.train()


# -- MDD-Eval's teacher ----------------------------------------------------------------------------
def teacher_config(tiny, out, **overrides):
    return MDDEvalConfig.for_stage("teacher", encoder=str(tiny["encoder"]), output_dir=str(out),
                                   **{**FROZEN, "validation_data": str(tiny["validation"]), **overrides})


def test_the_teacher_keeps_its_untrained_start_when_training_ranks_worse(tiny, tmp_path):
    config = teacher_config(tiny, tmp_path / "teacher", train_data=str(tiny["reversed"]), epochs=3,
                            learning_rate=1e-2, select_by="ranking")
    best, state = mdd_eval.train(config)
    evaluations = [h for h in state.history if "validation" in h]
    start = evaluations[0]["ranking_accuracy"]
    assert evaluations[-1]["ranking_accuracy"] < start - 0.05  # training on reversed levels un-learns the ranking
    assert all("accuracy" in h and "ce" in h for h in evaluations)  # the 3-way figures are kept beside it
    assert state.best_step == 0
    saved = json.loads((best / "metric.json").read_text())["validation_accuracy"]
    assert saved["ranking_accuracy"] == pytest.approx(start)  # the model saved is the start, ranked as logged
    assert {"overall", "random", "relevant"} <= set(saved)


def test_the_ranking_figure_is_the_ddpp_ranking_accuracy_of_p_relevant(tiny, tmp_path):
    config = teacher_config(tiny, tmp_path / "teacher", train_data=str(tiny["validation"]), epochs=1,
                            learning_rate=1e-2, select_by="ranking")
    trainer = mdd_eval.build(config)
    model = trainer.model.eval()
    tokenizer = load_tokenizer(str(tiny["encoder"]))
    pairs = [(p.context, p.response) for p in mdd_eval.read_ddpp_pairs(tiny["validation"])]
    relevant = torch.tensor(mdd_eval.class_probabilities(model, tokenizer, pairs, max_length=32, device="cpu")[:, 2])
    with torch.inference_mode():
        figure = trainer.validation_extra(model)["ranking_accuracy"]
    assert figure == pytest.approx(level_accuracy(relevant.view(-1, 3, 5)), abs=1e-6)
    assert 0.5 < figure < 1  # the floor's cosine order, not chance


def test_ranking_selection_needs_a_ddpp_validation_file(tiny, tmp_path):
    config = teacher_config(tiny, tmp_path / "teacher", train_data=str(tiny["validation"]), select_by="ranking",
                            validation_data="", validation_fraction=0.25)
    with pytest.raises(ValueError, match="select_by: ranking needs validation_data"):
        mdd_eval.build(config)
    with pytest.raises(ValueError, match="select_by: must be one of loss, accuracy, ranking, not 'rank'"):
        MDDEvalConfig.for_stage("teacher", select_by="rank")


# -- progress of the pseudo-labelling --------------------------------------------------------------
class Phases(Callback):
    def __init__(self):
        self.seen = []

    def on_phase(self, phase, done, total):
        self.seen.append((phase, done, total))


def test_pseudo_labelling_reports_progress_to_the_callbacks_and_log_lines(tiny, tmp_path):
    records = [{"context": ["hello", f"do you like tea {i} ?"], "response": r, "technique": "original", "pair": str(i)}
               for i, r in enumerate(["yes i like tea", "the tax forms are due", "i love tea a lot", "no"])]
    augmented = tmp_path / "augmented.jsonl"
    augmented.write_text("".join(json.dumps(r) + "\n" for r in records))
    teacher = MDDEvalModel.from_encoder(str(tiny["encoder"]), representation="paired", freeze_encoder=True, floor=True)
    config = MDDEvalConfig.for_stage("student", train_data=str(augmented), output_dir=str(tmp_path / "student"),
                                     threshold=0.34, max_length=32, device="cpu")
    phases, lines = Phases(), []
    mdd_eval.pseudo_label(config, teacher, load_tokenizer(str(tiny["encoder"])), log=lambda line: None,
                          callbacks=[phases, LogProgress(lines.append)])
    labelling = [(d, t) for phase, d, t in phases.seen if phase == "pseudo-labelling: embedding texts"]
    assert labelling and labelling[-1][0] == labelling[-1][1] > 0  # it reports, up to the end
    assert any(line.startswith("pseudo-labelling: embedding texts: ") and line.endswith("(100 %)") for line in lines)


def test_log_progress_writes_the_first_report_then_every_ten_seconds_and_the_end():
    now, lines = [0.0], []
    progress = LogProgress(lines.append, every_s=10, clock=lambda: now[0])
    for done, at in [(0, 0), (10, 3), (20, 9), (30, 11), (40, 15), (50, 22), (100, 23)]:
        now[0] = at
        progress.on_phase("embedding", done, 100)
    assert lines == ["embedding: 0/100 (0 %)", "embedding: 30/100 (30 %)", "embedding: 50/100 (50 %)",
                     "embedding: 100/100 (100 %)"]
    now[0] = 24
    progress.on_phase("embedding", 0, 1_000)  # the phase again (a second evaluation): its first report again
    assert lines[-1] == "embedding: 0/1,000 (0 %)"


def test_a_student_with_no_confident_pseudo_label_is_its_teacher_unchanged(tiny, tmp_path):
    """The teacher kept by ranking may be the untrained floor start, whose 3-way softmax is never confident:
    the student then takes no step and is its teacher (before: ValueError, the recipe failed)."""
    teacher = MDDEvalModel.from_encoder(str(tiny["encoder"]), representation="paired", freeze_encoder=True, floor=True)
    teacher.save(tmp_path / "teacher", tokenizer=load_tokenizer(str(tiny["encoder"])), metadata={})
    augmented = tmp_path / "augmented.jsonl"
    augmented.write_text("".join(json.dumps({"context": ["hi", "do you like tea ?"], "response": r, "technique": "original",
                                             "pair": str(i)}) + "\n" for i, r in enumerate(["yes i do", "tax forms"])))
    config = MDDEvalConfig.for_stage("student", init_from=str(tmp_path / "teacher"), train_data=str(augmented),
                                     output_dir=str(tmp_path / "student"), student_from_teacher=True, threshold=0.5,
                                     select_by="ranking", **{**FROZEN, "validation_data": str(tiny["validation"])})
    lines = []
    trainer = mdd_eval.build(config, log=lines.append)
    state = trainer.train()
    assert any("the student is its teacher, unchanged" in line for line in lines)
    assert state.step == 0 and state.best_step == 0
    start = next(h for h in state.history if "validation" in h)["ranking_accuracy"]
    saved = json.loads((tmp_path / "student" / "best" / "metric.json").read_text())["validation_accuracy"]
    assert saved["ranking_accuracy"] == pytest.approx(start) and start > 0.5
    with pytest.raises(ValueError, match="threshold: no augmented pair"):  # the paper's student still refuses
        mdd_eval.build(dataclasses.replace(config, student_from_teacher=False))
