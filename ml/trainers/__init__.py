"""Training loops for learned metrics: a shared seeded loop with checkpoints (``loop``), its
configuration (``config``), callbacks, and each metric's objectives and stages.

``config`` and ``callbacks`` import no torch, so Django code can validate a configuration and
define a progress callback without loading torch/transformers into a web process; the loop (torch)
is imported on first use of ``Trainer`` / ``latest_checkpoint`` (PEP 562)."""
from ml.trainers.callbacks import Callback, LogProgress, TqdmCallback, TrainingState
from ml.trainers.config import TrainingConfig

__all__ = ["Callback", "LogProgress", "TqdmCallback", "Trainer", "TrainingConfig", "TrainingState", "latest_checkpoint"]


def __getattr__(name: str):
    if name in ("Trainer", "latest_checkpoint"):
        from ml.trainers import loop

        return getattr(loop, name)
    raise AttributeError(f"module 'ml.trainers' has no attribute {name!r}")
