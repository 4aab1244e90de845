"""R-drop consistency loss of SelF-Eval's fine-grained stage (Ma et al. COLING 2022, eq. 5; R-drop,
Liang et al. NeurIPS 2021).

Each input passes through the model twice with dropout on, giving S_first and S_second:

    L_drop = Σ_m Σ_j (S_first^{m,j} − S_second^{m,j})²

summed over the samples of a dialogue; here averaged over the dialogues of the batch (not summed),
like L_mlr's 1/M, so the two terms of L_final = L_mlr + L_drop keep their ratio whatever the batch
size. Scores are (dialogues, levels, samples) with a mask of the samples present, or flat (dialogues
= 1)."""
from __future__ import annotations

import torch
from torch import nn


def rdrop_loss(first: torch.Tensor, second: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    squared = (first - second) ** 2
    if mask is not None:
        squared = squared * mask.to(squared.dtype)
    if squared.dim() == 1:
        return squared.sum()
    return squared.flatten(1).sum(dim=-1).mean()


class RDropLoss(nn.Module):
    def forward(self, first: torch.Tensor, second: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        return rdrop_loss(first, second, mask)
