"""Human-score data for fine-tuning a turn-level metric: (context turns, response, mean human score).

GRADE's human-judgment files (Huang et al. EMNLP 2020) are a JSON list of ``{"ID", "Context":
"turn|||turn", "Response", "HumanScores": "[3, 5, ...]"}`` (a string holding a JSON list, 1-5); the
score of a pair is the mean over its annotators. ``split`` makes a seeded train/validation split
(QuantiDCE fine-tunes on 90 %, selects on 10 %)."""
from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import PreTrainedTokenizerBase

from ml.data.packing import collate, pack_for


@dataclass(frozen=True)
class ScoredPair:
    context: list[str]
    response: str
    score: float
    id: str = ""


def read_grade(path: str | Path) -> list[ScoredPair]:
    name = Path(path).name
    try:
        records = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{name}: not JSON (line {error.lineno}: {error.msg})") from None
    pairs = []
    for index, record in enumerate(records):
        try:
            scores = record["HumanScores"]
            scores = json.loads(scores) if isinstance(scores, str) else scores
            values = [float(s) for s in scores if s is not None]
            context = [t for t in record["Context"].split("|||") if t.strip()]
            response = record["Response"]
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"{name} record {index} (ID {record.get('ID', '?') if isinstance(record, dict) else '?'}): "
                             f"{type(error).__name__}: {error}") from None
        if not values:
            raise ValueError(f"{name} record {index}: HumanScores is empty")
        pairs.append(ScoredPair(context, response, sum(values) / len(values), str(record.get("ID", index))))
    return pairs


def split(pairs: Sequence[ScoredPair], *, validation: float = 0.1, seed: int = 71) -> tuple[list, list]:
    """Seeded shuffle, then the last ``validation`` share (at least one pair) is the validation set."""
    order = list(range(len(pairs)))
    random.Random(seed).shuffle(order)
    cut = len(order) - max(1, round(validation * len(order)))
    return [pairs[i] for i in order[:cut]], [pairs[i] for i in order[cut:]]


class ScoredDataset(torch.utils.data.Dataset):
    def __init__(self, pairs: Sequence[ScoredPair], tokenizer: PreTrainedTokenizerBase, *, max_length: int = 128,
                 truncate: str = "oldest", representation: str = "cls"):
        packer = pack_for(representation)
        self.items = [(packer(tokenizer, p.context, p.response, max_length=max_length, truncate=truncate), p.score)
                      for p in pairs]

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int):
        return self.items[index]


@dataclass
class ScoredCollator:
    pad_id: int
    multiple_of: int = 1

    def __call__(self, items) -> dict[str, torch.Tensor]:
        batch = collate([packed for packed, _ in items], self.pad_id, self.multiple_of)
        batch["target"] = torch.tensor([score for _, score in items], dtype=torch.float32)
        return batch
