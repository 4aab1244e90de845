"""Batched inference for turn-level learned metrics.

Inputs are packed once, sorted by length so each batch pads little (dynamic padding to the batch's
longest input, a multiple of 8 on CUDA), scored under ``torch.inference_mode()`` (bf16 autocast on
CUDA), and returned in the order given. A model that embeds context and response apart (``paired``,
``windows``: QuantiDCE; ``paired``: MDD-Eval) has each distinct text embedded once, through the on-disk cache
(``ml.data.frozen_features``): at inference the encoder is fixed, and a study's context recurs with every
system's response."""
from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import PreTrainedTokenizerBase

from ml.data.frozen_features import pair_features_of
from ml.data.packing import pack_for
from ml.devices import pick_device
from ml.inference import infer_sorted
from ml.models.quantidce import SEPARATE, QuantiDCEModel


def score_pairs(model: torch.nn.Module, tokenizer: PreTrainedTokenizerBase,
                pairs: Sequence[tuple[Sequence[str], str]], *, batch_size: int = 64, max_length: int = 128,
                truncate: str = "oldest", device: str | None = None) -> list[float]:
    """Scores of (context turns, response) pairs, in input order."""
    target = pick_device(device)
    model = model.to(target).eval()
    packer = pack_for(getattr(model, "representation", "cls"))
    packed = [packer(tokenizer, context, response, max_length=max_length, truncate=truncate) for context, response in pairs]
    if isinstance(model, QuantiDCEModel) and model.representation in SEPARATE and packed:
        features = pair_features_of(model, [packed], tokenizer.pad_token_id, target, batch_size=batch_size)[0]
        with torch.inference_mode():
            return [value for start in range(0, len(features), 1024)
                    for value in model.score_features(features[start:start + 1024].to(target)).float().cpu().tolist()]
    if getattr(model, "representation", "") == "paired" and hasattr(model, "mlm_head") and packed:  # MDD-Eval
        from ml.data.frozen_features import paired_features

        features = paired_features(model.encoder, packed, tokenizer.pad_token_id, target, batch_size=batch_size)
        with torch.inference_mode():
            return [value for start in range(0, len(features), 1024)
                    for value in model(features=features[start:start + 1024].to(target)).score.float().cpu().tolist()]
    return score_packed(model, packed, tokenizer.pad_token_id, batch_size=batch_size, device=target)


def score_packed(model: torch.nn.Module, packed: Sequence[dict[str, list[int]]], pad_id: int, *, batch_size: int = 64,
                 device: torch.device) -> list[float]:
    """Scores of packed inputs, each batch through the whole model, in input order."""
    return infer_sorted(packed, pad_id, device, lambda batch: model(**batch).score.float().cpu().tolist(),
                        batch_size=batch_size)
