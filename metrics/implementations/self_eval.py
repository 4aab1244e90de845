"""SelF-Eval (Ma et al. COLING 2022): a learned dialogue-quality score S_D ∈ (0, 1) of a whole
dialogue, from a model trained with ``train_metric self_eval --stage coarse`` then ``--stage fine``
(turn-replacement levels; ``ml.trainers.self_eval``).

Dialogue level (``score_dialogues``): the conversation's turns, speakers mapped to A/B. Turn level
(``score``): the context turns followed by the response, scored as one dialogue (the paper's own way,
footnote 5). A ScoringRun of a model whose config says ``"level": "dialogue"`` (the default) scores
conversations; ``"level": "turn"`` scores responses like the turn-level metrics.

Config: ``path`` (the saved model directory; required), ``device``, ``batch_size`` (32), ``max_length``
(512; longer dialogues keep their beginning and are counted in ``truncated``), ``level``. A model trained with ``--representation pairs`` (its metric.json says so) is scored from
per-turn embeddings (``ml.data.turn_pairs``); its ``truncated`` counts distinct turns cut, not dialogues."""
from __future__ import annotations

from functools import lru_cache
from typing import Any

from metrics.implementations.base import MetricImplementation, Recipe, RecipeStep, ScoringInput, Trainable

# Consecutive turns embedded apart by the frozen MiniLM; the head starts as cosine_turns and learns a
# correction (ml.models.floor); the starting point is a candidate; chosen by validation replacement accuracy
_PAIRS = {"self_eval_representation": "pairs", "freeze_encoder": True, "cache_features": True, "floor": True,
          "evaluate_at_start": True, "select_by": "accuracy"}
TRAINING = Trainable(
    stages=("coarse", "fine"), runner="metrics.training.stages", trainer="ml.trainers.self_eval",
    label="SelF-Eval", stage_labels={"coarse": "coarse (replacement levels)", "fine": "fine (+ R-drop)"},
    # dialogues = DailyDialog++ contexts + a relevant response; positives.json to train, dev to validate
    data={"coarse": ("dailydialog_pp/positives.json", "dailydialog_pp/dev.json"),
          "fine": ("dailydialog_pp/positives.json", "dailydialog_pp/dev.json")},
    recipes={
        "default": Recipe((RecipeStep("coarse", {**_PAIRS, "train_limit": 1000, "validation_limit": 150, "epochs": 8,
                                                 "batch_size": 8}),
                           RecipeStep("fine", {**_PAIRS, "train_limit": 200, "validation_limit": 150, "epochs": 4,
                                               "batch_size": 8}, init_from="coarse")),
                          "consecutive turns embedded apart by the frozen MiniLM (pairs), a correction learned on top of "
                          "their cosine, head only, coarse then fine"),
        "paper": Recipe((RecipeStep("coarse"), RecipeStep("fine", init_from="coarse")),
                        "the paper: [E_cls; mean pool] of the packed dialogue, encoder trained, all of positives.json"),
    },
)


@lru_cache(maxsize=2)
def _model(path: str):
    from ml.models import SelfEvalModel, load_tokenizer

    return SelfEvalModel.load(path).eval(), load_tokenizer(f"{path}/encoder")


class SelfEval(MetricImplementation):
    key = "self_eval"
    name = "SelF-Eval (turn replacement + multi-level contrastive learning, Ma et al. 2022)"
    level = "dialogue"
    kind = "learned"
    range = (0.0, 1.0)
    description = ("Learned dialogue quality in (0, 1), trained to rank dialogues by how many of their turns were "
                   "replaced; a response is scored as the dialogue context + response.")
    truncated: int = 0
    training = TRAINING

    @property
    def device(self) -> str:
        from ml.devices import pick_device

        return str(pick_device(self.config.get("device")))

    def score_dialogues(self, dialogues: list[list[str]], speakers: list[list[str] | None] | None = None) -> list[float]:
        if not dialogues:
            return []
        path = self.config.get("path")
        if not path:
            raise ValueError("self_eval needs a trained model: config 'path' is empty (train one with train_metric)")
        model, tokenizer = _model(str(path))
        options: dict[str, Any] = {"batch_size": int(self.config.get("batch_size", 32)),
                   "max_length": int(self.config.get("max_length", 512)), "device": self.config.get("device")}
        if model.representation_name == "pairs":  # from its metric.json: turns embedded apart, speakers unused
            from ml.data.turn_pairs import score_dialogues_by_pairs

            scores, truncated = score_dialogues_by_pairs(model, tokenizer, dialogues, **options)
        else:
            from ml.dialogue_scoring import score_dialogues

            scores, truncated = score_dialogues(model, tokenizer, dialogues, speakers=speakers, **options)
        self.truncated += truncated
        return scores

    def score(self, batch: list[ScoringInput]) -> list[float]:
        return self.score_dialogues([[*item.turns, item.response] for item in batch])
