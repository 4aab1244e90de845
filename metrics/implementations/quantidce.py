"""QuantiDCE (Ye et al. ACL 2021): a learned turn-level coherence score ŝ ∈ (0, 1) of a response
given its context, from a model trained with ``train_metric quantidce`` (multi-level ranking, then
KD fine-tuning on human scores, where 4ŝ + 1 predicts the 1–5 human scale).

Config as every learned turn-level metric (``metrics.implementations.learned``): ``path`` (required),
``device``, ``batch_size``, ``max_length``, ``truncate``."""
from __future__ import annotations

from functools import lru_cache

from metrics.implementations.base import Recipe, RecipeStep, Trainable
from metrics.implementations.learned import LearnedTurnMetric

TRAINING = Trainable(
    stages=("mlr", "kd"), runner="metrics.training.stages", trainer="ml.trainers.quantidce",
    label="QuantiDCE", stage_labels={"mlr": "multi-level ranking (MLR)", "kd": "human scores + KD"},
    # MLR on DailyDialog++ dev, validated on the first 150 test contexts; KD on GRADE DailyDialog (a seeded 90/10 split)
    data={"mlr": ("dailydialog_pp/dev.json", "dailydialog_pp/test.json"), "kd": ("grade/dailydialog_EVAL.json", "")},
    recipes={
        # The head starts as the untrained blend of the whole-context and last-turn cosines and learns a
        # correction (ml.models.floor); the starting point is a candidate; chosen by DD++ validation accuracy
        "default": Recipe((RecipeStep("mlr", {"floor": True, "evaluate_at_start": True, "select_by": "accuracy"}),),
                          "MLR on frozen MiniLM features (windows), a correction learned on top of the untrained "
                          "cosines, head only"),
        "paper": Recipe((RecipeStep("mlr", {"representation": "cls", "freeze_encoder": False, "cache_features": False,
                                            "head_learning_rate": 0.0, "lr_schedule": "linear"}),
                         RecipeStep("kd", init_from="mlr")),
                        "the paper: MLR 5 epochs with the encoder trained on the [CLS] pooler, then KD 20 epochs"),
    },
)


@lru_cache(maxsize=2)
def _model(path: str):
    from ml.models import QuantiDCEModel, load_tokenizer

    return QuantiDCEModel.load(path).eval(), load_tokenizer(f"{path}/encoder")


class QuantiDCE(LearnedTurnMetric):
    key = "quantidce"
    name = "QuantiDCE (multi-level ranking + KD, Ye et al. 2021)"
    description = "Learned context-response coherence in (0, 1); trained on DailyDialog++ levels, fine-tuned on human scores."

    training = TRAINING
    load = staticmethod(_model)
