"""The training loop and QuantiDCE's two stages on a tiny random encoder and toy data: learning
raises level-ranking accuracy, KD keeps the student near its teacher, a resumed run computes the
same next loss, gradient accumulation equals a bigger batch, the schedule warms up as configured."""
import itertools
import json

import pytest
import torch

from ml.data.human_scores import ScoredCollator, ScoredDataset, read_grade, split
from ml.data.levels import read_ddpp
from ml.losses.distillation import distillation_loss
from ml.models import QuantiDCEModel, load_tokenizer
from ml.scoring import score_pairs
from ml.trainers import Callback, TrainingConfig, latest_checkpoint
from ml.trainers.quantidce import build, train
from tests.ml.toy import tiny_encoder_dir, toy_grade

PAPER = dict(representation="cls", freeze_encoder=False, head_learning_rate=0.0)  # the paper's MLR settings


def mlr_config(encoder_dir, toy_files, out, **overrides):
    values = dict(encoder=str(encoder_dir), train_data=str(toy_files["train"]),
                  validation_data=str(toy_files["validation"]), output_dir=str(out), epochs=3, batch_size=4,
                  learning_rate=1e-3, checkpoint_every=0, max_length=32, **PAPER)
    return TrainingConfig.for_stage("mlr", **{**values, **overrides})


def ranking_accuracy(model, tokenizer, contexts):
    """Share of (better level, worse level) response pairs of one context scored in the right order."""
    right = total = 0
    for context in contexts:
        pairs = [(context.context, r) for level in context.levels for r in level]
        scores = score_pairs(model, tokenizer, pairs, max_length=32)
        per_level = [scores[i * 5:(i + 1) * 5] for i in range(3)]
        for low, high in itertools.combinations(range(3), 2):
            for a, b in itertools.product(per_level[low], per_level[high]):
                right += b > a
                total += 1
    return right / total


class Losses(Callback):
    def __init__(self):
        self.steps = []

    def on_step(self, state, loss, parts):
        self.steps.append((state.step, loss))


def test_mlr_training_raises_level_ranking_accuracy_well_above_chance(encoder_dir, toy_files, tmp_path):
    tokenizer = load_tokenizer(str(encoder_dir))
    held_out = read_ddpp(toy_files["validation"])
    config = mlr_config(encoder_dir, toy_files, tmp_path / "mlr")
    untrained = build(config).model
    before = ranking_accuracy(untrained, tokenizer, held_out)
    best, state = train(config)
    trained = QuantiDCEModel.load(best)
    after = ranking_accuracy(trained, tokenizer, held_out)
    assert after >= 0.9 and after > before + 0.2, (before, after)
    evaluations = [h["validation"] for h in state.history if "validation" in h]
    assert len(evaluations) == 3 and state.best_validation == min(evaluations) < evaluations[0] + 1e-12
    saved = json.loads((best / "metric.json").read_text())
    assert saved["stage"] == "mlr" and saved["training"]["learning_rate"] == 1e-3  # the model says how it was made


@pytest.mark.parametrize("overrides", [{}, dict(representation="windows", freeze_encoder=True, cache_features=True,
                                              head_learning_rate=1e-2)], ids=["paper", "default-frozen-cached"])
def test_resume_from_a_checkpoint_computes_the_same_next_loss(encoder_dir, toy_files, tmp_path, overrides):
    through = Losses()
    train(mlr_config(encoder_dir, toy_files, tmp_path / "a", checkpoint_every=4, max_steps=7, keep_checkpoints=5,
                     **overrides), callbacks=[through])
    stopped = Losses()
    train(mlr_config(encoder_dir, toy_files, tmp_path / "b", checkpoint_every=4, max_steps=4, **overrides),
          callbacks=[stopped])
    assert latest_checkpoint(tmp_path / "b").name == "step-4"
    resumed = Losses()
    train(mlr_config(encoder_dir, toy_files, tmp_path / "b", checkpoint_every=4, max_steps=7, **overrides),
          callbacks=[resumed], resume=True)
    assert stopped.steps == through.steps[:4]
    assert [s for s, _ in resumed.steps] == [5, 6, 7]  # it continued, it did not start over
    assert [v for _, v in resumed.steps] == pytest.approx([v for _, v in through.steps[4:]], abs=1e-6)  # dropout RNG and data order restored too


@pytest.mark.filterwarnings("ignore:Seems like `optimizer.step")
def test_gradient_accumulation_equals_one_bigger_batch(toy_files, tmp_path):
    no_dropout = tiny_encoder_dir(tmp_path / "encoder", dropout=0.0)  # the two runs must compute the same function

    def gradient_of_first_step(**kw):
        trainer = build(mlr_config(no_dropout, toy_files, tmp_path / str(kw), max_steps=1, train_limit=4,
                                   validation_limit=1, **kw))
        seen, step = [], trainer.optimizer.step

        def observed_step(*args, **kwargs):  # the gradient the optimizer is given, before it is applied
            seen.append(torch.cat([p.grad.flatten() for p in trainer.model.parameters() if p.grad is not None]))
            return step(*args, **kwargs)

        trainer.optimizer.step = observed_step
        trainer.train()
        return seen

    one_batch = gradient_of_first_step(batch_size=4)
    accumulated = gradient_of_first_step(batch_size=2, grad_accumulation=2)
    assert len(one_batch) == len(accumulated) == 1  # two micro-batches made one optimizer step
    assert one_batch[0].abs().max() > 1e-5
    # equal up to float32 summation order (bias gradients are sums of many cancelling terms)
    assert torch.allclose(one_batch[0], accumulated[0], rtol=1e-3, atol=1e-3 * float(one_batch[0].abs().max()))


def test_warm_up_is_a_tenth_of_one_epoch_then_linear_decay(encoder_dir, toy_files, tmp_path):
    trainer = build(mlr_config(encoder_dir, toy_files, tmp_path / "s", batch_size=2, epochs=2))  # 20 steps an epoch
    rates = []
    for _ in range(40):
        trainer.optimizer.step()
        trainer.scheduler.step()
        rates.append(trainer.scheduler.get_last_lr()[0])
    assert rates[0] == pytest.approx(1e-3 / 2) and rates[1] == pytest.approx(1e-3)  # warm-up of ceil(0.1·20) = 2 steps
    assert rates[20] == pytest.approx(1e-3 * (40 - 21) / 38) and rates[-1] == 0.0


def test_a_frozen_encoders_head_keeps_its_rate_after_the_warm_up(encoder_dir, toy_files, tmp_path):
    """MLR's "auto" schedule: constant for a head on a frozen encoder, the paper's linear decay otherwise."""
    config = mlr_config(encoder_dir, toy_files, tmp_path / "c", batch_size=2, epochs=2, representation="windows",
                        freeze_encoder=True, head_learning_rate=1e-2, lr_schedule="auto")
    assert config.schedule() == "constant"
    trainer = build(config)
    rates = []
    for _ in range(40):
        trainer.optimizer.step()
        trainer.scheduler.step()
        rates.append(trainer.scheduler.get_last_lr()[0])
    assert rates[0] == pytest.approx(1e-2 / 2) and rates[1:] == pytest.approx([1e-2] * 39)
    assert mlr_config(encoder_dir, toy_files, tmp_path / "p", lr_schedule="auto").schedule() == "linear"  # the paper
    assert mlr_config(encoder_dir, toy_files, tmp_path / "f", freeze_encoder=True, lr_schedule="linear").schedule() == "linear"
    with pytest.raises(ValueError, match="lr_schedule: must be one of auto, linear, constant"):
        TrainingConfig.for_stage("mlr", lr_schedule="cosine")


def test_kd_keeps_the_student_close_to_its_teacher(encoder_dir, toy_files, tmp_path):
    stage1, _ = train(mlr_config(encoder_dir, toy_files, tmp_path / "mlr", epochs=1))
    tokenizer = load_tokenizer(str(stage1 / "encoder"))
    grade = toy_grade(tmp_path / "g.json", 60, seed=3)

    def fine_tune(beta):
        config = TrainingConfig.for_stage("kd", init_from=str(stage1), train_data=str(grade), output_dir=str(tmp_path / f"kd{beta}"),
                                          epochs=3, learning_rate=1e-3, beta=beta, max_length=32)
        best, state = train(config)
        return QuantiDCEModel.load(best, eager_attention=True), state

    teacher = QuantiDCEModel.load(stage1, eager_attention=True).eval()
    pairs = read_grade(grade)
    batch = ScoredCollator(tokenizer.pad_token_id)(ScoredDataset(pairs, tokenizer, max_length=32).items)
    batch.pop("target")

    def drift(student):
        with torch.no_grad():
            s = student.eval()(**batch, output_hidden_states=True, output_attentions=True)
            t = teacher(**batch, output_hidden_states=True, output_attentions=True)
        return float(distillation_loss(s.hidden_states, t.hidden_states, s.attentions, t.attentions, s.score, t.score))

    with_kd, state = fine_tune(5.0)
    without_kd, _ = fine_tune(0.0)
    assert drift(with_kd) < 0.5 * drift(without_kd)
    assert {"mse", "kd"} <= set(state.history[0])
    train_part, validation_part = split(pairs, seed=71)
    assert len(validation_part) == 6 and not {p.id for p in train_part} & {p.id for p in validation_part}


def test_kd_needs_a_stage_one_model(toy_files, tmp_path):
    with pytest.raises(ValueError, match="init_from"):
        build(TrainingConfig.for_stage("kd", train_data=str(toy_files["grade"]), output_dir=str(tmp_path)))
    with pytest.raises(ValueError, match="unknown training setting"):
        TrainingConfig.for_stage("mlr", learning_rat=1e-3)


def test_paired_representation_learns_the_levels_and_kd_fine_tunes_it(encoder_dir, toy_files, tmp_path):
    tokenizer = load_tokenizer(str(encoder_dir))
    held_out = read_ddpp(toy_files["validation"])
    best, _ = train(mlr_config(encoder_dir, toy_files, tmp_path / "mlr", representation="paired"))
    trained = QuantiDCEModel.load(best)
    assert trained.representation == "paired" and json.loads((best / "metric.json").read_text())["representation"] == "paired"
    assert ranking_accuracy(trained, tokenizer, held_out) >= 0.9
    kd = TrainingConfig.for_stage("kd", init_from=str(best), train_data=str(toy_files["grade"]), epochs=1,
                                  output_dir=str(tmp_path / "kd"), max_length=32, representation="cls")
    tuned, state = train(kd)
    assert QuantiDCEModel.load(tuned).representation == "paired"  # the stage-1 model's representation wins
    assert state.history[0]["kd"] >= 0.0 and state.step == 6  # 54 pairs / batch 10


def test_a_frozen_encoder_is_left_untouched_by_training(encoder_dir, toy_files, tmp_path):
    config = mlr_config(encoder_dir, toy_files, tmp_path / "frozen", representation="mean", freeze_encoder=True,
                        head_learning_rate=1e-2, epochs=1)
    trainer = build(config)
    groups = trainer.optimizer.param_groups
    assert len(groups) == 1 and groups[0]["initial_lr"] == 1e-2  # the head's group only, at the head's rate
    assert {id(p) for p in groups[0]["params"]} == {id(p) for p in trainer.model.head.parameters()}
    best, _ = train(config)
    before = QuantiDCEModel.from_encoder(str(encoder_dir)).encoder.state_dict()
    after = QuantiDCEModel.load(best).encoder.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    with pytest.raises(ValueError, match="representation: must be one of"):
        TrainingConfig.for_stage("mlr", representation="pooler")


def test_mlr_defaults_are_the_ablation_winner_and_the_paper_is_three_settings_away():
    default = TrainingConfig.for_stage("mlr")
    assert (default.representation, default.freeze_encoder, default.head_learning_rate) == ("windows", True, 1e-3)
    assert default.cache_features is True  # the frozen features are computed once
    assert default.validation_limit == 150  # DD++ test contexts 150+ stay unseen (benchmark_metric --offset 150)
    assert default.schedule() == "constant"  # the frozen encoder's head is not decayed to 0
    assert (default.epochs, default.batch_size, default.learning_rate) == (5, 3, 2e-5)  # the paper's schedule
    paper = TrainingConfig.for_stage("mlr", **PAPER)
    assert (paper.representation, paper.freeze_encoder, paper.head_learning_rate) == ("cls", False, 0.0)
    assert paper.schedule() == "linear"
    assert TrainingConfig.for_stage("kd").freeze_encoder is False  # KD fine-tunes the whole model


def test_best_summary_names_what_the_model_was_chosen_on():
    from ml.trainers.callbacks import TrainingState, best_summary

    state = TrainingState(best_validation=0.97, best_step=686, best_selection=-0.8064)
    assert best_summary(state, "accuracy") == "kept step 686: best validation accuracy 0.8064 (validation loss 0.97)"
    assert best_summary(TrainingState(best_validation=0.5, best_step=3, best_selection=0.5), "loss") == \
        "best validation loss 0.5 at step 3"


def test_progress_marks_best_beside_the_figure_selection_follows():
    """"(best)" stood beside the validation loss while the model was chosen on accuracy."""
    from ml.trainers.callbacks import TqdmCallback, TrainingState

    lines = []
    progress = TqdmCallback(disable=True)
    progress.bar = type("Bar", (), {"write": staticmethod(lines.append)})()
    state = TrainingState(step=60, selected_on="ranking_accuracy")
    progress.on_evaluate(state, 0.91, {"accuracy": 0.5, "ranking_accuracy": 0.76}, True)
    assert lines[-1] == "step 60: validation loss 0.9100 accuracy=0.5000 ranking_accuracy=0.7600 (best)"
    progress.on_evaluate(TrainingState(step=120), 0.80, {"accuracy": 0.6}, True)
    assert lines[-1] == "step 120: validation loss 0.8000 (best) accuracy=0.6000"
    progress.on_evaluate(TrainingState(step=180), 0.85, {"accuracy": 0.6}, False)
    assert "(best)" not in lines[-1]
