"""Two untrained dialogue-level baselines for SelF-Eval (the bar a trained SelF-Eval must clear): a dialogue's score
is the mean over its consecutive turn pairs (t_k, t_{k+1}), k = 1..n − 1, of

- ``coherence_turns``: the coherence heuristic 1 − P·(1 − cos(e(t_k), e(t_{k+1}))) of
  ``metrics.implementations.coherence`` (Dziri et al.), t_{k+1} read as the response to t_k;
- ``cosine_turns``: the packaged MiniLM's cosine cos(e(t_k), e(t_{k+1})) (mean pooling, unit length).

A one-turn dialogue has no pair and gets 0 (counted in ``warnings``). At turn level a response is
scored as the dialogue context + response, like SelF-Eval."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from metrics.implementations.base import ScoringInput
from metrics.implementations.coherence import EmbeddingMetric, Request, penalty


class ConsecutiveTurns(EmbeddingMetric):
    level = "dialogue"
    kind = "heuristic"
    baseline = True
    penalised = False

    @staticmethod
    def pairs(dialogues: Sequence[Sequence[str]]) -> list[tuple[str, str]]:
        return [(d[k] or " ", d[k + 1] or " ") for d in dialogues for k in range(len(d) - 1)]

    def requests(self, batch: Sequence[ScoringInput] = (), dialogues: Sequence[Sequence[str]] = ()) -> list[Request]:
        every = [*dialogues, *([*item.turns, item.response] for item in batch)]
        return [(sorted({t for pair in self.pairs(every) for t in pair}), self.max_length(), False)]

    def score_dialogues(self, dialogues: list[list[str]], speakers=None) -> list[float]:
        pairs = self.pairs(dialogues)
        if not pairs:
            self.warnings += len(dialogues)
            return [0.0] * len(dialogues)
        texts = sorted({t for pair in pairs for t in pair})  # each distinct turn embedded once
        embedded = self.encode(texts)
        index = {t: i for i, t in enumerate(texts)}
        left = embedded[[index[a] for a, _ in pairs]]
        right = embedded[[index[b] for _, b in pairs]]
        values = np.sum(left * right, axis=1)
        if self.penalised:
            values = 1.0 - np.array([penalty(b) for _, b in pairs]) * (1.0 - values)
        out, start = [], 0
        for dialogue in dialogues:
            count = max(len(dialogue) - 1, 0)
            if count:
                out.append(float(values[start:start + count].mean()))
            else:
                out.append(0.0)
                self.warnings += 1
            start += count
        return out

    def score(self, batch: list[ScoringInput]) -> list[float]:
        return self.score_dialogues([[*item.turns, item.response] for item in batch])


class CoherenceTurns(ConsecutiveTurns):
    key = "coherence_turns"
    name = "Coherence heuristic averaged over consecutive turns (SelF-Eval baseline)"
    range = (None, 1.0)
    description = "Mean over consecutive turn pairs of 1 − P·(1 − cos) (the coherence heuristic); higher = more coherent."
    penalised = True


class CosineTurns(ConsecutiveTurns):
    key = "cosine_turns"
    name = "MiniLM cosine between consecutive turns (SelF-Eval baseline)"
    range = (-1.0, 1.0)
    description = "Mean cosine of the packaged MiniLM's embeddings of consecutive turns; higher = more similar."
