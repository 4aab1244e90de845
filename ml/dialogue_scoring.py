"""Batched inference for dialogue-level learned metrics (SelF-Eval).

Dialogues are packed once (``pack_dialogue``: speakers A/B, max_length tokens keeping the
beginning), sorted by length so each batch pads little, scored under ``torch.inference_mode()``
(bf16 autocast on CUDA), and returned in the order given with the number of dialogues that were cut."""
from __future__ import annotations

from collections.abc import Sequence

import torch
from transformers import PreTrainedTokenizerBase

from ml.data.packing import collate, pad_multiple
from ml.data.replacement import pack_dialogue
from ml.devices import pick_device


def score_dialogues(model: torch.nn.Module, tokenizer: PreTrainedTokenizerBase, dialogues: Sequence[Sequence[str]], *,
                    speakers: Sequence[Sequence[str] | None] | None = None, batch_size: int = 32,
                    max_length: int = 512, device: str | None = None) -> tuple[list[float], int]:
    """(scores in input order, how many dialogues were longer than ``max_length`` tokens and cut)."""
    target = pick_device(device)
    multiple = pad_multiple(target)
    model = model.to(target).eval()
    speakers = speakers or [None] * len(dialogues)
    packed, truncated = [], 0
    for turns, names in zip(dialogues, speakers, strict=True):
        ids, cut = pack_dialogue(tokenizer, list(turns), speakers=names, max_length=max_length)
        packed.append(ids)
        truncated += cut
    order = sorted(range(len(packed)), key=lambda i: len(packed[i]["input_ids"]))
    scores = [0.0] * len(packed)
    with torch.inference_mode(), torch.autocast(device_type=target.type, dtype=torch.bfloat16,
                                                enabled=target.type == "cuda"):
        for start in range(0, len(order), batch_size):
            chosen = order[start:start + batch_size]
            batch = {k: v.to(target) for k, v in collate([packed[i] for i in chosen], tokenizer.pad_token_id,
                                                         multiple).items()}
            for i, value in zip(chosen, model(**batch).score.float().cpu().tolist(), strict=True):
                scores[i] = value
    return scores, truncated
