"""Batched inference for dialogue-level learned metrics (SelF-Eval).

Dialogues are packed once (``pack_dialogue``: speakers A/B, max_length tokens keeping the
beginning), sorted by length so each batch pads little, scored under ``torch.inference_mode()``
(bf16 autocast on CUDA), and returned in the order given with the number of dialogues that were cut."""
from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import PreTrainedTokenizerBase

from ml.data.replacement import pack_dialogue
from ml.devices import pick_device
from ml.inference import infer_sorted


def score_dialogues(model: torch.nn.Module, tokenizer: PreTrainedTokenizerBase, dialogues: Sequence[Sequence[str]], *,
                    speakers: Sequence[Sequence[str] | None] | None = None, batch_size: int = 32,
                    max_length: int = 512, device: str | None = None) -> tuple[list[float], int]:
    """(scores in input order, how many dialogues were longer than ``max_length`` tokens and cut)."""
    target = pick_device(device)
    model = model.to(target).eval()
    speakers = speakers or [None] * len(dialogues)
    packed, truncated = [], 0
    for turns, names in zip(dialogues, speakers, strict=True):
        ids, cut = pack_dialogue(tokenizer, list(turns), speakers=names, max_length=max_length)
        packed.append(ids)
        truncated += cut
    scores = infer_sorted(packed, tokenizer.pad_token_id, target,
                          lambda batch: model(**batch).score.float().cpu().tolist(), batch_size=batch_size)
    return scores, truncated
