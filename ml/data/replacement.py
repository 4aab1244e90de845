"""SelF-Eval's training data: turn replacement (Ma et al. COLING 2022, Section 3.2).

A human-human dialogue of n turns is a positive sample (score 1). Replacing i of its turns
(i = 0..n) with turns drawn from *other* dialogues of the training set gives a sample of level i
with the reference score

    score(i) = (n − i) / n.

The paper enumerates all C(n, i) sets of replaced positions per level (K_i = n!/(i!(n − i)!));
here each level keeps at most ``per_level`` distinct position sets, drawn with a seeded generator
(level 0 has exactly one sample, the dialogue itself). Dialogues longer than ``max_turns`` keep
their first ``max_turns`` turns (0 = no cap), so the encoder passes per dialogue stay bounded at
1 + per_level·n.

A dialogue is packed as ``[CLS] A: t1 [SEP] B: t2 [SEP] … [SEP]`` (RoBERTa: ``<s> A: t1 </s></s>
B: t2 … </s>``; the tokenizer's own pair tokens separate the turns), speakers alternating A/B, cut to
``max_length`` tokens keeping the beginning (``pack_dialogue`` reports whether it cut).

Replacement levels for evaluation (Table 2 of the paper): Rep-0 the dialogue, Rep-1 one turn
replaced, Rep-2 more than one (2..n, drawn uniformly), seeded (``rep_levels``)."""
from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
from transformers import PreTrainedTokenizerBase

from ml.data.jsonl import json_lines
from ml.data.packing import collate, pair_template

SPEAKERS = ("A", "B")


@dataclass(frozen=True)
class Dialogue:
    turns: list[str]
    id: str = ""


@dataclass(frozen=True)
class ReplacedSample:
    turns: list[str]
    replaced: int  # i: how many turns came from other dialogues
    positions: tuple[int, ...] = ()

    def score(self, n: int) -> float:
        return (n - self.replaced) / n


@dataclass
class ReplacementGroup:
    """All samples of one dialogue: ``levels[i]`` = the samples with i turns replaced (i = 0..n)."""

    dialogue: Dialogue
    levels: list[list[ReplacedSample]] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.dialogue.turns)

    def samples(self) -> list[ReplacedSample]:
        return [s for level in self.levels for s in level]


def read_dialogues(path: str | Path, *, responses_per_context: int = 1, limit: int | None = None,
                   min_turns: int = 2) -> list[Dialogue]:
    """Dialogues from a JSON-lines file: DailyDialog++ (dev, test or ``positives.json``: each context
    followed by one of its ``positive_responses``; the first ``responses_per_context`` of them give that
    many dialogues per context), or plain dialogues ``{"id", "turns": [text or {speaker, text}...]}`` (a
    corpus exported from Concord). Dialogues shorter than ``min_turns`` are skipped."""
    name = Path(path).name
    out: list[Dialogue] = []
    for number, record in json_lines(path):
        if isinstance(record, dict) and isinstance(record.get("turns"), list):  # a plain dialogue line
            turns = [t.get("text", "") if isinstance(t, dict) else t for t in record["turns"]]
            turns = [t for t in turns if isinstance(t, str) and t.strip()]
            if len(turns) >= min_turns:
                out.append(Dialogue(turns, str(record.get("id", number))))
            if limit and len(out) >= limit:
                return out[:limit]
            continue
        if not isinstance(record, dict) or "context" not in record or "positive_responses" not in record:
            raise ValueError(f"{name} line {number}: needs 'turns', or 'context' and 'positive_responses'")
        context = [t for t in record["context"] if isinstance(t, str) and t.strip()]
        key = record.get("id", record.get("dialog_id", number))
        positives = [r for r in record["positive_responses"] if isinstance(r, str) and r.strip()]
        for k, response in enumerate(positives[:responses_per_context]):
            turns = [*context, response]
            if len(turns) >= min_turns:
                out.append(Dialogue(turns, f"{key}-{k}"))
        if limit and len(out) >= limit:
            return out[:limit]
    return out


def _replacement_turn(rng: random.Random, dialogues: Sequence[Dialogue], own: int) -> str:
    """A turn of a dialogue other than ``own`` (the source the paper uses: the rest of the training set)."""
    other = rng.randrange(len(dialogues) - 1)
    other += other >= own
    return rng.choice(dialogues[other].turns)


def _position_sets(rng: random.Random, n: int, i: int, cap: int) -> list[tuple[int, ...]]:
    """Up to ``cap`` distinct i-subsets of range(n): all of them when there are few, else a seeded draw."""
    total = math.comb(n, i)
    if total <= cap:
        return list(itertools.combinations(range(n), i))
    chosen: set[tuple[int, ...]] = set()
    while len(chosen) < cap:
        chosen.add(tuple(sorted(rng.sample(range(n), i))))
    return sorted(chosen)


def _replace(rng: random.Random, dialogues: Sequence[Dialogue], index: int, positions: Sequence[int]) -> list[str]:
    turns = list(dialogues[index].turns)
    for position in positions:
        turns[position] = _replacement_turn(rng, dialogues, index)
    return turns


def build_samples(dialogues: Sequence[Dialogue], *, per_level: int = 3, max_turns: int = 0,
                  seed: int = 71) -> list[ReplacementGroup]:
    """One ReplacementGroup per dialogue, levels i = 0..n, at most ``per_level`` samples each.

    Seeded per dialogue (by ``seed`` and its index), so a dialogue's samples do not depend on the
    others' lengths or on the order they are built in; replacement turns come from the other dialogues."""
    if len(dialogues) < 2:
        raise ValueError("turn replacement needs at least two dialogues (replacement turns come from the others)")
    if per_level < 1:
        raise ValueError("per_level: must be at least 1")
    if max_turns:
        dialogues = [Dialogue(d.turns[:max_turns], d.id) for d in dialogues]
    groups = []
    for index, dialogue in enumerate(dialogues):
        rng = random.Random(f"{seed}:{index}")
        n = len(dialogue.turns)
        levels = [[ReplacedSample(list(dialogue.turns), 0)]]
        for i in range(1, n + 1):
            levels.append([ReplacedSample(_replace(rng, dialogues, index, positions), i, positions)
                           for positions in _position_sets(rng, n, i, per_level)])
        groups.append(ReplacementGroup(dialogue, levels))
    return groups


REP_LEVELS = ("Rep-0", "Rep-1", "Rep-2")


def rep_levels(dialogues: Sequence[Dialogue], *, seed: int = 71) -> list[list[ReplacedSample]]:
    """Per dialogue of at least 2 turns, three samples in the order Rep-0, Rep-1, Rep-2 (the paper's
    Table 2: the dialogue; one turn replaced; more than one turn — i drawn uniformly from 2..n)."""
    out = []
    for index, dialogue in enumerate(dialogues):
        n = len(dialogue.turns)
        if n < 2:
            continue
        rng = random.Random(f"rep:{seed}:{index}")
        one = (rng.randrange(n),)
        many = tuple(sorted(rng.sample(range(n), rng.randint(2, n))))
        out.append([ReplacedSample(list(dialogue.turns), 0),
                    ReplacedSample(_replace(rng, dialogues, index, one), 1, one),
                    ReplacedSample(_replace(rng, dialogues, index, many), len(many), many)])
    return out


# -- packing ----------------------------------------------------------------------------------------
def speaker_labels(speakers: Sequence[str] | None, count: int) -> list[str]:
    """A/B by order of first appearance of each speaker (A, B, A, … when no speakers are given), so a
    dialogue reads the same to the model whatever its corpus calls its participants."""
    if not speakers:
        return [SPEAKERS[k % 2] for k in range(count)]
    names: dict[str, str] = {}
    for speaker in speakers:
        if speaker not in names:
            names[speaker] = SPEAKERS[len(names) % 2] if len(names) < 2 else f"S{len(names) + 1}"
    return [names[s] for s in speakers]


def pack_dialogue(tokenizer: PreTrainedTokenizerBase, turns: Sequence[str], *, speakers: Sequence[str] | None = None,
                  max_length: int = 512) -> tuple[dict[str, list[int]], bool]:
    """``prefix "A: t1" middle "B: t2" middle … suffix`` with the tokenizer's pair tokens, cut to
    ``max_length`` keeping the beginning (the closing special tokens stay). Returns (packed, truncated)."""
    template = pair_template(tokenizer)
    labels = speaker_labels(speakers, len(turns))
    body: list[int] = []
    for k, (label, text) in enumerate(zip(labels, turns, strict=True)):
        if k:
            body += template.middle
        body += tokenizer.encode(f"{label}: {text}", add_special_tokens=False)
    room = max_length - len(template.prefix) - len(template.suffix)
    truncated = len(body) > room
    input_ids = [*template.prefix, *body[:room], *template.suffix]
    packed = {"input_ids": input_ids, "attention_mask": [1] * len(input_ids)}
    if "token_type_ids" in tokenizer.model_input_names:
        packed["token_type_ids"] = [0] * len(input_ids)
    return packed, truncated


# -- training batches -------------------------------------------------------------------------------
class ReplacementDataset(torch.utils.data.Dataset):
    """Packed once: item m is (packed samples, their (rising-quality level, slot) places, levels of m).

    Levels are indexed by *rising quality* for the ranking losses: level index l = n − i (0 = every
    turn replaced, n = the dialogue itself)."""

    def __init__(self, groups: Sequence[ReplacementGroup], tokenizer: PreTrainedTokenizerBase, *,
                 max_length: int = 512):
        self.items, self.truncated = [], 0
        for group in groups:
            packed, places = [], []
            for level in group.levels:
                for slot, sample in enumerate(level):
                    ids, cut = pack_dialogue(tokenizer, sample.turns, max_length=max_length)
                    packed.append(ids)
                    places.append((group.n - sample.replaced, slot))
                    self.truncated += cut
            self.items.append((packed, places, group.n + 1))

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int):
        return self.items[index]

    def cache_features(self, encode, *, batch_size: int = 64) -> None:
        """Replace each dialogue's packed samples by ``encode(list of packed) -> (count, D)`` features, once.
        With a frozen encoder (in eval mode, so deterministic) the head then trains for many epochs at the
        cost of one encoder pass per sample."""
        flat = [(m, packed) for m, (samples, _, _) in enumerate(self.items) for packed in samples]
        order = sorted(range(len(flat)), key=lambda i: len(flat[i][1]["input_ids"]))
        features: list = [None] * len(flat)
        for start in range(0, len(order), batch_size):
            chosen = order[start:start + batch_size]
            for i, row in zip(chosen, encode([flat[i][1] for i in chosen]), strict=True):
                features[i] = row
        start = 0
        for m, (samples, places, levels) in enumerate(self.items):
            self.items[m] = (torch.stack(features[start:start + len(samples)]), places, levels)
            start += len(samples)


@dataclass
class ReplacementCollator:
    """D dialogues -> one dynamically padded batch of all their samples, plus ``slots`` (the flat index
    of each sample in a (D, L, K) grid, L/K the batch's most levels/samples) and ``shape``."""

    pad_id: int
    multiple_of: int = 1

    def __call__(self, items) -> dict:
        levels = max(n_levels for _, _, n_levels in items)
        width = max(slot for _, places, _ in items for _, slot in places) + 1
        if isinstance(items[0][0], torch.Tensor):  # features computed beforehand (a frozen encoder)
            batch = {"features": torch.cat([features for features, _, _ in items])}
        else:
            batch = collate([p for packed, _, _ in items for p in packed], self.pad_id, self.multiple_of)
        batch["slots"] = torch.tensor([(m * levels + level) * width + slot for m, (_, places, _) in enumerate(items)
                                       for level, slot in places], dtype=torch.long)
        batch["shape"] = (len(items), levels, width)
        return batch


def scatter_scores(scores: torch.Tensor, slots: torch.Tensor, shape: tuple[int, int, int]
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """Flat sample scores -> (D, L, K) grid and its mask (True where a sample sits)."""
    size = shape[0] * shape[1] * shape[2]
    grid = scores.new_zeros(size).index_put((slots,), scores)
    mask = torch.zeros(size, dtype=torch.bool, device=scores.device).index_fill(0, slots, True)
    return grid.view(shape), mask.view(shape)
