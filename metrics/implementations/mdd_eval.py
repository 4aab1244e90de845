"""MDD-Eval (Zhang et al. AAAI 2022): a turn-level score of a response given its context,
P(relevant | context, response) ∈ (0, 1) from the 3-way (random / adversarial / relevant) classifier
trained with ``train_metric mdd_eval`` (teacher on DailyDialog++, then a student on augmented
multi-domain pairs with the teacher's pseudo-labels). Inputs are never masked at scoring time (the
released code masked them — a bug not copied).

Config as every learned turn-level metric (``metrics.implementations.learned``): ``path`` (required),
``device``, ``batch_size``, ``max_length``, ``truncate``."""
from __future__ import annotations

from functools import lru_cache

from metrics.implementations.base import Recipe, RecipeStep, Trainable
from metrics.implementations.learned import LearnedTurnMetric

_FROZEN = {"representation": "paired", "freeze_encoder": True, "cache_features": True, "floor": True,
           "evaluate_at_start": True, "select_by": "ranking", "batch_size": 32, "learning_rate": 1e-3,
           "head_learning_rate": 1e-3, "lr_schedule": "constant", "validation_data": "shared:dailydialog_pp/test.json",
           "validation_limit": 150}
TRAINING = Trainable(
    stages=("teacher", "augment", "student"), runner="metrics.training.mdd",
    recipes={
        # Frozen MiniLM pair features computed once; the relevant class starts as the untrained
        # cosine of context and response (ml.models.floor); teacher and student are chosen on DailyDialog++
        # validation (test contexts 0-149) by ranking accuracy of P(relevant) — not 3-way accuracy, on which
        # the untrained start scores .333 and so could never be kept — the starting point a candidate; the
        # student starts as its teacher (so it is kept only where it ranks at least as well). The paper
        # recipe keeps the paper's choice (the lowest validation loss).
        "default": Recipe((RecipeStep("teacher", {**_FROZEN, "epochs": 5}),
                           RecipeStep("augment", {"per_technique": 1, "pairs_limit": 2000}),
                           RecipeStep("student", {**_FROZEN, "epochs": 3, "student_from_teacher": True,
                                                  "threshold": 0.5}, init_from="teacher", dataset="augment")),
                          "frozen MiniLM pair features, a correction learned on top of the context-response cosine: "
                          "teacher, rule-based augmentation, student"),
        "paper": Recipe((RecipeStep("teacher"), RecipeStep("augment"),
                         RecipeStep("student", init_from="teacher", dataset="augment")),
                        "the paper: the cross-encoded pair's first token, encoder trained, 3 epochs a stage"),
    },
)


@lru_cache(maxsize=2)
def _model(path: str):
    from ml.models import load_tokenizer
    from ml.models.mdd_eval import MDDEvalModel

    return MDDEvalModel.load(path).eval(), load_tokenizer(f"{path}/encoder")


class MDDEval(LearnedTurnMetric):
    key = "mdd_eval"
    name = "MDD-Eval (teacher-student self-training, Zhang et al. 2022)"
    description = "P(relevant | context, response) from a classifier of random / adversarial / relevant responses."

    training = TRAINING
    load = staticmethod(_model)
