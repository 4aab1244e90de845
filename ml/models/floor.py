"""A head that starts as the untrained cosine and learns a correction on top of it:

    z = w · cos + b + g(h)        (added to one output, ``column``; the others are g(h) alone)

h is the pair representation whose last feature is the cosine of the two embeddings it compares (QuantiDCE's
and MDD-Eval's ``paired`` features, QuantiDCE's ``windows``, SelF-Eval's ``pairs``), g the metric's own MLP
with its last layer initialised to zero, w = ``scale`` and b = −``scale`` at the start. So before any
training step the score orders every input exactly as the cosine does (a σ of an increasing function of it;
for ``windows`` and ``pairs`` the mean of the per-window or per-pair cosines: the untrained blend of the
whole-context and last-turn cosines, or ``cosine_turns``). Training moves w, b and g; the trainer keeps the
starting point among the candidates it selects from (``evaluate_at_start``), so a correction that does not
help on the validation data is not kept."""
from __future__ import annotations

import torch
from torch import nn


class FloorHead(nn.Module):
    def __init__(self, mlp: nn.Sequential, *, scale: float = 10.0, column: int = 0):
        super().__init__()
        self.mlp, self.column = mlp, column
        last = next(m for m in reversed(mlp) if isinstance(m, nn.Linear))
        nn.init.zeros_(last.weight)
        nn.init.zeros_(last.bias)
        self.weight = nn.Parameter(torch.tensor(float(scale)))
        self.bias = nn.Parameter(torch.tensor(-float(scale)))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        out = self.mlp(h)
        base = (self.weight * h[..., -1] + self.bias).to(out.dtype)
        shift = torch.zeros_like(out)
        shift[..., self.column] = base
        return out + shift


def head_for(mlp: nn.Sequential, floor: bool, *, column: int = 0) -> nn.Module:
    """The metric's MLP, or the floor head around it."""
    return FloorHead(mlp, column=column) if floor else mlp
