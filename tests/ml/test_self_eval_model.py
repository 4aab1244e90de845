"""SelF-Eval's model and trainer on a tiny random encoder and toy dialogues: [E_cls; mean] → tanh MLP →
sigmoid with head dropout, save/load, batched dialogue scoring with its truncation count; the coarse
stage lowers its ranking loss, the fine stage adds R-drop, a resumed run computes the same
next losses, and cached frozen-encoder features give the same losses as the encoder itself."""
import pytest
import torch

from ml.dialogue_scoring import score_dialogues
from ml.models import QuantiDCEModel, SelfEvalModel, load_tokenizer
from ml.trainers import Callback, TrainingConfig, latest_checkpoint
from ml.trainers.self_eval import build, train
from tests.ml.toy import tiny_encoder_dir, toy_dialogues


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory):
    return tiny_encoder_dir(tmp_path_factory.mktemp("tiny-se") / "encoder")


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    folder = tmp_path_factory.mktemp("toy-se")
    return {"train": toy_dialogues(folder / "train.json", 48, seed=1), "validation": toy_dialogues(folder / "dev.json", 12, seed=2)}


def config(encoder_dir, toy, out, stage="coarse", **overrides):
    values = dict(metric="self_eval", encoder=str(encoder_dir), train_data=str(toy["train"]),
                  validation_data=str(toy["validation"]), output_dir=str(out), epochs=2, batch_size=4,
                  learning_rate=1e-3, head_learning_rate=5e-3, checkpoint_every=0, max_length=48, per_level=2)
    return TrainingConfig.for_stage(stage, **{**values, **overrides})


class Losses(Callback):
    def __init__(self):
        self.steps = []

    def on_step(self, state, loss, parts):
        self.steps.append((state.step, loss))


def test_model_reads_cls_and_mean_pool_and_drops_out(encoder_dir, tmp_path):
    model = SelfEvalModel.from_encoder(str(encoder_dir))
    assert model.head[1].in_features == 2 * 32 and isinstance(model.head[2], torch.nn.Tanh)
    assert model.head[0].p == model.head[3].p == 0.5
    tokenizer = load_tokenizer(str(encoder_dir))
    batch = tokenizer(["a: hi [SEP] b: hello", "a: how are you"], padding=True, return_tensors="pt")
    model.eval()
    with torch.no_grad():
        first, second = model(**batch).score, model(**batch).score
        assert first.shape == (2,) and ((first > 0) & (first < 1)).all() and torch.equal(first, second)
        model.train()
        assert not torch.equal(model(**batch).score, model(**batch).score)  # dropout on: two passes differ
        model.eval()
        h = model.representation(**batch)
        assert torch.allclose(model(features=h).score, first)
    model.save(tmp_path / "m", tokenizer=tokenizer)
    loaded = SelfEvalModel.load(tmp_path / "m").eval()
    with torch.no_grad():
        assert torch.allclose(loaded(**batch).score, first)
    QuantiDCEModel.from_encoder(str(encoder_dir)).save(tmp_path / "q")
    with pytest.raises(FileNotFoundError, match="not a saved SelF-Eval model"):
        SelfEvalModel.load(tmp_path / "q")


def test_scoring_keeps_input_order_and_counts_truncated_dialogues(encoder_dir):
    model, tokenizer = SelfEvalModel.from_encoder(str(encoder_dir)), load_tokenizer(str(encoder_dir))
    dialogues = [["hi", "hello there how are you today my friend"], ["a"], ["hi", "hello", "fine thanks and you ?"]]
    scores, truncated = score_dialogues(model, tokenizer, dialogues, batch_size=2, max_length=512)
    singles = [score_dialogues(model, tokenizer, [d], max_length=512)[0][0] for d in dialogues]
    assert truncated == 0 and scores == pytest.approx(singles, abs=1e-5)
    assert score_dialogues(model, tokenizer, dialogues, max_length=8)[1] == 2


def test_coarse_then_fine_training_learns_the_levels(encoder_dir, toy, tmp_path):
    losses = Losses()
    best, state = train(config(encoder_dir, toy, tmp_path / "coarse", epochs=4), callbacks=[losses])
    validations = [h["validation"] for h in state.history if "validation" in h]
    assert min(validations) < validations[0]
    first, last = [v for _, v in losses.steps[:4]], [v for _, v in losses.steps[-4:]]
    assert sum(last) < sum(first)  # the ranking loss falls
    fine_best, fine_state = train(config(encoder_dir, toy, tmp_path / "fine", stage="fine", init_from=str(best), epochs=1))
    steps = [h for h in fine_state.history if "loss" in h]
    assert all(h["rdrop"] > 0 for h in steps)  # two dropout passes differ, the consistency term is live
    assert all(h["loss"] == pytest.approx(h["mlr"] + h["rdrop"], rel=1e-5) for h in steps)
    assert SelfEvalModel.load(fine_best) is not None
    with pytest.raises(ValueError, match="init_from"):
        build(config(encoder_dir, toy, tmp_path / "x", stage="fine"))


def test_resume_from_a_checkpoint_computes_the_same_next_losses(encoder_dir, toy, tmp_path):
    def fine(out, **kw):
        return config(encoder_dir, toy, out, stage="fine", init_from=str(start), **kw)

    start = SelfEvalModel.from_encoder(str(encoder_dir)).save(tmp_path / "start", tokenizer=load_tokenizer(str(encoder_dir)))
    through = Losses()
    train(fine(tmp_path / "a", checkpoint_every=3, max_steps=6, keep_checkpoints=5), callbacks=[through])
    stopped = Losses()
    train(fine(tmp_path / "b", checkpoint_every=3, max_steps=3), callbacks=[stopped])
    assert latest_checkpoint(tmp_path / "b").name == "step-3"
    resumed = Losses()
    train(fine(tmp_path / "b", checkpoint_every=3, max_steps=6), callbacks=[resumed], resume=True)
    assert stopped.steps == through.steps[:3]
    assert [s for s, _ in resumed.steps] == [4, 5, 6]
    assert [v for _, v in resumed.steps] == pytest.approx([v for _, v in through.steps[3:]], abs=1e-6)


def test_cached_features_give_the_losses_of_the_frozen_encoder(encoder_dir, toy, tmp_path):
    runs = {}
    for cached in (False, True):
        losses = Losses()
        trainer = build(config(encoder_dir, toy, tmp_path / str(cached), freeze_encoder=True, cache_features=cached,
                               max_steps=3, train_limit=12), callbacks=[losses])
        assert isinstance(trainer.train_set[0][0], torch.Tensor) is cached
        trainer.train()
        runs[cached] = [v for _, v in losses.steps]
    assert runs[True] == pytest.approx(runs[False], abs=1e-5)
