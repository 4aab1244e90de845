"""Cross-entropy against a target *distribution* (MDD-Eval, Zhang et al. AAAI 2022, Sec. 3.3: the
student learns the teacher's soft pseudo-labels; with one-hot targets it is the teacher's ordinary
cross-entropy):

    L_ce = −(1/B) Σ_b Σ_c q'_bc · log softmax(z_b)_c,   q' = (1 − ε) · q + ε / C

z = logits (B, C), q = target distribution (B, C), ε = label smoothing (0 in the paper; the released
code used 0.1), C = number of classes (3: random, adversarial, relevant)."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def soft_cross_entropy(logits: torch.Tensor, target: torch.Tensor, *, label_smoothing: float = 0.0) -> torch.Tensor:
    if logits.shape != target.shape:
        raise ValueError(f"logits {tuple(logits.shape)} and target {tuple(target.shape)} differ in shape")
    if label_smoothing:
        target = (1 - label_smoothing) * target + label_smoothing / target.shape[-1]
    return -(target * F.log_softmax(logits, dim=-1)).sum(-1).mean()


class SoftCrossEntropyLoss(nn.Module):
    def __init__(self, label_smoothing: float = 0.0):
        super().__init__()
        self.label_smoothing = label_smoothing

    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return soft_cross_entropy(logits, target, label_smoothing=self.label_smoothing)
