"""The untrained turn-level baselines every learned metric is compared with: the packaged
MiniLM's cosine between a response and a window of its context,

    cosine_last:    cos(e(last turn), e(response))
    cosine_context: cos(e(context turns joined by spaces), e(response))

e = mean pooling over the encoder's last hidden states (the sentence encoder's own embedding). Every text
is cut to 128 tokens, the context (and the last turn) keeping its **newest** tokens (nearest the response)
and the response its beginning: exactly the inputs QuantiDCE's ``windows`` model embeds, so the two read the same
vectors from the on-disk embedding cache. The QuantiDCE ablation measured them (docs/quantidce_ablation.md):
the last turn transfers to GRADE DailyDialog, the whole context to FED."""
from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from metrics.implementations.base import ScoringInput
from metrics.implementations.coherence import EmbeddingMetric, Request

MAX_LENGTH = 128


class WindowCosine(EmbeddingMetric):
    level = "turn"
    range = (-1.0, 1.0)
    baseline = True
    window: ClassVar[str]

    def requests(self, batch: Sequence[ScoringInput] = (), dialogues: Sequence[Sequence[str]] = ()) -> list[Request]:
        if self.window == "last":
            left = [item.turns[-1] if item.turns else "" for item in batch]
        else:
            left = [" ".join(item.turns) for item in batch]
        return [(left, MAX_LENGTH, True), ([item.response for item in batch], MAX_LENGTH, False)]

    def score(self, batch: list[ScoringInput]) -> list[float]:
        if not batch:
            return []
        (left, _, _), (right, _, _) = self.requests(batch)
        return np.sum(self.encode(left, max_length=MAX_LENGTH, keep_end=True)
                      * self.encode(right, max_length=MAX_LENGTH), axis=1).astype(float).tolist()


class CosineLast(WindowCosine):
    key = "cosine_last"
    name = "MiniLM cosine of the last turn and the response (untrained baseline)"
    description = "cos(e(last context turn), e(response)) with the packaged MiniLM; higher = closer in meaning."
    window = "last"


class CosineContext(WindowCosine):
    key = "cosine_context"
    name = "MiniLM cosine of the whole context and the response (untrained baseline)"
    description = ("cos(e(context turns joined, newest 128 tokens), e(response)) with the packaged MiniLM; "
                   "higher = closer in meaning.")
    window = "context"
