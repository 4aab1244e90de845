"""SelF-Eval's coarse-stage multi-level ranking loss (Ma et al. COLING 2022, eq. 2-4).

Per dialogue m with n_m turns, levels j = 0..n_m by the number of replaced turns, centroids S^j
(mean score of level j's samples):

    l_sep = Σ_{j<l} max(0, ω·λ + S^l − S^j),   ω = l − j,  λ = 1/(levels − 1) = 1/n_m
    l_com = Σ_j Σ_k max(0, |S^j − S_k^j| − μ),  μ = 0.1
    L_mlr = (1/M) Σ_m (l_sep + l_com)

The separation works on the signed difference (not QuantiDCE's L1 distance), so it also orders the
levels and QuantiDCE's ordering loss is dropped, as the paper does. λ = 1/(levels − 1) makes the
required gaps those of the reference scores (n − i)/n: level i must score at least ω/n above level
i + ω.

Scores come as (dialogues, levels, samples) by **rising quality** (index 0 = every turn replaced;
``ml.data.replacement`` builds that grid) with a mask of the samples present, since dialogues of one
batch differ in length. This module only composes ``separation_loss(signed=True)`` and
``compactness_loss`` from ``ml.losses`` with SelF-Eval's per-dialogue margin."""
from __future__ import annotations

import torch
from torch import nn

from ml.losses.compactness import compactness_loss
from ml.losses.separation import separation_loss


def dialogue_margins(mask: torch.Tensor) -> torch.Tensor:
    """λ_m = 1/(levels_m − 1) from the mask (dialogues, levels, samples); 0 for a one-level dialogue."""
    levels = mask.any(dim=-1).sum(dim=-1).to(torch.float32)
    return torch.where(levels > 1, 1.0 / (levels - 1).clamp(min=1.0), torch.zeros_like(levels))


def self_eval_mlr_loss(scores: torch.Tensor, mask: torch.Tensor, *, compactness_margin: float = 0.1
                       ) -> tuple[torch.Tensor, torch.Tensor]:
    """scores, mask: (dialogues, levels, samples) -> (separation, compactness), each averaged over dialogues."""
    separation = separation_loss(scores, margin=dialogue_margins(mask).to(scores.dtype), signed=True, mask=mask)
    compactness = compactness_loss(scores, margin=compactness_margin, mask=mask)
    return separation, compactness


class SelfEvalRankingLoss(nn.Module):
    def __init__(self, compactness_margin: float = 0.1):
        super().__init__()
        self.compactness_margin = compactness_margin

    def forward(self, scores: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, dict[str, float]]:
        separation, compactness = self_eval_mlr_loss(scores, mask, compactness_margin=self.compactness_margin)
        return separation + compactness, {"separation": float(separation.detach()),
                                          "compactness": float(compactness.detach())}
