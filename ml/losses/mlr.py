"""Multi-level ranking loss (QuantiDCE, Ye et al. ACL 2021): L_mlr = L_sep + L_comp + L_ord, each
averaged over contexts. Returns the total and the parts (for logging)."""
from __future__ import annotations

import torch
from torch import nn

from ml.losses.compactness import compactness_loss
from ml.losses.ordering import ordering_loss
from ml.losses.separation import separation_loss


class MultiLevelRankingLoss(nn.Module):
    def __init__(self, separation_margin: float = 0.3, compactness_margin: float = 0.1, *,
                 per_level_mean: bool = False, signed: bool = False):
        super().__init__()
        self.separation_margin, self.compactness_margin = separation_margin, compactness_margin
        self.per_level_mean, self.signed = per_level_mean, signed

    def forward(self, scores: torch.Tensor) -> tuple[torch.Tensor, dict[str, float]]:
        parts = {
            "separation": separation_loss(scores, margin=self.separation_margin, signed=self.signed),
            "compactness": compactness_loss(scores, margin=self.compactness_margin, per_level_mean=self.per_level_mean),
            "ordering": ordering_loss(scores),
        }
        total = parts["separation"] + parts["compactness"] + parts["ordering"]
        return total, {k: float(v.detach()) for k, v in parts.items()}
