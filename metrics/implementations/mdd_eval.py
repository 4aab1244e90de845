"""MDD-Eval (Zhang et al. AAAI 2022): a turn-level score of a response given its context,
P(relevant | context, response) ∈ (0, 1) from the 3-way (random / adversarial / relevant) classifier
trained with ``train_metric mdd_eval`` (teacher on DailyDialog++, then a student on augmented
multi-domain pairs with the teacher's pseudo-labels). Inputs are never masked at scoring time (the
released code masked them — a bug not copied).

Config as every learned turn-level metric (``metrics.implementations.learned``): ``path`` (required),
``device``, ``batch_size``, ``max_length``, ``truncate``."""
from __future__ import annotations

from functools import lru_cache

from metrics.implementations.learned import LearnedTurnMetric
from metrics.registry import register


@lru_cache(maxsize=2)
def _model(path: str):
    from ml.models import load_tokenizer
    from ml.models.mdd_eval import MDDEvalModel

    return MDDEvalModel.load(path).eval(), load_tokenizer(f"{path}/encoder")


@register
class MDDEval(LearnedTurnMetric):
    key = "mdd_eval"
    name = "MDD-Eval (teacher-student self-training, Zhang et al. 2022)"
    description = "P(relevant | context, response) from a classifier of random / adversarial / relevant responses."

    load = staticmethod(_model)
