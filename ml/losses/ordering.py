"""Ordering loss of multi-level ranking (QuantiDCE, Ye et al. ACL 2021, eq. 4).

A worse level's centroid must not exceed a better one's: for levels by rising quality,

    L_ord = Σ_{i<j} max(0, c_i − c_j),

averaged over contexts."""
from __future__ import annotations

import torch
from torch import nn

from ml.losses.separation import level_pairs


def ordering_loss(scores: torch.Tensor) -> torch.Tensor:
    """scores: (contexts, levels, samples) -> scalar."""
    centroids = scores.mean(dim=-1)
    i, j = level_pairs(centroids.shape[-1], device=scores.device)
    return torch.relu(centroids[:, i] - centroids[:, j]).sum(dim=-1).mean()


class OrderingLoss(nn.Module):
    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        return ordering_loss(scores)
