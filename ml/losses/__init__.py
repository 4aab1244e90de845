"""Losses for learned dialogue metrics, one per file: a pure tensor function (formula and paper in
its docstring) and a thin ``nn.Module`` around it.

Multi-level ranking scores come as a tensor ``scores`` of shape (contexts, levels, samples) with the
levels ordered by rising quality (QuantiDCE: 1 random, 2 adversarial, 3 relevant)."""
from ml.losses.compactness import CompactnessLoss, compactness_loss
from ml.losses.distillation import DistillationLoss, distillation_loss
from ml.losses.mlr import MultiLevelRankingLoss
from ml.losses.ordering import OrderingLoss, ordering_loss
from ml.losses.rdrop import RDropLoss, rdrop_loss
from ml.losses.self_eval_mlr import SelfEvalRankingLoss, self_eval_mlr_loss
from ml.losses.separation import SeparationLoss, separation_loss

__all__ = [
    "CompactnessLoss", "DistillationLoss", "MultiLevelRankingLoss", "OrderingLoss", "SeparationLoss",
    "compactness_loss", "distillation_loss", "ordering_loss", "separation_loss",
    "RDropLoss", "SelfEvalRankingLoss", "rdrop_loss", "self_eval_mlr_loss",
]
