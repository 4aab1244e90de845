"""Dataset builders: DailyDialog++ levels (order, K per level, incomplete contexts skipped, bad lines
named), GRADE human scores (mean of annotators, bad records named), the seeded split, collators;
saving and loading a model keeps its scores."""
import json

import pytest
import torch

from ml.data.human_scores import ScoredCollator, ScoredDataset, read_grade, split
from ml.data.levels import LevelledCollator, LevelledDataset, read_ddpp
from ml.models import QuantiDCEModel, load_tokenizer
from ml.scoring import score_pairs
from tests.conftest import shared_file
from tests.ml.toy import tiny_encoder_dir, toy_ddpp


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer()


def test_ddpp_levels_rise_in_quality_and_incomplete_contexts_are_skipped(tmp_path):
    path = tmp_path / "d.json"
    good = {"id": 7, "context": ["hi", "how are you?"], "positive_responses": [f"p{i}" for i in range(5)],
            "adversarial_negative_responses": [f"a{i}" for i in range(5)], "random_negative_responses": [f"r{i}" for i in range(6)]}
    short = {**good, "id": 8, "adversarial_negative_responses": ["a0", "", "a2"]}
    path.write_text(json.dumps(good) + "\n\n" + json.dumps(short) + "\n")
    [context] = read_ddpp(path)
    assert context.id == "7" and context.levels[0] == [f"r{i}" for i in range(5)]  # level 1 = random, K = 5
    assert context.levels[1][0] == "a0" and context.levels[2][-1] == "p4"
    path.write_text(json.dumps(good) + "\n{not json\n")
    with pytest.raises(ValueError, match="d.json line 2: not JSON"):
        read_ddpp(path)
    path.write_text(json.dumps({"context": ["x"]}) + "\n")
    with pytest.raises(ValueError, match="line 1: missing random_negative_responses, adversarial_negative_responses, positive_responses"):
        read_ddpp(path)


def test_real_ddpp_dev_has_three_levels_of_five(tokenizer):
    contexts = read_ddpp(shared_file("dailydialog_pp", "dev.json"), limit=50)
    assert len(contexts) == 50 and all(len(c.levels) == 3 and all(len(lv) == 5 for lv in c.levels) for c in contexts)
    dataset = LevelledDataset(contexts[:2], tokenizer, max_length=64)
    batch = LevelledCollator(tokenizer.pad_token_id, dataset.shape)([dataset[0], dataset[1]])
    assert batch["shape"] == (2, 3, 5) and batch["input_ids"].shape[0] == 30
    assert batch["input_ids"].shape[1] == max(len(x["input_ids"]) for c in (dataset[0], dataset[1]) for x in c) <= 64


def test_grade_scores_are_annotator_means_and_bad_records_are_named(tmp_path, tokenizer):
    path = tmp_path / "g.json"
    path.write_text(json.dumps([{"ID": 3, "Context": "a|||b", "Response": "c", "HumanScores": "[1, 2, 4, 5]"}]))
    [pair] = read_grade(path)
    assert (pair.context, pair.response, pair.score) == (["a", "b"], "c", 3.0)
    batch = ScoredCollator(tokenizer.pad_token_id)(ScoredDataset([pair, pair], tokenizer).items)
    assert batch["target"].tolist() == [3.0, 3.0] and batch["input_ids"].shape[0] == 2
    path.write_text(json.dumps([{"ID": 3, "Context": "a", "Response": "c", "HumanScores": "[1, 2]"},
                                {"ID": 9, "Context": "a", "HumanScores": "[1]"}]))
    with pytest.raises(ValueError, match=r"g.json record 1 \(ID 9\): KeyError"):
        read_grade(path)


def test_real_grade_split_is_seeded_and_disjoint():
    pairs = read_grade(shared_file("grade", "dailydialog_EVAL.json"))
    train, validation = split(pairs, seed=71)
    again, _ = split(pairs, seed=71)
    other, _ = split(pairs, seed=72)
    assert (len(pairs), len(train), len(validation)) == (300, 270, 30)
    assert [p.id for p in train] == [p.id for p in again] != [p.id for p in other]
    assert not {p.id for p in train} & {p.id for p in validation}
    assert all(1 <= p.score <= 5 for p in pairs)


def test_a_saved_model_scores_as_before_and_describes_itself(tmp_path, tokenizer):
    encoder = tiny_encoder_dir(tmp_path / "encoder")
    torch.manual_seed(1)
    model = QuantiDCEModel.from_encoder(str(encoder)).eval()
    contexts = read_ddpp(toy_ddpp(tmp_path / "t.json", 2))
    pairs = [(c.context, r) for c in contexts for level in c.levels for r in level]
    before = score_pairs(model, tokenizer, pairs)
    model.save(tmp_path / "saved", tokenizer=tokenizer, metadata={"stage": "mlr"})
    loaded = QuantiDCEModel.load(tmp_path / "saved")
    assert score_pairs(loaded, load_tokenizer(str(tmp_path / "saved" / "encoder")), pairs) == pytest.approx(before, abs=1e-6)
    assert json.loads((tmp_path / "saved" / "metric.json").read_text()) == {"metric": "quantidce", "stage": "mlr",
                                                                           "representation": "cls", "floor": False}
    assert not (tmp_path / "saved.tmp").exists()
    with pytest.raises(FileNotFoundError, match="not a saved QuantiDCE model"):
        QuantiDCEModel.load(encoder)
