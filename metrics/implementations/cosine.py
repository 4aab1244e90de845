"""The untrained turn-level baselines every learned metric is compared with (issue 27): the packaged
MiniLM's cosine between a response and a window of its context,

    cosine_last:    cos(e(last turn), e(response))
    cosine_context: cos(e(context turns joined by spaces), e(response))

e = mean pooling over the encoder's last hidden states (the sentence encoder's own embedding). Every text
is cut to 128 tokens, the context (and the last turn) keeping its **newest** tokens (nearest the response)
and the response its beginning: exactly the inputs QuantiDCE's ``windows`` model embeds, so the two read the same
vectors from the on-disk embedding cache. Issue 15's ablation measured them (docs/quantidce_ablation.md):
the last turn transfers to GRADE DailyDialog, the whole context to FED."""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from metrics.implementations.base import MetricImplementation, ScoringInput
from metrics.implementations.coherence import Coherence

MAX_LENGTH = 128


class WindowCosine(MetricImplementation):
    level = "turn"
    range = (-1.0, 1.0)
    baseline = True
    window: ClassVar[str]

    @property
    def device(self) -> str:
        return Coherence(config=self.config).device

    def score(self, batch: list[ScoringInput]) -> list[float]:
        if not batch:
            return []
        encoder = Coherence(config=self.config)
        if self.window == "last":
            left = encoder.encode([item.turns[-1] if item.turns else "" for item in batch], max_length=MAX_LENGTH,
                                  keep_end=True)
        else:
            left = encoder.encode([" ".join(item.turns) for item in batch], max_length=MAX_LENGTH, keep_end=True)
        right = encoder.encode([item.response for item in batch], max_length=MAX_LENGTH)
        return np.sum(left * right, axis=1).astype(float).tolist()


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
