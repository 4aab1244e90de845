"""Compactness loss of multi-level ranking (QuantiDCE, Ye et al. ACL 2021, eq. 3).

Scores of one level should sit within μ of their centroid c_l:

    per sample (the paper, default):      L_comp = Σ_l Σ_k max(0, |c_l − s_lk| − μ)
    per level mean (the released code):   L_comp = Σ_l max(0, mean_k |c_l − s_lk| − μ)

with μ = 0.1, averaged over contexts. ``mask`` (True where a score exists) leaves padded samples out
of the centroids and the sums (SelF-Eval's levels hold different numbers of samples)."""
from __future__ import annotations

import torch
from torch import nn

from ml.losses.separation import level_centroids


def compactness_loss(scores: torch.Tensor, *, margin: float = 0.1, per_level_mean: bool = False,
                     mask: torch.Tensor | None = None) -> torch.Tensor:
    """scores: (contexts, levels, samples) -> scalar."""
    if mask is None:
        distance = (scores - scores.mean(dim=-1, keepdim=True)).abs()
        if per_level_mean:
            return torch.relu(distance.mean(dim=-1) - margin).sum(dim=-1).mean()
        return torch.relu(distance - margin).sum(dim=(-2, -1)).mean()
    weights = mask.to(scores.dtype)
    distance = (scores - level_centroids(scores, mask).unsqueeze(-1)).abs()
    if per_level_mean:
        mean = (distance * weights).sum(dim=-1) / weights.sum(dim=-1).clamp(min=1.0)
        return (torch.relu(mean - margin) * mask.any(dim=-1).to(scores.dtype)).sum(dim=-1).mean()
    return (torch.relu(distance - margin) * weights).sum(dim=(-2, -1)).mean()


class CompactnessLoss(nn.Module):
    def __init__(self, margin: float = 0.1, per_level_mean: bool = False):
        super().__init__()
        self.margin, self.per_level_mean = margin, per_level_mean

    def forward(self, scores: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        return compactness_loss(scores, margin=self.margin, per_level_mean=self.per_level_mean, mask=mask)
