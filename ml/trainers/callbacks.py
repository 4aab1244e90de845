"""Training callbacks: hooks the loop calls so the command line (tqdm) and the Django side (the
TrainingRun row) can follow a run without the loop knowing about either."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class TrainingState:
    step: int = 0  # optimizer steps done
    epoch: int = 0
    batch_in_epoch: int = 0  # micro-batches of ``epoch`` already consumed
    total_steps: int = 0
    best_validation: float | None = None
    best_step: int | None = None
    best_selection: float | None = None  # what the best model was chosen on (select_by: loss, or −accuracy)
    selected_on: str = "loss"  # the validation figure the best model follows: "loss" or a key of the parts
    history: list[dict] = field(default_factory=list)  # one entry per optimizer step and per evaluation


class Callback:
    def on_start(self, state: TrainingState) -> None: ...
    def on_step(self, state: TrainingState, loss: float, parts: dict[str, float]) -> None: ...
    def on_evaluate(self, state: TrainingState, loss: float, parts: dict[str, float], improved: bool) -> None: ...
    def on_checkpoint(self, state: TrainingState, path: Path) -> None: ...
    def on_end(self, state: TrainingState) -> None: ...
    def on_phase(self, phase: str, done: int, total: int) -> None:
        """Progress of a phase besides the optimizer steps: embedding texts, validating."""

    def should_stop(self, state: TrainingState) -> bool:
        return False


class TqdmCallback(Callback):
    """A progress bar over optimizer steps with the running loss; evaluations printed above it."""

    def __init__(self, disable: bool = False):
        self.disable, self.bar, self.phases = disable, None, {}

    def on_phase(self, phase, done, total):
        from tqdm import tqdm

        bar = self.phases.get(phase)
        if bar is None or bar.total != total:
            if bar is not None:
                bar.close()
            bar = self.phases[phase] = tqdm(total=total, desc=phase, leave=False, disable=self.disable)
        bar.update(done - bar.n)
        if done >= total:
            bar.close()
            del self.phases[phase]

    def on_start(self, state):
        from tqdm import tqdm

        self.bar = tqdm(total=state.total_steps, initial=state.step, unit=" steps", disable=self.disable)

    def on_step(self, state, loss, parts):
        self.bar.update(state.step - self.bar.n)
        self.bar.set_postfix(loss=f"{loss:.4f}", epoch=state.epoch + 1)

    def on_evaluate(self, state, loss, parts, improved):
        # "(best)" stands beside the figure the best model is chosen on (select_by), not always the loss
        mark = " (best)" if improved else ""
        line = (f"step {state.step}: validation loss {loss:.4f}{mark if state.selected_on == 'loss' else ''} "
                + " ".join(f"{k}={v:.4f}{mark if k == state.selected_on else ''}" for k, v in parts.items()))
        self.bar.write(line)

    def on_end(self, state):
        self.bar.close()
        for bar in self.phases.values():
            bar.close()


class LogProgress(Callback):
    """A phase's progress (embedding texts, pseudo-labelling, validating) as plain lines through ``log``:
    its first report, then at most one every ``every_s`` seconds, and its end — so output redirected to a
    file (where tqdm's bars are not) shows a long phase moving. ``clock`` is for tests."""

    def __init__(self, log, *, every_s: float = 10.0, clock=None):
        import time

        self.log, self.every_s, self.clock = log, every_s, clock or time.monotonic
        self.last: dict[str, float] = {}

    def on_phase(self, phase, done, total):
        now = self.clock()
        first = phase not in self.last
        if not (first or done >= total or now - self.last[phase] >= self.every_s):
            return
        self.last[phase] = now
        share = f" ({100 * done // total} %)" if total else ""  # floor: 100 % only when done
        self.log(f"{phase}: {done:,}/{total:,}{share}")
        if done >= total:
            del self.last[phase]


def phase_reporter(callbacks, phase: str):
    """``on_progress(done, total)`` for a phase, passed on to every callback (``Callback.on_phase``)."""
    def report(done: int, total: int) -> None:
        for callback in callbacks:
            callback.on_phase(phase, done, total)

    return report


def best_summary(state: TrainingState, select_by: str) -> str:
    """What the kept model was chosen on, for a run's log: the step of the best validation accuracy (its
    loss beside it) or of the lowest validation loss."""
    loss = state.best_validation if state.best_validation is not None else "n/a"
    if select_by in ("accuracy", "ranking") and state.best_selection is not None:
        figure = "ranking accuracy" if select_by == "ranking" else "accuracy"
        return (f"kept step {state.best_step}: best validation {figure} {-state.best_selection:.4f} "
                f"(validation loss {loss})")
    return f"best validation loss {loss} at step {state.best_step}"
