"""The configuration of an MDD-Eval stage (Zhang et al. AAAI 2022): the shared ``TrainingConfig``
(loop, checkpoints, data limits) plus what the teacher, the augmentation, the pseudo-labels and the
student need. Saved with every checkpoint and model like the base configuration. No torch import."""
from __future__ import annotations

from dataclasses import dataclass

from ml.trainers.config import REPRESENTATIONS, TrainingConfig

MDD_STAGES = ("teacher", "augment", "student")
MDD_STAGE_DEFAULTS = {
    "teacher": {"epochs": 3, "batch_size": 16, "learning_rate": 2e-5},
    "augment": {"epochs": 1},
    "student": {"epochs": 3, "batch_size": 16, "learning_rate": 2e-5},
}


@dataclass
class MDDEvalConfig(TrainingConfig):
    metric: str = "mdd_eval"
    stage: str = "teacher"
    output_dir: str = "var/models/mdd_eval"
    representation: str = "cls"  # the cross-encoded pair's first token (the released classifier)
    dropout: float = 0.1
    # augmentation: sources are JSON-lines files (DailyDialog++ records, or {"id", "turns"} dialogues),
    # comma-separated; per_technique new responses per technique per pair
    sources: str = ""
    per_technique: int = 10
    max_context_turns: int = 4
    pairs_limit: int = 0  # use the first N context-response pairs (0 = all)
    augment_chunk: int = 256  # pairs per resumable part file
    mask_model: str = ""  # any Hugging Face masked LM (mask-and-fill)
    translate_forward: str = ""  # seq2seq, e.g. en→de
    translate_backward: str = ""  # seq2seq, e.g. de→en
    generator_model: str = ""  # any causal or seq2seq dialogue model
    # pseudo-labels
    threshold: float = 0.7
    balance: bool = True
    # student: L = CE(soft labels) + kl_weight · KL(p(x) ‖ p(x̂)) + mlm_weight · MLM
    label_smoothing: float = 0.0  # the released code: 0.1
    kl_weight: float = 1.0
    kl_temperature: float = 1.0  # the released code sharpened the KL target with 0.85
    mlm_weight: float = 1.0
    mlm_probability: float = 0.15
    # The student starts as its teacher (not a fresh head), so with evaluate_at_start and a
    # DailyDialog++ validation set it can only be kept where it validates at least as well
    student_from_teacher: bool = False

    @classmethod
    def for_stage(cls, stage: str, **overrides) -> MDDEvalConfig:
        if stage not in MDD_STAGES:
            raise ValueError(f"stage must be one of {', '.join(MDD_STAGES)}, not {stage!r}")
        values = cls.stage_values(stage, overrides, MDD_STAGE_DEFAULTS, REPRESENTATIONS)
        if not 0 < values.get("threshold", cls.threshold) <= 1:
            raise ValueError(f"threshold: must be in (0, 1], not {values['threshold']}")
        if values.get("per_technique", cls.per_technique) < 1:
            raise ValueError("per_technique: must be at least 1")
        if values.get("max_context_turns", cls.max_context_turns) < 1:
            raise ValueError("max_context_turns: must be at least 1")
        return cls(stage=stage, **values)
