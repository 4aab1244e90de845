"""SelF-Eval's optional ``pairs`` representation (consecutive turns embedded apart, each pair scored by
the head, logits averaged, sigmoid): its aggregation on hand-made tensors, per-turn embedding and
padding, training on a tiny random encoder, save/load round trip, and scoring from metric.json."""
import json
from pathlib import Path

import pytest
import torch

from ml.data.turn_pairs import embed_turns, pad_turns, score_dialogues_by_pairs
from ml.models import SelfEvalModel, load_tokenizer
from ml.models.quantidce import pair_features
from ml.trainers import TrainingConfig
from ml.trainers.self_eval import build, train
from tests.ml.toy import tiny_encoder_dir, toy_dialogues


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory):
    return tiny_encoder_dir(tmp_path_factory.mktemp("tiny-sep") / "encoder")


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    folder = tmp_path_factory.mktemp("toy-sep")
    return {"train": toy_dialogues(folder / "train.json", 40, seed=1),
            "validation": toy_dialogues(folder / "dev.json", 10, seed=2)}


def config(encoder_dir, toy, out, stage="coarse", **overrides):
    values = dict(metric="self_eval", encoder=str(encoder_dir), train_data=str(toy["train"]),
                  validation_data=str(toy["validation"]), output_dir=str(out), epochs=3, batch_size=4,
                  head_learning_rate=5e-3, checkpoint_every=0, max_length=48, per_level=2, freeze_encoder=True,
                  self_eval_representation="pairs")
    return TrainingConfig.for_stage(stage, **{**values, **overrides})


def test_the_score_is_the_sigmoid_of_the_mean_pair_logit_over_real_pairs(encoder_dir):
    model = SelfEvalModel.from_encoder(str(encoder_dir), representation="pairs").eval()
    assert model.head[1].in_features == 4 * 32 + 1
    torch.manual_seed(3)
    turns = torch.nn.functional.normalize(torch.randn(2, 4, 32), dim=-1)
    turns[1, 3] = 0  # the second dialogue has 3 turns: 2 pairs
    with torch.no_grad():
        scores = model(features=turns).score
        logits = [model.head(pair_features(turns[b, k], turns[b, k + 1])).item() for b in range(2) for k in range(3)]
    assert scores.shape == (2,)
    expected = torch.sigmoid(torch.tensor([sum(logits[:3]) / 3, sum(logits[3:5]) / 2]))
    assert torch.allclose(scores, expected, atol=1e-6)
    # padding beyond the turns changes nothing; a one-turn dialogue has no pair and scores ½
    with torch.no_grad():
        padded = model(features=torch.cat([turns, torch.zeros(2, 2, 32)], dim=1)).score
        single = model(features=turns[:1, :1]).score
    assert torch.allclose(padded, scores, atol=1e-6) and single.item() == pytest.approx(0.5)


def test_a_replaced_turn_lowers_the_score_when_the_head_rewards_agreement(encoder_dir):
    model = SelfEvalModel.from_encoder(str(encoder_dir), representation="pairs").eval()
    with torch.no_grad():  # a head that reads only cos(u, v): logit = 10·cos
        model.head[1].weight.zero_(), model.head[1].bias.zero_(), model.head[4].bias.zero_()
        model.head[1].weight[0, -1] = 1.0
        model.head[4].weight.zero_()
        model.head[4].weight[0, 0] = 10.0
    topic = torch.nn.functional.normalize(torch.ones(32), dim=0)
    other = torch.nn.functional.normalize(torch.arange(32.0) - 15.5, dim=0)  # orthogonal to topic
    same = torch.stack([topic] * 4)
    replaced = same.clone()
    replaced[2] = other
    with torch.no_grad():
        scores = model(features=torch.stack([same, replaced])).score
    assert scores[0] > scores[1]
    # pairs (1, 2) and (2, 3) have cos 0: logit = (10·tanh(1) + 0 + 0) / 3
    assert scores[1].item() == pytest.approx(torch.sigmoid(10 * torch.tanh(torch.tensor(1.0)) / 3).item(), abs=1e-5)


def test_turns_are_embedded_once_unit_norm_and_padded_with_zero_rows(encoder_dir):
    model = SelfEvalModel.from_encoder(str(encoder_dir), representation="pairs")
    tokenizer = load_tokenizer(str(encoder_dir))
    vectors, cut = embed_turns(model.encoder, tokenizer, ["hi there", "hello", "hi there", "word " * 80],
                               max_length=48, device="cpu")
    assert set(vectors) == {"hi there", "hello", "word " * 80} and cut == 1
    assert all(abs(v.norm().item() - 1) < 1e-5 for v in vectors.values())
    batch = tokenizer(["hello"], return_tensors="pt")
    with torch.no_grad():
        hidden = model.encoder.eval()(**batch).last_hidden_state.mean(1)[0]
    assert torch.allclose(vectors["hello"], hidden / hidden.norm(), atol=1e-5)
    padded = pad_turns([torch.ones(2, 3), torch.ones(3, 3)])
    assert padded.shape == (2, 3, 3) and padded[0, 2].abs().sum() == 0 and padded[1, 2].abs().sum() == 3


def test_train_pairs_then_fine_keeps_it_and_scoring_matches_the_model(encoder_dir, toy, tmp_path):
    best, _ = train(config(encoder_dir, toy, tmp_path / "coarse"))
    info = json.loads((best / "metric.json").read_text())
    assert info["representation"] == "pairs" and info["training"]["self_eval_representation"] == "pairs"
    loaded = SelfEvalModel.load(best).eval()
    assert loaded.representation_name == "pairs" and loaded.head[1].in_features == 4 * 32 + 1
    # the fine stage starts from it and keeps the representation, whatever the config's default says
    fine_best, _ = train(config(encoder_dir, toy, tmp_path / "fine", stage="fine", init_from=str(best),
                                self_eval_representation="cls_mean", epochs=1))
    assert json.loads((fine_best / "metric.json").read_text())["representation"] == "pairs"
    # scoring: the loaded model's head over the per-turn embeddings
    tokenizer = load_tokenizer(str(best / "encoder"))
    dialogues = [["do you like music ?", "yes i love music very much"], ["do you like coffee ?", "tax forms", "hm"]]
    scores, cut = score_dialogues_by_pairs(loaded, tokenizer, dialogues, device="cpu")
    vectors, _ = embed_turns(loaded.encoder, tokenizer, [t for d in dialogues for t in d], device="cpu")
    with torch.no_grad():
        direct = [loaded(features=pad_turns([torch.stack([vectors[t] for t in d])])).score.item() for d in dialogues]
    assert cut == 0 and scores == pytest.approx(direct, abs=1e-6)
    # a dialogue without turns has no pair: ½, and the others keep their scores
    again, _ = score_dialogues_by_pairs(loaded, tokenizer, [*dialogues, []], device="cpu")
    assert again == pytest.approx([*direct, 0.5], abs=1e-6)


def test_pairs_needs_a_frozen_encoder_and_a_known_name(encoder_dir, toy, tmp_path):
    with pytest.raises(ValueError, match="freeze_encoder: the pairs representation"):
        build(config(encoder_dir, toy, tmp_path / "a", freeze_encoder=False))
    with pytest.raises(ValueError, match="representation: self_eval reads one of cls_mean, pairs"):
        build(config(encoder_dir, toy, tmp_path / "b", self_eval_representation="paired"))
    with pytest.raises(ValueError, match="representation must be one of cls_mean, pairs"):
        SelfEvalModel.from_encoder(str(encoder_dir), representation="cls")


@pytest.mark.django_db
def test_train_metric_representation_pairs_and_the_metric_scores_with_it(encoder_dir, toy, settings, tmp_path):
    from django.core.management import CommandError, call_command

    from metrics.implementations.self_eval import SelfEval
    from metrics.models import MetricModel

    settings.ARTIFACTS_DIR = tmp_path / "artifacts"
    common = ["--encoder", str(encoder_dir), "--train", str(toy["train"]), "--validation", str(toy["validation"]),
              "--epochs", "1", "--max-length", "48", "--per-level", "2"]
    call_command("train_metric", "self_eval", "--stage", "coarse", "--name", "sep-toy", "--representation", "pairs",
                 "--freeze-encoder", *common, verbosity=0)
    registered = MetricModel.objects.get(name="sep-toy")
    path = registered.artifact_path
    assert json.loads((Path(path) / "metric.json").read_text())["representation"] == "pairs"
    dialogues = [["do you like music ?", "yes i love music very much", "great"], ["hi", "tax forms are on the desk"]]
    metric = SelfEval(config={"path": path, "device": "cpu"})
    scores = metric.score_dialogues(dialogues)
    loaded = SelfEvalModel.load(path)
    expected, _ = score_dialogues_by_pairs(loaded, load_tokenizer(f"{path}/encoder"), dialogues, device="cpu")
    assert scores == pytest.approx(expected, abs=1e-6) and metric.truncated == 0
    with pytest.raises(CommandError, match="freeze_encoder: the pairs representation"):
        call_command("train_metric", "self_eval", "--stage", "coarse", "--name", "sep-bad", "--representation", "pairs",
                     "--no-freeze-encoder", *common, verbosity=0)
