"""Mean-pooled embeddings of single-text encoder inputs, through the on-disk cache (``ml.embedding_cache``).

    e(x) = Σ_t m_t · H_t / Σ_t m_t     (H the last hidden states, m the attention mask)

Each distinct input is embedded once per call; with a cache, once per machine: the vectors found are
read, the others computed (length-sorted batches, ``ml.inference.infer_sorted``) and added. The cache
key is the encoder's fingerprint (``encoder_fingerprint``: a hash of the weights the last hidden state
depends on, and of the precision it is computed in: float32 on the CPU, bf16 on CUDA), so a
fine-tuned encoder, or a GPU's bf16 vectors, never stand in for another's."""
from __future__ import annotations

import hashlib
import weakref
from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np
import torch

from ml.embedding_cache import EmbeddingStore, default_store, ids_key
from ml.inference import infer_sorted

_FINGERPRINTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
DEFAULT = object()  # the configured default store


def mean_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of the hidden states over the real (unmasked) tokens: (B, T, H), (B, T) -> (B, H)."""
    weights = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)


def encoder_fingerprint(encoder: torch.nn.Module) -> str:
    """A hash of the encoder's architecture and of every weight its last hidden state depends on (the
    pooler is left out: a masked-LM's base model has none and reads the same vectors). Recomputed only
    when a weight changed (tensor version counters)."""
    tensors = [(name, value) for name, value in encoder.state_dict(keep_vars=True).items()
               if not name.startswith("pooler.")]
    versions = tuple(value._version for _, value in tensors)
    memo = _FINGERPRINTS.get(encoder)
    if memo and memo[0] == versions:
        return memo[1]
    digest = hashlib.blake2b(digest_size=16)
    config = getattr(encoder, "config", None)
    for attribute in ("model_type", "hidden_act", "layer_norm_eps", "position_embedding_type"):
        digest.update(f"{attribute}={getattr(config, attribute, None)};".encode())
    for name, value in sorted(tensors, key=lambda item: item[0]):
        tensor = value.detach().to("cpu")
        digest.update(f"{name}:{tuple(tensor.shape)}:{tensor.dtype};".encode())
        digest.update((tensor.float() if tensor.is_floating_point() else tensor).contiguous().numpy().tobytes())
    fingerprint = digest.hexdigest()
    _FINGERPRINTS[encoder] = (versions, fingerprint)
    return fingerprint


def embed(encoder: torch.nn.Module, inputs: Sequence[dict[str, list[int]]], pad_id: int, device: torch.device, *,
          batch_size: int = 128, store: EmbeddingStore | None | object = DEFAULT, progress: str | None = None,
          on_progress: Callable[[int, int], None] | None = None) -> list[torch.Tensor]:
    """The mean-pooled last hidden state (H,) float32 on the CPU of each input (``[CLS] text [SEP]`` ids),
    in input order. ``store``: an ``EmbeddingStore``, None (no disk cache) or the configured default.
    ``on_progress(done, total)``: called as distinct inputs are read or computed."""
    store = default_store() if store is DEFAULT else store
    distinct = {tuple(item["input_ids"]): item for item in inputs}
    vectors: dict[tuple[int, ...], torch.Tensor] = {}
    key = ""
    if store is not None and distinct:
        key = f"{encoder_fingerprint(encoder)}:{'bf16' if device.type == 'cuda' else 'fp32'}"
        keys = {ids: ids_key(ids) for ids in distinct}
        found = store.get(key, keys.values())
        for ids, k in keys.items():
            if k in found:
                vectors[ids] = torch.from_numpy(np.frombuffer(found[k], dtype=np.float32).copy())
    if on_progress:
        on_progress(len(vectors), len(distinct))
    missing = [distinct[ids] for ids in distinct if ids not in vectors]
    if missing:
        encoder.to(device).eval()
        done = [len(vectors)]

        def forward(batch):
            extra = {"token_type_ids": batch["token_type_ids"]} if "token_type_ids" in batch else {}
            hidden = encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], **extra).last_hidden_state
            rows = mean_pool(hidden.float(), batch["attention_mask"]).cpu()
            done[0] += len(rows)
            if on_progress:
                on_progress(done[0], len(distinct))
            return rows

        rows = infer_sorted(missing, pad_id, device, forward, batch_size=batch_size, progress=progress)
        computed = {tuple(item["input_ids"]): row for item, row in zip(missing, rows, strict=True)}
        vectors.update(computed)
        if store is not None:
            store.put(key, ((ids_key(ids), row.numpy().astype(np.float32).tobytes()) for ids, row in computed.items()))
    return [vectors[tuple(item["input_ids"])] for item in inputs]


@lru_cache(maxsize=4)
def _loaded(path: str):
    from ml.models.encoder import load_encoder, load_tokenizer

    return load_encoder(path).eval(), load_tokenizer(path)


def embed_texts(texts: Sequence[str], *, encoder: str | None = None, max_length: int = 256, keep_end: bool = False,
                normalize: bool = True, device: str | torch.device | None = None, batch_size: int = 64,
                store: EmbeddingStore | None | object = DEFAULT, progress: str | None = None,
                on_progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """(len(texts), H) float32: each text as ``[CLS] text [SEP]`` cut to ``max_length`` tokens (keeping its
    end with ``keep_end``, else its beginning), mean-pooled, unit length with ``normalize`` — what a
    sentence-transformers checkpoint such as the packaged MiniLM computes (``max_length`` 256 is its own).
    ``encoder``: a local path or Hugging Face name (default: the packaged MiniLM). ``on_progress(done, total)``:
    as ``embed``'s, over the distinct inputs. On the CPU, torch runs on ``ml.devices.cpu_threads()`` threads."""
    from ml.data.packing import pack_single
    from ml.devices import pick_device, use_cpu_threads
    from ml.models.encoder import default_encoder_path

    model, tokenizer = _loaded(encoder or default_encoder_path())
    target = device if isinstance(device, torch.device) else pick_device(device)
    packed = [pack_single(tokenizer, text, max_length=max_length, keep_end=keep_end) for text in texts]
    if not packed:
        return np.zeros((0, model.config.hidden_size), np.float32)
    if target.type == "cpu":
        use_cpu_threads()
    rows = torch.stack(embed(model, packed, tokenizer.pad_token_id, target, batch_size=batch_size, store=store,
                             progress=progress, on_progress=on_progress))
    if normalize:
        rows = torch.nn.functional.normalize(rows, dim=-1)
    return rows.numpy()
