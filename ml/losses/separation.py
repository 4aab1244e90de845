"""Separation loss of multi-level ranking (QuantiDCE, Ye et al. ACL 2021, eq. 2; SelF-Eval variant).

For each context with level centroids c_1..c_L (c_l = mean score of level l, levels by rising
quality) and every pair i < j, with weight w = j − i and margin λ:

    QuantiDCE:  L_sep = Σ_{i<j} max(0, w·λ − |c_j − c_i|)          (d = L1 distance, λ = 0.3)
    SelF-Eval:  L_sep = Σ_{i<j} max(0, w·λ − (c_j − c_i))          (``signed=True``: the difference,
                                                                     so it also orders the levels)

averaged over contexts."""
from __future__ import annotations

import torch
from torch import nn


def level_pairs(levels: int, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    i, j = torch.triu_indices(levels, levels, offset=1, device=device)
    return i, j


def separation_loss(scores: torch.Tensor, *, margin: float = 0.3, signed: bool = False) -> torch.Tensor:
    """scores: (contexts, levels, samples) -> scalar."""
    centroids = scores.mean(dim=-1)
    i, j = level_pairs(centroids.shape[-1], device=scores.device)
    gap = centroids[:, j] - centroids[:, i]
    distance = gap if signed else gap.abs()
    weight = (j - i).to(scores.dtype)
    return torch.relu(weight * margin - distance).sum(dim=-1).mean()


class SeparationLoss(nn.Module):
    def __init__(self, margin: float = 0.3, signed: bool = False):
        super().__init__()
        self.margin, self.signed = margin, signed

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        return separation_loss(scores, margin=self.margin, signed=self.signed)
