"""Multi-level ranking data: DailyDialog++ contexts with responses at L quality levels, K each.

QuantiDCE (Ye et al. ACL 2021) numbers the levels by rising quality — 1 random, 2 adversarial,
3 relevant — with K = 5 responses per level. A record of the DailyDialog++ JSON-lines files
(Sai et al. TACL 2020) is ``{"id", "context": [turns], "positive_responses": [5],
"adversarial_negative_responses": [5], "random_negative_responses": [5]}``. Each context is packed
once (L·K encoder inputs); a batch of C contexts is one encoder batch of C·L·K inputs whose scores
reshape to (C, L, K), the shape the MLR losses take."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import PreTrainedTokenizerBase

from ml.data.jsonl import json_lines
from ml.data.packing import collate, pack_for

DDPP_LEVELS = ("random_negative_responses", "adversarial_negative_responses", "positive_responses")


@dataclass(frozen=True)
class LevelledContext:
    context: list[str]
    levels: list[list[str]]  # levels[l] = the K responses of level l+1 (rising quality)
    id: str = ""


def read_ddpp(path: str | Path, *, per_level: int = 5, limit: int | None = None,
              fields: Sequence[str] = DDPP_LEVELS) -> list[LevelledContext]:
    """Contexts that have ``per_level`` responses at every level (others are skipped), file order."""
    out = []
    for number, record in json_lines(path):
        missing = [f for f in ("context", *fields) if f not in record]
        if missing:
            raise ValueError(f"{Path(path).name} line {number}: missing {', '.join(missing)}")
        levels = [[r for r in record[f] if r and r.strip()][:per_level] for f in fields]
        if all(len(level) == per_level for level in levels):
            out.append(LevelledContext(list(record["context"]), levels, str(record.get("id", number))))
        if limit and len(out) >= limit:
            break
    return out


def level_accuracy(scores: torch.Tensor) -> float:
    """(C, L, K) scores, levels by rising quality -> the share of response pairs of one context from different
    levels ranked right (ties half): DailyDialog++ ranking accuracy, the validation figure a model is chosen on
    (QuantiDCE's MLR, MDD-Eval's ``select_by="ranking"``)."""
    c, levels, k = scores.shape
    flat = scores.reshape(c, levels * k)
    level = torch.arange(levels, device=scores.device).repeat_interleave(k)
    higher = level[:, None] > level[None, :]
    gap = (flat[:, :, None] - flat[:, None, :])[:, higher]
    return float(((gap > 0).float() + 0.5 * (gap == 0).float()).mean())


class LevelledDataset(torch.utils.data.Dataset):
    """Packed once: item i is the L·K packed inputs of context i, levels in order."""

    def __init__(self, contexts: Sequence[LevelledContext], tokenizer: PreTrainedTokenizerBase, *,
                 max_length: int = 128, truncate: str = "oldest", representation: str = "cls"):
        self.shape = (len(contexts[0].levels), len(contexts[0].levels[0])) if contexts else (0, 0)
        packer = pack_for(representation)
        self.items = [[packer(tokenizer, c.context, r, max_length=max_length, truncate=truncate)
                       for level in c.levels for r in level] for c in contexts]

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> list[dict[str, list[int]]] | torch.Tensor:
        return self.items[index]

    def cache_features(self, features: Sequence[torch.Tensor]) -> None:
        """Replace each context's packed inputs by its (L·K, …) features from a frozen encoder
        (``ml.data.frozen_features.pair_features_of``)."""
        if len(features) != len(self.items):
            raise ValueError(f"{len(features)} feature blocks for {len(self.items)} contexts")
        self.items = list(features)


@dataclass
class LevelledCollator:
    """C contexts -> one dynamically padded batch of C·L·K inputs plus ``shape`` = (C, L, K)."""

    pad_id: int
    shape: tuple[int, int]
    multiple_of: int = 1

    def __call__(self, contexts: Sequence[list[dict[str, list[int]]] | torch.Tensor]) -> dict[str, torch.Tensor | tuple]:
        if isinstance(contexts[0], torch.Tensor):  # features computed beforehand by a frozen encoder
            batch = {"features": torch.cat(list(contexts))}
        else:
            batch = collate([item for context in contexts for item in context], self.pad_id, self.multiple_of)
        batch["shape"] = (len(contexts), *self.shape)
        return batch
