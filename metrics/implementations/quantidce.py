"""QuantiDCE (Ye et al. ACL 2021): a learned turn-level coherence score ŝ ∈ (0, 1) of a response
given its context, from a model trained with ``train_metric quantidce`` (multi-level ranking, then
KD fine-tuning on human scores, where 4ŝ + 1 predicts the 1–5 human scale).

Config as every learned turn-level metric (``metrics.implementations.learned``): ``path`` (required),
``device``, ``batch_size``, ``max_length``, ``truncate``."""
from __future__ import annotations

from functools import lru_cache

from metrics.implementations.learned import LearnedTurnMetric
from metrics.registry import register


@lru_cache(maxsize=2)
def _model(path: str):
    from ml.models import QuantiDCEModel, load_tokenizer

    return QuantiDCEModel.load(path).eval(), load_tokenizer(f"{path}/encoder")


@register
class QuantiDCE(LearnedTurnMetric):
    key = "quantidce"
    name = "QuantiDCE (multi-level ranking + KD, Ye et al. 2021)"
    description = "Learned context-response coherence in (0, 1); trained on DailyDialog++ levels, fine-tuned on human scores."

    load = staticmethod(_model)
