"""The on-disk embedding cache: a frozen encoder's vector of a text is computed once per machine and
read back by every later run, seed and metric; a different encoder, a changed weight or a differently cut
text never reads another's vector; the text-level path equals sentence-transformers on the packaged MiniLM."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from ml.data.packing import pack_single
from ml.embedding import embed, embed_texts, encoder_fingerprint, mean_pool
from ml.embedding_cache import EmbeddingStore
from ml.models import load_tokenizer
from tests.ml.test_models_scoring import tiny_bert

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer()


def counting(encoder):
    calls = []
    encoder.register_forward_hook(lambda module, args, kwargs, out: calls.append(kwargs["input_ids"].shape[0]),
                                  with_kwargs=True)
    return calls


def packed(tokenizer, texts, max_length=32, keep_end=False):
    return [pack_single(tokenizer, t, max_length=max_length, keep_end=keep_end) for t in texts]


def test_a_second_run_reads_every_vector_back_and_they_equal_the_encoders(tokenizer, tmp_path):
    store = EmbeddingStore(tmp_path)
    encoder = tiny_bert(tokenizer).eval()
    calls = counting(encoder)
    inputs = packed(tokenizer, ["hello there", "how are you ?", "hello there", "fine, thanks"])
    first = embed(encoder, inputs, tokenizer.pad_token_id, CPU, store=store)
    assert sum(calls) == 3 and store.count() == 3  # each distinct text once
    again = embed(encoder, inputs, tokenizer.pad_token_id, CPU, store=store)
    assert sum(calls) == 3  # nothing computed
    with torch.no_grad():
        for item, vector in zip(inputs, again, strict=True):
            ids = torch.tensor([item["input_ids"]])
            direct = mean_pool(encoder(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state, ids > -1)[0]
            assert torch.allclose(vector, direct, atol=1e-6)
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    # a new text is computed alone; the others are read
    calls.clear()
    embed(encoder, packed(tokenizer, ["hello there", "something new"]), tokenizer.pad_token_id, CPU, store=store)
    assert sum(calls) == 1 and store.count() == 4


def test_another_encoder_a_changed_weight_or_another_cut_is_another_key(tokenizer, tmp_path):
    store = EmbeddingStore(tmp_path)
    one, two = tiny_bert(tokenizer, seed=0).eval(), tiny_bert(tokenizer, seed=1).eval()
    assert encoder_fingerprint(one) == encoder_fingerprint(tiny_bert(tokenizer, seed=0))  # the weights decide
    assert encoder_fingerprint(one) != encoder_fingerprint(two)
    text = ["a sentence that is long enough to be cut in two places"]
    a = embed(one, packed(tokenizer, text), tokenizer.pad_token_id, CPU, store=store)[0]
    b = embed(two, packed(tokenizer, text), tokenizer.pad_token_id, CPU, store=store)[0]
    assert not torch.allclose(a, b) and store.count() == 2
    before = encoder_fingerprint(one)
    with torch.no_grad():
        one.embeddings.word_embeddings.weight[5] += 1.0  # a training step changes a weight in place
    assert encoder_fingerprint(one) != before
    short = embed(one, packed(tokenizer, text, max_length=6), tokenizer.pad_token_id, CPU, store=store)[0]
    end = embed(one, packed(tokenizer, text, max_length=6, keep_end=True), tokenizer.pad_token_id, CPU, store=store)[0]
    assert not torch.allclose(short, end) and store.count() == 4


def test_the_packaged_minilm_equals_sentence_transformers_and_reads_back_in_another_process(tmp_path):
    from sentence_transformers import SentenceTransformer

    from ml.models.encoder import default_encoder_path

    texts = ["I love tea in the morning.", "Do you?", "The weather is bad " * 60]  # the last is cut at 256 tokens
    reference = SentenceTransformer(default_encoder_path(), device="cpu").encode(texts, normalize_embeddings=True)
    ours = embed_texts(texts, store=EmbeddingStore(tmp_path), device="cpu")
    assert np.abs(ours - reference).max() < 1e-5
    # a second process reads the vectors written by this one: its encoder never runs
    code = ("import sys, numpy as np\n"
            f"sys.path.insert(0, {str(Path.cwd())!r})\n"
            "from ml.embedding_cache import EmbeddingStore\n"
            "from ml import embedding\n"
            "from ml.models.encoder import default_encoder_path\n"
            "model, _ = embedding._loaded(default_encoder_path())\n"
            "model.register_forward_hook(lambda *a: sys.exit('the encoder ran'))\n"
            f"out = embedding.embed_texts({texts!r}, store=EmbeddingStore({str(tmp_path)!r}), device='cpu')\n"
            f"np.save({str(tmp_path / 'again.npy')!r}, out)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert np.array_equal(np.load(tmp_path / "again.npy"), ours)
