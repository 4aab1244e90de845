"""The configuration of a training run, saved next to every checkpoint and with the trained model,
so a model directory says how it was made. Stage defaults follow QuantiDCE's released schedule
(Ye et al. ACL 2021): MLR 5 epochs, 3 contexts per batch, lr 2e-5; KD 20 epochs, batch 10, lr 5e-6;
AdamW, linear warm-up over 10 % of one epoch, seed 71 — except what the head reads and trains (MLR
defaults: ``representation="windows"``, ``freeze_encoder=True`` with ``cache_features``,
``head_learning_rate=1e-3``; the paper's: ``cls``, ``False``, ``0``), chosen by the QuantiDCE ablation (docs/quantidce_ablation.md)."""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPRESENTATIONS = ("cls", "mean", "paired")  # pair representations (ml.models.quantidce, ml.models.mdd_eval)
QUANTIDCE_REPRESENTATIONS = (*REPRESENTATIONS, "windows")  # + QuantiDCE's two context windows
LR_SCHEDULES = ("auto", "linear", "constant")
SELECT_BY = ("loss", "accuracy", "ranking")
STAGE_DEFAULTS: dict[str, dict[str, Any]] = {
    # MLR: the paper's schedule, but by default on the windows representation with the encoder frozen (its
    # features computed once) and the head at 1e-3 (docs/quantidce_ablation.md); the paper:
    # representation cls, encoder trained, head_learning_rate 0 (= learning_rate)
    # Validation reads the first 150 contexts of the validation file (DailyDialog++ test), so that
    # ``benchmark_metric --format ddpp --offset 150`` ranks contexts no training choice has seen.
    "mlr": {"epochs": 5, "batch_size": 3, "learning_rate": 2e-5, "head_learning_rate": 1e-3, "freeze_encoder": True,
            "cache_features": True, "validation_limit": 150, "lr_schedule": "auto"},
    "kd": {"epochs": 20, "batch_size": 10, "learning_rate": 5e-6},
    # SelF-Eval (Ma et al. COLING 2022): coarse = MLR over turn-replacement levels, fine = MLR + R-drop from
    # the coarse model. The paper's 0.005 → 0.002 only suits the freshly initialised head; the encoder gets
    # 2e-5 (METRICS.md). batch_size counts dialogues (each 1 + per_level·n samples); 512 tokens, K = 3.
    "coarse": {"epochs": 2, "batch_size": 4, "learning_rate": 2e-5, "head_learning_rate": 5e-3, "max_length": 512,
               "per_level": 3, "freeze_encoder": False, "output_dir": "var/models/self_eval"},
    "fine": {"epochs": 2, "batch_size": 4, "learning_rate": 2e-5, "head_learning_rate": 2e-3, "max_length": 512,
             "per_level": 3, "freeze_encoder": False, "output_dir": "var/models/self_eval"},
}


@dataclass
class TrainingConfig:
    metric: str = "quantidce"
    stage: str = "mlr"  # mlr: multi-level ranking pre-training; kd: fine-tuning on human scores with distillation
    encoder: str = ""  # Hugging Face name or path of the encoder ("" = the packaged MiniLM)
    init_from: str = ""  # a saved metric model directory to start from (KD: the stage-1 model, also the teacher)
    train_data: str = ""
    validation_data: str = ""  # MLR: a second file; KD: empty = a seeded split of train_data
    output_dir: str = "var/models/quantidce"
    epochs: int = 5
    batch_size: int = 3  # contexts (MLR) or pairs (KD) per micro-batch
    grad_accumulation: int = 1
    learning_rate: float = 2e-5
    head_learning_rate: float = 0.0  # the metric head's own rate (0 = learning_rate, as in the paper)
    weight_decay: float = 0.0
    warmup_ratio: float = 0.1  # of one epoch's optimizer steps
    # after the warm-up: "linear" decay to 0 (the paper), "constant", or "auto" (QuantiDCE MLR's default) =
    # constant when the encoder is frozen (a fresh head training alone; decayed over 5 epochs it stays
    # under-trained: the QuantiDCE ablation, section 8), linear otherwise
    lr_schedule: str = "linear"
    max_grad_norm: float = 1.0
    seed: int = 71
    max_length: int = 128
    truncate: str = "oldest"
    # the pair representation the head reads (ml.models.quantidce): cls (the paper), mean, paired, windows
    # (the default: the QuantiDCE ablation, docs/quantidce_ablation.md — cls does not transfer to human scores)
    representation: str = "windows"
    freeze_encoder: bool = False  # MLR: train the head only, on the pretrained encoder's features
    checkpoint_every: int = 100  # optimizer steps
    keep_checkpoints: int = 2
    eval_every: int = 0  # optimizer steps; 0 = at the end of each epoch
    max_steps: int = 0  # stop after this many optimizer steps (0 = all epochs)
    train_limit: int = 0  # use the first N contexts / pairs (0 = all)
    validation_limit: int = 0
    validation_fraction: float = 0.1
    # MLR (QuantiDCE eq. 2-4)
    separation_margin: float = 0.3
    compactness_margin: float = 0.1
    per_level_mean: bool = False
    signed_separation: bool = False
    per_level: int = 5
    # KD fine-tuning (QuantiDCE eq. 5-6): L = alpha·MSE(4ŝ+1, human) + beta·L_kd
    alpha: float = 1.0
    beta: float = 5.0
    device: str = ""
    # SelF-Eval (ml.trainers.self_eval): turn replacement and its head
    max_turns: int = 8  # dialogues keep their first N turns (0 = all): 1 + per_level·N samples per dialogue
    responses_per_context: int = 1  # DailyDialog++: dialogues per context (context + its k-th positive response)
    head_dropout: float = 0.5
    rdrop_weight: float = 1.0  # fine stage: L = L_mlr + rdrop_weight · L_drop (the paper: 1)
    cache_features: bool = False  # with freeze_encoder: compute the frozen encoder's features once, train the head
    # (QuantiDCE MLR: on by default; each distinct text is embedded once)
    self_eval_representation: str = "cls_mean"  # cls_mean (the paper) or pairs (ml.models.self_eval)
    # A head that starts as the untrained cosine and learns a correction on it (ml.models.floor),
    # the starting point evaluated as a candidate too, and the model chosen by validation ranking accuracy
    floor: bool = False
    evaluate_at_start: bool = False
    select_by: str = "loss"  # loss (the lowest validation loss), accuracy (the highest validation accuracy) or
    # ranking (the highest DailyDialog++ ranking accuracy a trainer's validation_extra reports: MDD-Eval)

    @classmethod
    def for_stage(cls, stage: str, **overrides) -> TrainingConfig:
        return cls(stage=stage, **cls.stage_values(stage, overrides, STAGE_DEFAULTS, QUANTIDCE_REPRESENTATIONS))

    @classmethod
    def stage_values(cls, stage: str, overrides: dict[str, Any], defaults: dict[str, dict[str, Any]],
                     representations: tuple[str, ...]) -> dict[str, Any]:
        """A stage's settings: its defaults, then the overrides given (None: not given); a setting the config
        does not have, or a schedule, selection or representation it does not know, is a ValueError naming it."""
        if stage not in defaults:
            raise ValueError(f"stage must be one of {', '.join(defaults)}, not {stage!r}")
        unknown = set(overrides) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ValueError(f"unknown training setting(s): {', '.join(sorted(unknown))}")
        values = {**defaults[stage], **{k: v for k, v in overrides.items() if v is not None}}
        for name, known in (("lr_schedule", LR_SCHEDULES), ("select_by", SELECT_BY), ("representation", representations)):
            if values.get(name, getattr(cls, name)) not in known:
                raise ValueError(f"{name}: must be one of {', '.join(known)}, not {values[name]!r}")
        return values

    def schedule(self) -> str:
        """The learning-rate schedule after the warm-up ("auto" resolved)."""
        if self.lr_schedule != "auto":
            return self.lr_schedule
        return "constant" if self.freeze_encoder else "linear"

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def save(self, directory: str | Path) -> None:
        Path(directory).mkdir(parents=True, exist_ok=True)
        (Path(directory) / "training_config.json").write_text(json.dumps(self.to_dict(), indent=2))

    @classmethod
    def load(cls, directory: str | Path) -> TrainingConfig:
        data = json.loads((Path(directory) / "training_config.json").read_text())
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})
