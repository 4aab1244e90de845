"""The QuantiDCE scorer on a tiny random BERT (built from a config, with the packaged MiniLM's real
tokenizer): packing and truncation, head sizes, and batched scoring in input order."""
import pytest
import torch
from transformers import BertConfig, BertModel

from ml.data.packing import collate, pack, pad_multiple
from ml.models import QuantiDCEModel, load_tokenizer
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
