"""MDD-Eval (Zhang et al. AAAI 2022): a turn-level score of a response given its context,
P(relevant | context, response) ∈ (0, 1) from the 3-way (random / adversarial / relevant) classifier
trained with ``train_metric mdd_eval`` (teacher on DailyDialog++, then a student on augmented
multi-domain pairs with the teacher's pseudo-labels). Inputs are never masked at scoring time (the
released code masked them — a bug not copied).

Config: ``path`` (the saved model directory; required), ``device``, ``batch_size`` (64),
``max_length`` (128) and ``truncate`` ("oldest": the oldest context tokens go first)."""
from __future__ import annotations

from functools import lru_cache

from metrics.implementations.base import MetricImplementation, ScoringInput
from metrics.registry import register


@lru_cache(maxsize=2)
def _model(path: str):
    from ml.models import load_tokenizer
    from ml.models.mdd_eval import MDDEvalModel

    return MDDEvalModel.load(path).eval(), load_tokenizer(f"{path}/encoder")


@register
class MDDEval(MetricImplementation):
    key = "mdd_eval"
    name = "MDD-Eval (teacher-student self-training, Zhang et al. 2022)"
    level = "turn"
    kind = "learned"
    range = (0.0, 1.0)
    description = "P(relevant | context, response) from a classifier of random / adversarial / relevant responses."

    @property
    def device(self) -> str:
        from ml.devices import pick_device

        return str(pick_device(self.config.get("device")))

    def score(self, batch: list[ScoringInput]) -> list[float]:
        if not batch:
            return []
        path = self.config.get("path")
        if not path:
            raise ValueError("mdd_eval needs a trained model: config 'path' is empty (train one with train_metric)")
        from ml.scoring import score_pairs

        model, tokenizer = _model(str(path))
        return score_pairs(model, tokenizer, [(item.turns, item.response) for item in batch],
                           batch_size=int(self.config.get("batch_size", 64)),
                           max_length=int(self.config.get("max_length", 128)),
                           truncate=self.config.get("truncate", "oldest"), device=self.config.get("device"))
