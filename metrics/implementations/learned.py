"""The shared part of the learned turn-level metrics (QuantiDCE, MDD-Eval): a saved model directory
scored over (context, response) pairs, batched and sorted by length (``ml.scoring.score_pairs``).

Config: ``path`` (the saved model directory; required), ``device``, ``batch_size`` (64),
``max_length`` (128) and ``truncate`` ("oldest": the oldest context tokens go first)."""
from __future__ import annotations

from metrics.implementations.base import MetricImplementation, ScoringInput


class LearnedTurnMetric(MetricImplementation):
    level = "turn"
    kind = "learned"
    range = (0.0, 1.0)

    @staticmethod
    def load(path: str):
        """The (model in eval mode, tokenizer) saved at ``path``; subclasses cache it."""
        raise NotImplementedError

    @property
    def device(self) -> str:
        from ml.devices import pick_device

        return str(pick_device(self.config.get("device")))

    def score(self, batch: list[ScoringInput]) -> list[float]:
        if not batch:
            return []
        path = self.config.get("path")
        if not path:
            raise ValueError(f"{self.key} needs a trained model: config 'path' is empty (train one with train_metric)")
        from ml.scoring import score_pairs

        model, tokenizer = self.load(str(path))
        return score_pairs(model, tokenizer, [(item.turns, item.response) for item in batch],
                           batch_size=int(self.config.get("batch_size", 64)),
                           max_length=int(self.config.get("max_length", 128)),
                           truncate=self.config.get("truncate", "oldest"), device=self.config.get("device"))
