"""MDD-Eval's model and trainer on tiny random models: where the MLM head comes from (the checkpoint's,
or a new one tied to the embeddings), save/load, scores from unmasked inputs, the teacher learning a
toy set, and the student's three loss terms."""
import json

import pytest
import torch

from ml.data.mdd import LabelledDataset, LabelledPair, collator_for
from ml.data.packing import collate, pack
from ml.models import load_tokenizer
from ml.models.mdd_eval import LABELS, MDDEvalModel
from ml.scoring import score_pairs
from ml.trainers import mdd_eval
from ml.trainers.mdd_config import MDDEvalConfig
from tests.ml.mdd_toy import tiny_masked_lm_dir
from tests.ml.toy import tiny_encoder_dir, toy_ddpp

PAIRS = [(["do you like music ?"], "yes i love music very much"), (["hello", "do you like coffee ?"], "tax forms")]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mdd-model")
    return {"encoder": tiny_encoder_dir(folder / "encoder"), "mlm": tiny_masked_lm_dir(folder / "mlm"), "folder": folder}


def test_the_mlm_head_is_the_checkpoints_own_or_new_and_tied(tiny):
    bare = MDDEvalModel.from_encoder(str(tiny["encoder"]))  # a BertModel checkpoint: no MLM head in it
    assert bare.mlm_head == "initialised"
    assert bare.backbone.get_output_embeddings().weight is bare.backbone.get_input_embeddings().weight
    own = MDDEvalModel.from_encoder(str(tiny["mlm"]))
    assert own.mlm_head == "pretrained"
    from safetensors.torch import load_file

    weights = load_file(tiny["mlm"] / "model.safetensors")
    key = next(k for k in weights if "predictions.transform.dense.weight" in k)
    assert torch.equal(own.backbone.cls.predictions.transform.dense.weight, weights[key])
    logits = own.mlm_logits(torch.tensor([[101, 2000, 102]]), torch.ones(1, 3, dtype=torch.long))
    assert logits.shape == (1, 3, own.backbone.config.vocab_size)
    ids = torch.randint(1000, 2000, (2, 7))
    chosen = torch.zeros(2, 7, dtype=torch.bool)
    chosen[0, 2] = chosen[1, 5] = chosen[1, 6] = True
    own.eval()
    full, only = own.mlm_logits(ids, torch.ones_like(ids)), own.mlm_logits(ids, torch.ones_like(ids), positions=chosen)
    assert only.shape == (3, own.backbone.config.vocab_size) and torch.allclose(full[chosen], only, atol=1e-5)


@pytest.mark.parametrize("representation", ["cls", "paired"])
def test_save_load_and_scores_come_from_unmasked_inputs(tiny, tmp_path, representation):
    tokenizer = load_tokenizer(str(tiny["encoder"]))
    model = MDDEvalModel.from_encoder(str(tiny["encoder"]), representation=representation).eval()
    scores = score_pairs(model, tokenizer, PAIRS, device="cpu")
    assert scores == score_pairs(model, tokenizer, PAIRS, device="cpu")  # no random masking at inference
    if representation == "cls":
        with torch.inference_mode():
            direct = model(**collate([pack(tokenizer, c, r) for c, r in PAIRS[:1]], tokenizer.pad_token_id))
        assert direct.score.item() == pytest.approx(scores[0], abs=1e-6)
        assert direct.logits.shape == (1, 3) and direct.score.item() == pytest.approx(
            torch.softmax(direct.logits, -1)[0, LABELS.index("relevant")].item())
    model.save(tmp_path / "saved", tokenizer=tokenizer, metadata={"stage": "teacher"})
    meta = json.loads((tmp_path / "saved" / "metric.json").read_text())
    assert (meta["metric"], meta["representation"], meta["labels"]) == ("mdd_eval", representation, list(LABELS))
    loaded = MDDEvalModel.load(tmp_path / "saved")
    assert loaded.representation == representation and loaded.mlm_head == "initialised"
    assert score_pairs(loaded, tokenizer, PAIRS, device="cpu") == pytest.approx(scores, abs=1e-6)
    with pytest.raises(FileNotFoundError, match="not a saved MDD-Eval model"):
        MDDEvalModel.load(tiny["encoder"])


def test_the_teacher_learns_the_toy_levels_and_reports_accuracy_per_class(tiny, tmp_path):
    data = toy_ddpp(tmp_path / "toy.json", 24, seed=4)
    config = MDDEvalConfig.for_stage("teacher", encoder=str(tiny["encoder"]), train_data=str(data),
                                     output_dir=str(tmp_path / "teacher"), epochs=8, batch_size=30,
                                     learning_rate=3e-3, max_length=32, validation_fraction=0.25, device="cpu")
    best, state = mdd_eval.train(config)
    losses = [h["loss"] for h in state.history if "loss" in h]
    assert sum(losses[-4:]) / 4 < sum(losses[:4]) / 4 * 0.8  # the loss falls
    accuracy = json.loads((best / "metric.json").read_text())["validation_accuracy"]
    assert set(accuracy) == {*LABELS, "overall"}
    assert accuracy["overall"] > 0.6 and accuracy["random"] > 0.5, accuracy  # chance is 1/3


def test_the_student_objective_has_three_terms_and_selects_on_cross_entropy(tiny):
    tokenizer = load_tokenizer(str(tiny["encoder"]))
    model = MDDEvalModel.from_encoder(str(tiny["encoder"]))
    pairs = [LabelledPair(list(c), r, (0.1, 0.2, 0.7), str(i)) for i, (c, r) in enumerate(PAIRS * 2)]
    batch = collator_for(tokenizer, mlm=True, mlm_probability=0.5)(
        [item for item in LabelledDataset(pairs, tokenizer, noised=True)])
    objective = mdd_eval.StudentObjective(MDDEvalConfig(stage="student"), mlm=True)
    model.train()
    loss, parts = objective(model, dict(batch))
    assert set(parts) == {"ce", "kl", "mlm"} and torch.isfinite(loss)
    assert loss.item() == pytest.approx(parts["ce"] + parts["kl"] + parts["mlm"], rel=1e-5)
    loss.backward()
    embeddings = model.backbone.get_input_embeddings().weight
    assert embeddings.grad is not None and embeddings.grad.abs().sum() > 0
    model.eval()
    with torch.no_grad():
        loss, parts = objective(model, dict(batch))
    # validation: the CE selects; the accuracy against the targets' top class is reported beside it
    assert set(parts) == {"ce", "accuracy"} and loss.item() == pytest.approx(parts["ce"])
    assert 0.0 <= parts["accuracy"] <= 1.0
