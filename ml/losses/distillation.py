"""Knowledge-distillation loss of QuantiDCE's fine-tuning stage (Ye et al. ACL 2021, eq. 6; TinyBERT,
Jiao et al. 2020), teacher = a frozen copy of the stage-1 model:

    L_kd = Σ_m MSE(H_s[m], H_t[g(m)]) + Σ_m MSE(A_s[m], A_t[g(m)]) + MSE(ŝ_s, ŝ_t)

H = hidden states including the embedding output (index 0), A = attention maps, ŝ = predicted
scores; g maps each student layer to a teacher layer (identity for same-depth models; for a smaller
student, evenly spaced teacher layers: g(m) = m · T/S). A ``projection`` maps student hidden states
to the teacher's width when they differ (TinyBERT's W_h)."""
from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import nn


def uniform_layer_map(student_layers: int, teacher_layers: int) -> list[int]:
    """Teacher layer for each student layer 0..S (0 = embeddings): g(m) = m · T / S."""
    if teacher_layers % student_layers:
        raise ValueError(f"teacher depth {teacher_layers} is not a multiple of student depth {student_layers}")
    step = teacher_layers // student_layers
    return [m * step for m in range(student_layers + 1)]


def distillation_loss(student_hidden: Sequence[torch.Tensor], teacher_hidden: Sequence[torch.Tensor],
                      student_attentions: Sequence[torch.Tensor], teacher_attentions: Sequence[torch.Tensor],
                      student_score: torch.Tensor, teacher_score: torch.Tensor, *,
                      layer_map: Sequence[int] | None = None,
                      projection: Callable[[torch.Tensor], torch.Tensor] | None = None) -> torch.Tensor:
    """Hidden-state lists have S+1 / T+1 entries (embeddings first), attention lists S / T."""
    layer_map = list(layer_map) if layer_map is not None else uniform_layer_map(len(student_attentions),
                                                                                len(teacher_attentions))
    if len(layer_map) != len(student_hidden):
        raise ValueError(f"layer_map has {len(layer_map)} entries for {len(student_hidden)} student hidden states")
    project = projection or (lambda h: h)
    hidden = sum(F.mse_loss(project(h), teacher_hidden[t].detach()) for h, t in zip(student_hidden, layer_map, strict=True))
    # attention maps exist per transformer layer (no embeddings entry): layer m ↔ teacher layer g(m)
    attention = sum(F.mse_loss(a, teacher_attentions[t - 1].detach())
                    for a, t in zip(student_attentions, layer_map[1:], strict=True))
    return hidden + attention + F.mse_loss(student_score, teacher_score.detach())


class DistillationLoss(nn.Module):
    def __init__(self, layer_map: Sequence[int] | None = None, projection: nn.Module | None = None):
        super().__init__()
        self.layer_map = layer_map
        self.projection = projection

    def forward(self, student_hidden, teacher_hidden, student_attentions, teacher_attentions, student_score,
                teacher_score) -> torch.Tensor:
        return distillation_loss(student_hidden, teacher_hidden, student_attentions, teacher_attentions,
                                 student_score, teacher_score, layer_map=self.layer_map, projection=self.projection)
