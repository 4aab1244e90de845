"""QuantiDCE's ``windows`` representation (the default) and the frozen-feature cache.

``windows`` scores the response against the whole context and against its last turn with one shared head,
averaging the two logits; the cache computes a frozen encoder's pair features once, and must give the model
exactly what its forward pass computes, so that a head trained on cached features is the head trained on
the texts."""
import json

import pytest
import torch

from ml.data.frozen_features import embed_distinct, pair_features_of
from ml.data.levels import LevelledCollator, LevelledDataset, read_ddpp
from ml.data.packing import collate, pack_for, pack_separate, pack_windows, packed_length
from ml.models import QuantiDCEModel, load_tokenizer
from ml.models.quantidce import mean_pool, pair_features
from ml.scoring import score_pairs
from ml.trainers import TrainingConfig
from ml.trainers.quantidce import build, train
from tests.ml.test_models_scoring import tiny_bert
from tests.ml.test_trainers import mlr_config, ranking_accuracy


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer()


def decode(tokenizer, ids):
    return tokenizer.decode(ids)


def test_pack_windows_adds_the_last_turn_alone_and_collate_pads_each_input_to_its_own_longest(tokenizer):
    packed = pack_windows(tokenizer, ["one two three four five six", "seven eight"], "the reply", max_length=7)
    assert decode(tokenizer, packed["input_ids"]) == "[CLS] four five six seven eight [SEP]"  # the whole context, cut
    assert decode(tokenizer, packed["last_input_ids"]) == "[CLS] seven eight [SEP]"
    assert decode(tokenizer, packed["response_input_ids"]) == "[CLS] the reply [SEP]"
    assert packed["last_attention_mask"] == [1] * 4 and packed["last_token_type_ids"] == [0] * 4
    assert packed_length(packed) == 7 + 4 + 4
    long_last = pack_windows(tokenizer, ["a", "one two three four five six seven"], "b", max_length=6)
    assert decode(tokenizer, long_last["last_input_ids"]) == "[CLS] four five six seven [SEP]"  # newest kept
    assert pack_for("windows") is pack_windows
    batch = collate([pack_windows(tokenizer, ["hi", "a much longer last turn here"], "ok"),
                     pack_windows(tokenizer, ["a long first turn of the context", "yo"], "a longer reply than that")],
                    tokenizer.pad_token_id)
    assert batch["last_input_ids"].shape == (2, 8) and batch["last_attention_mask"].sum().item() == 8 + 3
    assert batch["input_ids"].shape[1] == 10 and batch["response_input_ids"].shape[1] == 7
    assert set(batch) == {p + k for p in ("", "response_", "last_")
                          for k in ("input_ids", "attention_mask", "token_type_ids")}


def test_windows_averages_the_shared_head_over_the_whole_context_and_the_last_turn(tokenizer):
    bert = tiny_bert(tokenizer).eval()
    pairs = [(["how are you", "fine and you ?"], "great thanks"), (["hi there"], "hello again you")]
    batch = collate([pack_windows(tokenizer, c, r) for c, r in pairs], tokenizer.pad_token_id)
    model = QuantiDCEModel(bert, "windows").eval()
    assert model.head[0].in_features == 4 * 32 + 1

    def embed(prefix):
        out = bert(input_ids=batch[prefix + "input_ids"], attention_mask=batch[prefix + "attention_mask"],
                   token_type_ids=batch[prefix + "token_type_ids"]).last_hidden_state
        return mean_pool(out, batch[prefix + "attention_mask"])

    with torch.no_grad():
        u, v, w = embed(""), embed("response_"), embed("last_")
        logits = (model.head(pair_features(u, v)) + model.head(pair_features(w, v))).squeeze(-1) / 2
        assert model(**batch).score.tolist() == pytest.approx(torch.sigmoid(logits).tolist(), abs=1e-6)
        # with a single-turn context both windows are the same text: the score is the paired model's
        paired = QuantiDCEModel(bert, "paired").eval()
        paired.head.load_state_dict(model.head.state_dict())
        alone = collate([pack_separate(tokenizer, *pairs[1])], tokenizer.pad_token_id)
        assert model(**{k: v[1:] for k, v in batch.items()}).score.item() == pytest.approx(
            paired(**alone).score.item(), abs=1e-6)
    with pytest.raises(ValueError, match="pack_windows"):
        model(**{k: v for k, v in batch.items() if not k.startswith("last_")})


def test_windows_gives_distillation_one_tensor_per_layer_and_survives_save_and_load(tokenizer, tmp_path):
    model = QuantiDCEModel(tiny_bert(tokenizer), "windows").eval()
    batch = collate([pack_windows(tokenizer, ["hello", "how are you"], "fine thanks")], tokenizer.pad_token_id)
    out = model(**batch, output_hidden_states=True, output_attentions=True)
    assert len(out.hidden_states) == 3 and out.hidden_states[0].shape == (1, 6 + 4 + 5, 32)  # context, reply, last
    assert out.attentions[0].shape == (1, 2, 6 * 6 + 4 * 4 + 5 * 5)
    pairs = [(["a much longer context", "with many words in it"], "one"), (["short"], "a longer reply"), (["x"], "y")]
    scores = score_pairs(model, tokenizer, pairs, batch_size=2, device="cpu")
    model.save(tmp_path / "m", tokenizer=tokenizer)
    loaded = QuantiDCEModel.load(tmp_path / "m")
    assert loaded.representation == "windows"
    assert score_pairs(loaded, tokenizer, pairs, device="cpu") == pytest.approx(scores, abs=1e-6)


@pytest.mark.parametrize("representation", ["windows", "paired", "mean", "cls"])
def test_cached_features_score_exactly_as_the_encoder_does(tokenizer, representation):
    model = QuantiDCEModel(tiny_bert(tokenizer), representation).eval()
    packer = pack_for(representation)
    items = [[packer(tokenizer, ["hello", f"do you like tea {i} ?"], r) for r in ("yes", "no thanks", "yes")]
             for i in range(3)]
    features = pair_features_of(model, items, tokenizer.pad_token_id, torch.device("cpu"), batch_size=4)
    assert [f.shape[0] for f in features] == [3, 3, 3]
    with torch.no_grad():
        for item, cached in zip(items, features, strict=True):
            direct = model(**collate(item, tokenizer.pad_token_id)).score
            assert model(features=cached).score.tolist() == pytest.approx(direct.tolist(), abs=1e-5)


def test_each_distinct_text_is_embedded_once(tokenizer):
    model = QuantiDCEModel(tiny_bert(tokenizer), "windows").eval()
    calls = []
    model.encoder.register_forward_hook(lambda module, args, kwargs, out: calls.append(kwargs["input_ids"].shape[0]),
                                        with_kwargs=True)
    items = [[pack_windows(tokenizer, ["hello", "how are you ?"], r) for r in ("fine", "ok", "fine", "bad")]]
    pair_features_of(model, items, tokenizer.pad_token_id, torch.device("cpu"))
    # distinct: the context, its last turn, and three responses ("fine" twice)
    assert sum(calls) == 5
    vectors = embed_distinct(model, [{"input_ids": [101, 7592, 102], "attention_mask": [1, 1, 1]}] * 3,
                             tokenizer.pad_token_id, torch.device("cpu"))
    assert list(vectors) == [(101, 7592, 102)]


def test_a_head_trained_on_cached_features_is_the_head_trained_on_the_texts(encoder_dir, toy_files, tmp_path):
    """Same seed, same batches: the cache changes where h comes from, not what is learned."""
    heads = {}
    for cached in (False, True):
        config = mlr_config(encoder_dir, toy_files, tmp_path / str(cached), representation="windows",
                            freeze_encoder=True, cache_features=cached, head_learning_rate=1e-2, epochs=2)
        trainer = build(config)
        assert isinstance(trainer.train_set[0], torch.Tensor) is cached
        trainer.train()
        heads[cached] = trainer.model.head.state_dict()
    for key, value in heads[False].items():
        assert torch.allclose(value, heads[True][key], atol=1e-4), key
    assert not torch.equal(heads[True]["0.weight"], QuantiDCEModel.from_encoder(
        str(encoder_dir), representation="windows").head.state_dict()["0.weight"])  # the head did train


def test_the_default_windows_model_learns_the_levels_and_kd_fine_tunes_it(encoder_dir, toy_files, tmp_path):
    tokenizer = load_tokenizer(str(encoder_dir))
    config = TrainingConfig.for_stage("mlr", encoder=str(encoder_dir), train_data=str(toy_files["train"]),
                                      validation_data=str(toy_files["validation"]), output_dir=str(tmp_path / "mlr"),
                                      epochs=3, batch_size=4, head_learning_rate=1e-2, checkpoint_every=0,
                                      max_length=32)
    assert (config.representation, config.freeze_encoder, config.cache_features) == ("windows", True, True)
    best, _ = train(config)
    trained = QuantiDCEModel.load(best)
    assert json.loads((best / "metric.json").read_text())["representation"] == "windows"
    assert ranking_accuracy(trained, tokenizer, read_ddpp(toy_files["validation"])) >= 0.9
    kd = TrainingConfig.for_stage("kd", init_from=str(best), train_data=str(toy_files["grade"]), epochs=1,
                                  output_dir=str(tmp_path / "kd"), max_length=32)
    tuned, state = train(kd)
    assert QuantiDCEModel.load(tuned).representation == "windows" and state.history[0]["kd"] >= 0.0


def test_the_levelled_collator_batches_cached_features_in_the_mlr_shape(tokenizer):
    contexts = read_ddpp_lines(tokenizer)
    dataset = LevelledDataset(contexts, tokenizer, representation="windows")
    with pytest.raises(ValueError, match="2 feature blocks for 1 contexts"):
        dataset.cache_features([torch.zeros(15, 2, 9)] * 2)
    dataset.cache_features([torch.arange(15 * 2 * 9, dtype=torch.float).view(15, 2, 9)])
    batch = LevelledCollator(tokenizer.pad_token_id, dataset.shape)([dataset[0], dataset[0]])
    assert batch["features"].shape == (30, 2, 9) and batch["shape"] == (2, 3, 5)


def read_ddpp_lines(tokenizer):
    from ml.data.levels import LevelledContext

    return [LevelledContext(["hi", "how are you"], [[f"r{level}{k}" for k in range(5)] for level in range(3)])]


@pytest.mark.parametrize("representation", ["windows", "paired"])
def test_scoring_embeds_each_distinct_text_once_and_gives_the_whole_model_scores(tokenizer, representation):
    from ml.scoring import score_packed

    model = QuantiDCEModel(tiny_bert(tokenizer, seed=3), representation).eval()
    pairs = [(["hello", "how are you ?"], r) for r in ("fine", "not bad at all", "fine")] + [(["x"], "y")]
    calls = []
    model.encoder.register_forward_hook(lambda module, args, kwargs, out: calls.append(kwargs["input_ids"].shape[0]),
                                        with_kwargs=True)
    fast = score_pairs(model, tokenizer, pairs, device="cpu")
    # texts: 2 contexts, 3 distinct responses, and for windows the last turn "how are you ?" ("x" is its
    # own context: the same input, embedded once)
    assert sum(calls) == (6 if representation == "windows" else 5)
    packed = [pack_for(representation)(tokenizer, c, r) for c, r in pairs]
    assert fast == pytest.approx(score_packed(model, packed, tokenizer.pad_token_id, device=torch.device("cpu")),
                                 abs=1e-6)
    assert fast[0] == fast[2] and fast[0] != fast[1]
