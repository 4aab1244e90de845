"""Training loops for learned metrics: a shared seeded loop with checkpoints (``loop``), its
configuration (``config``), callbacks, and each metric's objectives and stages."""
from ml.trainers.callbacks import Callback, TqdmCallback, TrainingState
from ml.trainers.config import TrainingConfig
from ml.trainers.loop import Trainer, latest_checkpoint

__all__ = ["Callback", "TqdmCallback", "Trainer", "TrainingConfig", "TrainingState", "latest_checkpoint"]
