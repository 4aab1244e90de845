"""Batched inference for turn-level learned metrics.

Inputs are packed once, sorted by length so each batch pads little (dynamic padding to the batch's
longest input, a multiple of 8 on CUDA; a paired-representation model gets context and response packed
apart), scored under ``torch.inference_mode()`` (bf16 autocast on CUDA), and returned in the
order given."""
from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import PreTrainedTokenizerBase

from ml.data.packing import collate, pack_for, packed_length, pad_multiple
from ml.devices import pick_device


def score_pairs(model: torch.nn.Module, tokenizer: PreTrainedTokenizerBase,
                pairs: Sequence[tuple[Sequence[str], str]], *, batch_size: int = 64, max_length: int = 128,
                truncate: str = "oldest", device: str | None = None) -> list[float]:
    """Scores of (context turns, response) pairs, in input order."""
    target = pick_device(device)
    multiple = pad_multiple(target)
    model = model.to(target).eval()
    packer = pack_for(getattr(model, "representation", "cls"))
    packed = [packer(tokenizer, context, response, max_length=max_length, truncate=truncate) for context, response in pairs]
    order = sorted(range(len(packed)), key=lambda i: packed_length(packed[i]))
    scores = [0.0] * len(packed)
    with torch.inference_mode(), torch.autocast(device_type=target.type, dtype=torch.bfloat16,
                                                enabled=target.type == "cuda"):
        for start in range(0, len(order), batch_size):
            chosen = order[start:start + batch_size]
            inputs = collate([packed[i] for i in chosen], tokenizer.pad_token_id, multiple)
            batch = {k: v.to(target) for k, v in inputs.items()}
            values = model(**batch).score.float().cpu().tolist()
            for i, value in zip(chosen, values, strict=True):
                scores[i] = value
    return scores
