"""Separation loss of multi-level ranking (QuantiDCE, Ye et al. ACL 2021, eq. 2; SelF-Eval variant).

For each context with level centroids c_1..c_L (c_l = mean score of level l, levels by rising
quality) and every pair i < j, with weight w = j − i and margin λ:

    QuantiDCE:  L_sep = Σ_{i<j} max(0, w·λ − |c_j − c_i|)          (d = L1 distance, λ = 0.3)
    SelF-Eval:  L_sep = Σ_{i<j} max(0, w·λ − (c_j − c_i))          (``signed=True``: the difference,
                                                                     so it also orders the levels)

averaged over contexts.

``mask`` (contexts, levels, samples), True where a score exists, lets contexts of one batch have
different numbers of levels and samples (SelF-Eval: a dialogue of n turns has n + 1 levels); a pair
counts only when both its levels have a sample. ``margin`` may then be a (contexts,) tensor
(SelF-Eval's λ = 1/(levels − 1) of each dialogue)."""
from __future__ import annotations

import torch
from torch import nn


def level_pairs(levels: int, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    i, j = torch.triu_indices(levels, levels, offset=1, device=device)
    return i, j


def level_centroids(scores: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """c_l = mean of the level's (present) scores: (contexts, levels, samples) -> (contexts, levels)."""
    if mask is None:
        return scores.mean(dim=-1)
    weights = mask.to(scores.dtype)
    return (scores * weights).sum(dim=-1) / weights.sum(dim=-1).clamp(min=1.0)


def separation_loss(scores: torch.Tensor, *, margin: float | torch.Tensor = 0.3, signed: bool = False,
                    mask: torch.Tensor | None = None) -> torch.Tensor:
    """scores: (contexts, levels, samples) -> scalar."""
    centroids = level_centroids(scores, mask)
    i, j = level_pairs(centroids.shape[-1], device=scores.device)
    gap = centroids[:, j] - centroids[:, i]
    distance = gap if signed else gap.abs()
    weight = (j - i).to(scores.dtype)
    if isinstance(margin, torch.Tensor):
        margin = margin.to(scores.dtype).reshape(-1, 1)
    hinge = torch.relu(weight * margin - distance)
    if mask is not None:
        present = mask.any(dim=-1)
        hinge = hinge * (present[:, i] & present[:, j]).to(scores.dtype)
    return hinge.sum(dim=-1).mean()


class SeparationLoss(nn.Module):
    def __init__(self, margin: float = 0.3, signed: bool = False):
        super().__init__()
        self.margin, self.signed = margin, signed

    def forward(self, scores: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        return separation_loss(scores, margin=self.margin, signed=self.signed, mask=mask)
