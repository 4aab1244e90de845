"""QuantiDCE (Ye et al. ACL 2021): a learned turn-level coherence score ŝ ∈ (0, 1) of a response
given its context, from a model trained with ``train_metric quantidce`` (multi-level ranking, then
KD fine-tuning on human scores, where 4ŝ + 1 predicts the 1–5 human scale).

Config: ``path`` (the saved model directory; required), ``device``, ``batch_size`` (64),
``max_length`` (128) and ``truncate`` ("oldest": the oldest context tokens go first)."""
from __future__ import annotations

from functools import lru_cache

from metrics.implementations.base import MetricImplementation, ScoringInput
from metrics.registry import register


@lru_cache(maxsize=2)
def _model(path: str):
    from ml.models import QuantiDCEModel, load_tokenizer

    return QuantiDCEModel.load(path).eval(), load_tokenizer(f"{path}/encoder")


@register
class QuantiDCE(MetricImplementation):
    key = "quantidce"
    name = "QuantiDCE (multi-level ranking + KD, Ye et al. 2021)"
    level = "turn"
    kind = "learned"
    range = (0.0, 1.0)
    description = "Learned context-response coherence in (0, 1); trained on DailyDialog++ levels, fine-tuned on human scores."

    @property
    def device(self) -> str:
        from ml.devices import pick_device

        return str(pick_device(self.config.get("device")))

    def score(self, batch: list[ScoringInput]) -> list[float]:
        if not batch:
            return []
        path = self.config.get("path")
        if not path:
            raise ValueError("quantidce needs a trained model: config 'path' is empty (train one with train_metric)")
        from ml.scoring import score_pairs

        model, tokenizer = _model(str(path))
        return score_pairs(model, tokenizer, [(item.turns, item.response) for item in batch],
                           batch_size=int(self.config.get("batch_size", 64)),
                           max_length=int(self.config.get("max_length", 128)),
                           truncate=self.config.get("truncate", "oldest"), device=self.config.get("device"))
