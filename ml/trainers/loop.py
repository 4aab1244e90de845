"""A small, seeded training loop shared by the learned metrics.

- AdamW with a linear warm-up (``warmup_ratio`` of one epoch's optimizer steps) then linear decay
  (``lr_schedule`` "linear") or a constant rate ("constant"; "auto": constant for a frozen encoder);
- gradient accumulation (``grad_accumulation`` micro-batches per optimizer step), gradient clipping;
- bf16 autocast on CUDA (full precision on CPU); a model with few trainable parameters (a head on
  cached features) trains on one CPU thread;
- a checkpoint every ``checkpoint_every`` optimizer steps holding model, optimizer, scheduler, RNG
  states and the position in the epoch, so ``resume`` continues exactly where it stopped (the next
  loss equals the one an uninterrupted run computes);
- evaluation on the validation set each epoch (or every ``eval_every`` steps), and before the first step
  with ``evaluate_at_start``; the model with the lowest validation loss (``select_by="accuracy"``: the
  highest validation accuracy the objective reports; ``"ranking"``: the highest ``ranking_accuracy`` the
  trainer's ``validation_extra(model)`` adds to the validation figures) is saved to ``<output_dir>/best``
  with ``save_best``;
- the data order of epoch e is a permutation seeded by (seed, e), so it does not depend on history.

The ``objective`` maps (model, batch) to (loss, parts); it is where each metric's losses live."""
from __future__ import annotations

import math
import re
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from transformers import get_constant_schedule_with_warmup, get_linear_schedule_with_warmup, set_seed

from ml.devices import pick_device
from ml.trainers.callbacks import Callback, TrainingState
from ml.trainers.config import TrainingConfig

Objective = Callable[[torch.nn.Module, dict], tuple[torch.Tensor, dict[str, float]]]
CHECKPOINT = re.compile(r"step-(\d+)$")
# a head alone (frozen encoder, cached features) trains on one CPU thread: its matrices are too small to
# gain from more, and on a shared machine the threads wait on each other (measured on the 2-core CI
# machine under load: 1.1 steps/s on two threads, ~16 on one, for QuantiDCE's windows head)
SMALL = 5_000_000
# select_by -> the validation figure chosen on, higher is better ("loss": the validation loss, lower is better)
SELECTED = {"accuracy": "accuracy", "ranking": "ranking_accuracy"}


def to_device(batch: dict, device: torch.device) -> dict:
    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


def latest_checkpoint(output_dir: str | Path) -> Path | None:
    found = [(int(m.group(1)), p) for p in (Path(output_dir) / "checkpoints").glob("step-*")
             if (m := CHECKPOINT.search(p.name)) and (p / "trainer.pt").is_file()]
    return max(found)[1] if found else None


class Trainer:
    def __init__(self, model: torch.nn.Module, objective: Objective, train_set: Sequence, validation_set: Sequence,
                 collator: Callable[[list], dict], config: TrainingConfig, *,
                 save_best: Callable[[torch.nn.Module, Path], None], callbacks: Sequence[Callback] = (),
                 validation_extra: Callable[[torch.nn.Module], dict[str, float]] | None = None):
        if not len(train_set) and config.epochs:  # epochs 0: the starting model evaluated and saved, no step
            raise ValueError("the training set is empty")
        self.model, self.objective, self.collator, self.config = model, objective, collator, config
        self.train_set, self.validation_set = train_set, validation_set
        self.save_best, self.callbacks = save_best, list(callbacks)
        self.validation_extra = validation_extra  # more validation figures of the model (eval mode), e.g. ranking
        self.device = pick_device(config.device)
        self.output_dir = Path(config.output_dir)
        self.batches_per_epoch = math.ceil(len(train_set) / config.batch_size)
        self.steps_per_epoch = math.ceil(self.batches_per_epoch / config.grad_accumulation)
        total = self.steps_per_epoch * config.epochs
        self.state = TrainingState(total_steps=min(total, config.max_steps) if config.max_steps else total)
        self.model.to(self.device)
        self.optimizer = torch.optim.AdamW(self.parameter_groups(), lr=config.learning_rate,
                                           weight_decay=config.weight_decay)
        warmup = math.ceil(config.warmup_ratio * self.steps_per_epoch)
        self.scheduler = (get_constant_schedule_with_warmup(self.optimizer, num_warmup_steps=warmup)
                          if config.schedule() == "constant" else
                          get_linear_schedule_with_warmup(self.optimizer, num_warmup_steps=warmup, num_training_steps=total))

    def parameter_groups(self) -> list[dict]:
        """One group, or two where a freshly initialised ``head`` gets its own learning rate."""
        head = getattr(self.model, "head", None)
        if not self.config.head_learning_rate or head is None:
            return [{"params": [p for p in self.model.parameters() if p.requires_grad]}]
        in_head = {id(p) for p in head.parameters()}
        groups = [{"params": [p for p in self.model.parameters() if p.requires_grad and id(p) not in in_head]},
                  {"params": [p for p in head.parameters() if p.requires_grad], "lr": self.config.head_learning_rate}]
        return [g for g in groups if g["params"]]  # a frozen encoder leaves the head's group only

    # -- order and batches -------------------------------------------------------------------------
    def epoch_order(self, epoch: int) -> list[int]:
        generator = torch.Generator().manual_seed(self.config.seed * 1000 + epoch)
        return torch.randperm(len(self.train_set), generator=generator).tolist()

    def micro_batches(self, epoch: int, start: int):
        order, size = self.epoch_order(epoch), self.config.batch_size
        for index in range(start, self.batches_per_epoch):
            yield index, self.collator([self.train_set[i] for i in order[index * size:(index + 1) * size]])

    def autocast(self):
        return torch.autocast(device_type=self.device.type, dtype=torch.bfloat16, enabled=self.device.type == "cuda")

    # -- checkpoints -------------------------------------------------------------------------------
    def save_checkpoint(self) -> Path:
        path = self.output_dir / "checkpoints" / f"step-{self.state.step}"
        path.mkdir(parents=True, exist_ok=True)
        torch.save({
            "model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(), "state": vars(self.state).copy(),
            "rng": {"torch": torch.get_rng_state(),
                    "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None},
        }, path / "trainer.pt.tmp")
        (path / "trainer.pt.tmp").replace(path / "trainer.pt")  # a crash mid-write leaves no half checkpoint
        self.config.save(path)
        old = sorted((int(m.group(1)), p) for p in path.parent.glob("step-*") if (m := CHECKPOINT.search(p.name)))
        for _, stale in old[:-self.config.keep_checkpoints]:
            shutil.rmtree(stale, ignore_errors=True)
        for callback in self.callbacks:
            callback.on_checkpoint(self.state, path)
        return path

    def load_checkpoint(self, path: Path) -> None:
        saved = torch.load(path / "trainer.pt", map_location=self.device, weights_only=False)
        self.model.load_state_dict(saved["model"])
        self.optimizer.load_state_dict(saved["optimizer"])
        self.scheduler.load_state_dict(saved["scheduler"])
        total = self.state.total_steps
        self.state = TrainingState(**saved["state"])
        self.state.total_steps = total
        if self.state.best_selection is None and self.state.best_validation is not None and self.config.select_by == "loss":
            self.state.best_selection = self.state.best_validation  # a checkpoint written before the field
        torch.set_rng_state(saved["rng"]["torch"].cpu())
        if saved["rng"]["cuda"] is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(saved["rng"]["cuda"])

    # -- evaluation --------------------------------------------------------------------------------
    def evaluate(self) -> tuple[float, dict[str, float]]:
        self.model.eval()
        total, parts, count = 0.0, {}, 0
        size = self.config.batch_size
        with torch.inference_mode(), self.autocast():
            for start in range(0, len(self.validation_set), size):
                for callback in self.callbacks:
                    callback.on_phase("validating", start, len(self.validation_set))
                items = [self.validation_set[i] for i in range(start, min(start + size, len(self.validation_set)))]
                loss, batch_parts = self.objective(self.model, to_device(self.collator(items), self.device))
                total += float(loss) * len(items)
                for key, value in batch_parts.items():
                    parts[key] = parts.get(key, 0.0) + value * len(items)
                count += len(items)
        for callback in self.callbacks:
            callback.on_phase("validating", len(self.validation_set), len(self.validation_set))
        self.model.train()
        return total / count, {k: v / count for k, v in parts.items()}

    def run_evaluation(self) -> None:
        if not len(self.validation_set):
            return
        loss, parts = self.evaluate()
        if self.validation_extra is not None:
            self.model.eval()
            with torch.inference_mode(), self.autocast():
                parts = {**parts, **self.validation_extra(self.model)}
            self.model.train()
        key = SELECTED.get(self.config.select_by)
        if key is not None and key not in parts:
            raise ValueError(f"select_by: {self.config.select_by} needs a validation {key.replace('_', ' ')} "
                             "(the objective's, or the trainer's validation_extra)")
        selection = -parts[key] if key is not None else loss
        self.state.selected_on = key or "loss"
        improved = self.state.best_selection is None or selection < self.state.best_selection
        if improved:
            self.state.best_selection = selection
            self.state.best_validation, self.state.best_step = loss, self.state.step
            self.save_best(self.model, self.output_dir / "best")
        self.state.history.append({"step": self.state.step, "epoch": self.state.epoch, "validation": loss, **parts})
        for callback in self.callbacks:
            callback.on_evaluate(self.state, loss, parts, improved)

    def time_steps(self, steps: int = 2) -> float:
        """Seconds per optimizer step on this device, measured on the first batches of epoch 0 after one
        warm-up step: for an estimate before a long run. Trains the model those steps; nothing is saved."""
        self.model.train()
        timings, batches = [], self.micro_batches(0, 0)
        for _ in range(steps + 1):
            started = time.perf_counter()
            for _ in range(self.config.grad_accumulation):
                _, batch = next(batches, (None, None))
                if batch is None:
                    break
                with self.autocast():
                    loss, _ = self.objective(self.model, to_device(batch, self.device))
                (loss / self.config.grad_accumulation).backward()
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
            if self.device.type == "cuda":
                torch.cuda.synchronize()
            timings.append(time.perf_counter() - started)
        return sum(timings[1:]) / max(1, len(timings) - 1)

    # -- the loop ----------------------------------------------------------------------------------
    def train(self, *, resume: bool = False) -> TrainingState:
        threads = torch.get_num_threads()
        if self.device.type == "cpu" and sum(p.numel() for p in self.model.parameters() if p.requires_grad) < SMALL:
            torch.set_num_threads(1)
        try:
            return self._train(resume=resume)
        finally:
            torch.set_num_threads(threads)

    def _train(self, *, resume: bool = False) -> TrainingState:
        set_seed(self.config.seed)
        checkpoint = latest_checkpoint(self.output_dir) if resume else None
        if checkpoint is not None:
            self.load_checkpoint(checkpoint)
        self.config.save(self.output_dir)
        for callback in self.callbacks:
            callback.on_start(self.state)
        if self.config.evaluate_at_start and self.state.step == 0 and not self.state.history:
            self.run_evaluation()  # the starting model (e.g. the untrained cosine, or the teacher) is a candidate
        self.model.train()
        accumulation, config = self.config.grad_accumulation, self.config
        stopped = False
        while self.state.epoch < config.epochs and not stopped:
            step_loss, step_parts, pending = 0.0, {}, 0
            for index, batch in self.micro_batches(self.state.epoch, self.state.batch_in_epoch):
                with self.autocast():
                    loss, parts = self.objective(self.model, to_device(batch, self.device))
                (loss / accumulation).backward()
                step_loss += float(loss.detach()) / accumulation
                for key, value in parts.items():
                    step_parts[key] = step_parts.get(key, 0.0) + value / accumulation
                pending += 1
                self.state.batch_in_epoch = index + 1
                if pending < accumulation and index + 1 < self.batches_per_epoch:
                    continue
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), config.max_grad_norm)
                self.optimizer.step()
                self.scheduler.step()
                self.optimizer.zero_grad(set_to_none=True)
                self.state.step += 1
                self.state.history.append({"step": self.state.step, "epoch": self.state.epoch, "loss": step_loss,
                                           "lr": self.scheduler.get_last_lr()[0], **step_parts})
                for callback in self.callbacks:
                    callback.on_step(self.state, step_loss, step_parts)
                step_loss, step_parts, pending = 0.0, {}, 0
                if config.eval_every and self.state.step % config.eval_every == 0:
                    self.run_evaluation()
                if config.checkpoint_every and self.state.step % config.checkpoint_every == 0:
                    self.save_checkpoint()
                if (config.max_steps and self.state.step >= config.max_steps) or \
                        any(c.should_stop(self.state) for c in self.callbacks):
                    stopped = True
                    break
            if self.state.batch_in_epoch >= self.batches_per_epoch:
                if not config.eval_every:
                    self.run_evaluation()
                self.state.epoch, self.state.batch_in_epoch = self.state.epoch + 1, 0
            elif stopped and not config.eval_every:
                self.run_evaluation()  # stopped inside an epoch: the model as it stands is a candidate too
        if self.state.best_step is None:  # no validation set: the last model is the result
            self.save_best(self.model, self.output_dir / "best")
        for callback in self.callbacks:
            callback.on_end(self.state)
        return self.state
