"""MDD-Eval's training data: (context, response, class distribution) pairs, packed once.

- Teacher: DailyDialog++ (Sai et al. TACL 2020) read as labelled pairs — each context's random,
  adversarial and relevant responses get the one-hot classes 0, 1, 2 (``read_ddpp_pairs``), split by
  context (``split_by_context``: no context in both parts).
- Student: the augmented pairs with the teacher's soft labels (``ml.data.pseudo_labels``); each item
  also carries a noised copy of its response (x̂ for the consistency term: word drop or swap, or a
  back-translation where the augmentation produced one), drawn once with a seeded generator.

The collator pads dynamically and, for the student, adds an MLM view of context ∘ response (BERT's
80/10/10 rule, ``ml.data.mlm_masking``) drawn from torch's RNG, which the trainer's checkpoints
restore, so a resumed run masks as an uninterrupted one would."""
from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import PreTrainedTokenizerBase

from ml.data.jsonl import json_lines
from ml.data.levels import read_ddpp
from ml.data.mlm_masking import mask_tokens
from ml.data.packing import collate, pack_for

NOISED = "noised_"  # key prefix of the noised pair's input


@dataclass(frozen=True)
class LabelledPair:
    context: list[str]
    response: str
    target: tuple[float, float, float]  # P(random), P(adversarial), P(relevant)
    group: str = ""  # the context it came from (splits keep a context's pairs together)
    noised: str = ""  # a given noised response (e.g. a back-translation); "" = word drop/swap at packing


def one_hot(label: int) -> tuple[float, float, float]:
    return tuple(1.0 if i == label else 0.0 for i in range(3))


def read_ddpp_pairs(path: str | Path, *, limit: int | None = None, per_level: int = 5) -> list[LabelledPair]:
    """DailyDialog++ as labelled pairs: levels random, adversarial, relevant -> classes 0, 1, 2."""
    return [LabelledPair(c.context, response, one_hot(label), c.id or str(index))
            for index, c in enumerate(read_ddpp(path, per_level=per_level, limit=limit))
            for label, level in enumerate(c.levels) for response in level]


def split_by_context(pairs: Sequence[LabelledPair], *, validation: float = 0.1, seed: int = 71) -> tuple[list, list]:
    """A seeded split of the contexts (at least one held out); every pair follows its context."""
    groups = sorted({p.group for p in pairs})
    random.Random(seed).shuffle(groups)
    held = set(groups[len(groups) - max(1, round(validation * len(groups))):])
    return [p for p in pairs if p.group not in held], [p for p in pairs if p.group in held]


def word_noise(text: str, rng: random.Random, *, drop: float = 0.1) -> str:
    """x̂ for the consistency term: drop each word with probability ``drop`` (at least one word kept), or
    — half of the time — swap two neighbouring words."""
    words = text.split()
    if len(words) < 2:
        return text
    if rng.random() < 0.5:
        kept = [w for w in words if rng.random() >= drop] or [rng.choice(words)]
        if kept != words:
            return " ".join(kept)
    i = rng.randrange(len(words) - 1)
    words[i], words[i + 1] = words[i + 1], words[i]
    return " ".join(words)


class LabelledDataset(torch.utils.data.Dataset):
    """Item i: (packed pair, target distribution[, packed noised pair])."""

    def __init__(self, pairs: Sequence[LabelledPair], tokenizer: PreTrainedTokenizerBase, *, max_length: int = 128,
                 truncate: str = "oldest", noised: bool = False, seed: int = 71, representation: str = "cls"):
        rng = random.Random(seed)
        pack = pack_for(representation)
        self.items = []
        for p in pairs:
            packed = pack(tokenizer, p.context, p.response, max_length=max_length, truncate=truncate)
            item = (packed, list(p.target))
            if noised:
                other = p.noised or word_noise(p.response, rng)
                item += (pack(tokenizer, p.context, other, max_length=max_length, truncate=truncate),)
            self.items.append(item)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int):
        return self.items[index]

    def cache_features(self, compute) -> None:
        """Replace the packed pairs (and noised copies) by a frozen encoder's features, ``compute(packed) ->
        (N, D)`` (``ml.data.frozen_features.paired_features``), so the epochs train the head only."""
        if not self.items:
            return
        columns = [compute([item[i] for item in self.items]) for i in range(len(self.items[0])) if i != 1]
        self.items = [(columns[0][n], item[1], *((columns[1][n],) if len(columns) > 1 else ()))
                      for n, item in enumerate(self.items)]


@dataclass
class LabelledCollator:
    """Pads the pairs (and their noised copies); ``mlm`` adds ``mlm_input_ids``/``mlm_labels``."""

    pad_id: int
    multiple_of: int = 1
    mlm: bool = False
    mask_id: int = 0
    vocab_size: int = 0
    special_ids: tuple[int, ...] = ()
    mlm_probability: float = 0.15

    def __call__(self, items) -> dict[str, torch.Tensor]:
        if isinstance(items[0][0], torch.Tensor):  # features computed beforehand by a frozen encoder
            batch = {"features": torch.stack([item[0] for item in items]),
                     "target": torch.tensor([item[1] for item in items], dtype=torch.float32)}
            if len(items[0]) > 2:
                batch[NOISED + "features"] = torch.stack([item[2] for item in items])
            return batch
        batch = collate([item[0] for item in items], self.pad_id, self.multiple_of)
        batch["target"] = torch.tensor([item[1] for item in items], dtype=torch.float32)
        if len(items[0]) > 2:
            noised = collate([item[2] for item in items], self.pad_id, self.multiple_of)
            batch.update({NOISED + key: value for key, value in noised.items()})
        if self.mlm:  # on the cross-encoded pair (context ∘ response); a paired model: the context input
            ids = batch["input_ids"]
            maskable = batch["attention_mask"].bool() & ~torch.isin(ids, torch.tensor(self.special_ids or (-1,)))
            batch["mlm_input_ids"], batch["mlm_labels"] = mask_tokens(
                ids, maskable, mask_id=self.mask_id, vocab_size=self.vocab_size, probability=self.mlm_probability)
        return batch


def collator_for(tokenizer: PreTrainedTokenizerBase, multiple_of: int = 1, *, mlm: bool = False,
                 mlm_probability: float = 0.15) -> LabelledCollator:
    return LabelledCollator(tokenizer.pad_token_id, multiple_of, mlm=mlm, mask_id=tokenizer.mask_token_id or 0,
                            vocab_size=len(tokenizer), special_ids=tuple(tokenizer.all_special_ids),
                            mlm_probability=mlm_probability)


def read_jsonl(path: str | Path) -> list[dict]:
    return [record for _, record in json_lines(path)]
