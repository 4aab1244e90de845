"""The QuantiDCE scorer on a tiny random BERT (built from a config, with the packaged MiniLM's real
tokenizer): packing and truncation, head sizes, and batched scoring in input order."""
import pytest
import torch
from transformers import BertConfig, BertModel

from ml.data.packing import collate, pack, pack_for, pack_separate, pad_multiple
from ml.models import QuantiDCEModel, load_tokenizer
from ml.models.quantidce import mean_pool, pair_features
from ml.scoring import score_pairs


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer()  # the packaged MiniLM, offline


@pytest.fixture(scope="module")
def tiny(tokenizer):
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128)
    config._attn_implementation = "eager"  # attention maps are needed for distillation
    return QuantiDCEModel(BertModel(config)).eval()


def decode(tokenizer, ids):
    return tokenizer.decode(ids)


def test_pack_is_cls_context_sep_response_sep(tokenizer):
    packed = pack(tokenizer, ["how are you ?", "fine thanks"], "great to hear", max_length=64)
    assert decode(tokenizer, packed["input_ids"]) == "[CLS] how are you? fine thanks [SEP] great to hear [SEP]"
    first_sep = packed["input_ids"].index(tokenizer.sep_token_id)
    assert set(packed["token_type_ids"][: first_sep + 1]) == {0} and set(packed["token_type_ids"][first_sep + 1:]) == {1}


def test_truncation_drops_the_oldest_context_first_or_the_newest_on_request(tokenizer):
    context = ["one two three four five six seven eight", "nine ten eleven twelve"]
    oldest = pack(tokenizer, context, "the reply stays", max_length=14)
    newest = pack(tokenizer, context, "the reply stays", max_length=14, truncate="newest")
    assert len(oldest["input_ids"]) == len(newest["input_ids"]) == 14
    # 14 - 3 special tokens - 3 response tokens leaves 8 of the 12 context words
    assert decode(tokenizer, oldest["input_ids"]) == "[CLS] five six seven eight nine ten eleven twelve [SEP] the reply stays [SEP]"
    assert decode(tokenizer, newest["input_ids"]) == "[CLS] one two three four five six seven eight [SEP] the reply stays [SEP]"
    tight = pack(tokenizer, context, "a reply far too long for the room left " * 3, max_length=14)
    assert len(tight["input_ids"]) == 14 and tight["token_type_ids"].count(0) == 2  # only [CLS] [SEP] left of context


def test_collate_pads_to_the_longest_in_the_batch(tokenizer):
    batch = collate([pack(tokenizer, ["hi"], "yo"), pack(tokenizer, ["hello there friend"], "hi")], tokenizer.pad_token_id)
    assert batch["input_ids"].shape == (2, len(pack(tokenizer, ["hello there friend"], "hi")["input_ids"]))
    assert batch["attention_mask"][0].tolist().count(0) == batch["input_ids"].shape[1] - 5


def test_collate_rounds_the_width_up_to_a_multiple_and_padding_leaves_scores_alone(tiny, tokenizer):
    items = [pack(tokenizer, ["hi"], "yo"), pack(tokenizer, ["hello there friend"], "hi")]  # longest: 7 tokens
    longest = max(len(i["input_ids"]) for i in items)
    for multiple in (1, 8, 16):
        batch = collate(items, tokenizer.pad_token_id, multiple)
        width = batch["input_ids"].shape[1]
        assert width % multiple == 0 and longest <= width < longest + multiple
    wide = collate(items, tokenizer.pad_token_id, 16)
    assert wide["attention_mask"].sum().item() == sum(len(i["input_ids"]) for i in items)  # pads are masked
    with torch.no_grad():
        assert tiny(**wide).score.tolist() == pytest.approx(tiny(**collate(items, tokenizer.pad_token_id)).score.tolist(),
                                                            abs=1e-6)


def test_head_follows_the_encoder_width_and_scores_are_probabilities(tiny, tokenizer):
    assert [m.out_features for m in tiny.head if isinstance(m, torch.nn.Linear)] == [16, 8, 1]
    batch = collate([pack(tokenizer, ["hi"], "hello")], tokenizer.pad_token_id)
    out = tiny(**batch, output_hidden_states=True, output_attentions=True)
    assert out.score.shape == (1,) and 0 < out.score.item() < 1
    assert len(out.hidden_states) == 3 and len(out.attentions) == 2  # embeddings + 2 layers


def test_batched_scoring_returns_input_order_and_matches_one_at_a_time(tiny, tokenizer):
    pairs = [(["a much longer context with many words in it to sort last"], "reply one"), (["short"], "two"),
             (["medium length context"], "a somewhat longer reply three"), (["x"], "y")]
    batched = score_pairs(tiny, tokenizer, pairs, batch_size=3, device="cpu")
    single = [score_pairs(tiny, tokenizer, [p], batch_size=1, device="cpu")[0] for p in pairs]
    assert batched == pytest.approx(single, abs=1e-6)
    backwards = score_pairs(tiny, tokenizer, pairs[::-1], batch_size=3, device="cpu")
    assert backwards == pytest.approx(batched[::-1], abs=1e-6)  # each score stays with its input


def test_a_half_precision_checkpoint_loads_as_float32_for_training(tmp_path, tokenizer):
    # transformers 5 keeps a checkpoint's stored dtype; fp16 weights would swallow AdamW's small updates
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64)
    torch.manual_seed(0)
    stored = BertModel(config)
    stored.half().save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)

    model = QuantiDCEModel.from_encoder(str(tmp_path))

    assert {p.dtype for p in model.parameters()} == {torch.float32}
    weight = model.encoder.get_input_embeddings().weight
    assert torch.equal(weight, stored.get_input_embeddings().weight.float())


def test_padding_multiple_is_8_on_cuda_only():
    assert pad_multiple(torch.device("cpu")) == 1
    assert pad_multiple(torch.device("cuda")) == 8


# -- representations: cls (the paper), mean pooling, paired embeddings ---------------------

def tiny_bert(tokenizer, seed=0):
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128)
    config._attn_implementation = "eager"
    return BertModel(config)


def test_pack_separate_encodes_context_and_response_apart_and_cuts_the_oldest_context(tokenizer):
    packed = pack_separate(tokenizer, ["one two three four five six", "seven eight"], "the reply stays", max_length=7)
    assert decode(tokenizer, packed["input_ids"]) == "[CLS] four five six seven eight [SEP]"  # newest 5 tokens kept
    assert decode(tokenizer, packed["response_input_ids"]) == "[CLS] the reply stays [SEP]"
    assert packed["response_attention_mask"] == [1] * 5 and set(packed["token_type_ids"]) == {0}
    newest = pack_separate(tokenizer, ["one two three four five six", "seven eight"], "a b c d e f g", max_length=7,
                           truncate="newest")
    assert decode(tokenizer, newest["input_ids"]) == "[CLS] one two three four five [SEP]"
    assert decode(tokenizer, newest["response_input_ids"]) == "[CLS] a b c d e [SEP]"  # a response loses its end
    assert pack_for("paired") is pack_separate and pack_for("cls") is pack is pack_for("mean")


def test_collate_pads_context_and_response_inputs_each_to_their_own_longest(tokenizer):
    items = [pack_separate(tokenizer, ["hi"], "a much longer reply than the context"),
             pack_separate(tokenizer, ["hello there my dear old friend"], "ok")]
    batch = collate(items, tokenizer.pad_token_id)
    assert batch["input_ids"].shape[1] == len(items[1]["input_ids"]) == 8
    assert batch["response_input_ids"].shape[1] == len(items[0]["response_input_ids"]) == 9
    assert batch["response_attention_mask"].sum().item() == 9 + 3 and batch["response_token_type_ids"].shape == (2, 9)


def test_mean_pool_ignores_padding_and_pair_features_are_sentence_bert_features_with_cosine():
    hidden = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]]])
    assert mean_pool(hidden, torch.tensor([[1, 1, 0]])).tolist() == [[2.0, 3.0]]
    u, v = torch.tensor([[3.0, 4.0]]), torch.tensor([[0.0, 2.0]])  # unit: (.6, .8), (0, 1)
    features = pair_features(u, v)
    expected = [0.6, 0.8, 0.0, 1.0, 0.6, 0.2, 0.0, 0.8, 0.8]  # u, v, |u − v|, u∘v, cos
    assert features.shape == (1, 9) and features[0].tolist() == pytest.approx(expected)


def test_each_representation_reads_what_it_says(tokenizer):
    bert = tiny_bert(tokenizer)
    cross = collate([pack(tokenizer, ["how are you"], "fine"), pack(tokenizer, ["hi there"], "hello again you")],
                    tokenizer.pad_token_id)
    separate = collate([pack_separate(tokenizer, ["how are you"], "fine"),
                        pack_separate(tokenizer, ["hi there"], "hello again you")], tokenizer.pad_token_id)
    bert.eval()
    with torch.no_grad():
        out = bert(**cross)
        ctx = bert(**{k: separate[k] for k in ("input_ids", "attention_mask", "token_type_ids")}).last_hidden_state
        rsp = bert(input_ids=separate["response_input_ids"], attention_mask=separate["response_attention_mask"],
                   token_type_ids=separate["response_token_type_ids"]).last_hidden_state
        expected = {"cls": out.pooler_output, "mean": mean_pool(out.last_hidden_state, cross["attention_mask"]),
                    "paired": pair_features(mean_pool(ctx, separate["attention_mask"]),
                                            mean_pool(rsp, separate["response_attention_mask"]))}
        for representation, features in expected.items():
            model = QuantiDCEModel(bert, representation).eval()
            assert model.head[0].in_features == (4 * 32 + 1 if representation == "paired" else 32)
            batch = separate if representation == "paired" else cross
            want = torch.sigmoid(model.head(features)).squeeze(-1)
            assert model(**batch).score.tolist() == pytest.approx(want.tolist(), abs=1e-6), representation
    with pytest.raises(ValueError, match="pack_separate"):
        QuantiDCEModel(bert, "paired")(**cross)
    with pytest.raises(ValueError, match="representation must be one of cls, mean, paired, windows"):
        QuantiDCEModel(bert, "pooler")


def test_paired_model_gives_distillation_one_tensor_per_layer_and_scores_in_input_order(tokenizer, tmp_path):
    model = QuantiDCEModel(tiny_bert(tokenizer), "paired").eval()
    batch = collate([pack_separate(tokenizer, ["how are you"], "fine thanks")], tokenizer.pad_token_id)
    out = model(**batch, output_hidden_states=True, output_attentions=True)
    assert len(out.hidden_states) == 3 and out.hidden_states[0].shape == (1, 5 + 4, 32)  # context + response tokens
    assert len(out.attentions) == 2 and out.attentions[0].shape == (1, 2, 5 * 5 + 4 * 4)
    pairs = [(["a much longer context with many words in it"], "one"), (["short"], "a somewhat longer reply"), (["x"], "y")]
    batched = score_pairs(model, tokenizer, pairs, batch_size=2, device="cpu")
    single = [score_pairs(model, tokenizer, [p], batch_size=1, device="cpu")[0] for p in pairs]
    assert batched == pytest.approx(single, abs=1e-6)
    model.save(tmp_path / "m", tokenizer=tokenizer)
    loaded = QuantiDCEModel.load(tmp_path / "m")
    assert loaded.representation == "paired"  # metric.json carries it, so scoring packs the pair apart again
    assert score_pairs(loaded, tokenizer, pairs, device="cpu") == pytest.approx(batched, abs=1e-6)


def test_a_frozen_encoder_trains_the_head_only_and_stays_in_eval_mode(tokenizer):
    model = QuantiDCEModel(tiny_bert(tokenizer), "mean", freeze_encoder=True).train()
    assert not model.encoder.training and model.head.training
    assert {n.split(".")[0] for n, p in model.named_parameters() if p.requires_grad} == {"head"}
