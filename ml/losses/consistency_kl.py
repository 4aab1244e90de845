"""Self-training consistency between a pair and its noised copy (MDD-Eval, Zhang et al. AAAI 2022,
Sec. 3.3; the UDA form of Xie et al. 2020):

    L_kl = (1/B) Σ_b KL(p(x_b) ‖ p(x̂_b)) = (1/B) Σ_b Σ_c p_c(x_b) · (log p_c(x_b) − log p_c(x̂_b))

p(x) = softmax(z / τ) of the clean pair's logits — the target, without gradient (``detach_target``,
as in UDA and the released code) — and p(x̂) = softmax(ẑ) of the pair whose response was noised (word
drop/swap or back-translation). τ = 1 is the paper; the released code sharpened the target with
τ = 0.85."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def consistency_kl(clean_logits: torch.Tensor, noised_logits: torch.Tensor, *, temperature: float = 1.0,
                   detach_target: bool = True) -> torch.Tensor:
    if clean_logits.shape != noised_logits.shape:
        raise ValueError(f"clean {tuple(clean_logits.shape)} and noised {tuple(noised_logits.shape)} logits differ")
    target = clean_logits.detach() if detach_target else clean_logits
    log_p = F.log_softmax(target / temperature, dim=-1)
    log_q = F.log_softmax(noised_logits, dim=-1)
    return (log_p.exp() * (log_p - log_q)).sum(-1).mean()


class ConsistencyKLLoss(nn.Module):
    def __init__(self, temperature: float = 1.0, detach_target: bool = True):
        super().__init__()
        self.temperature, self.detach_target = temperature, detach_target

    def forward(self, clean_logits: torch.Tensor, noised_logits: torch.Tensor) -> torch.Tensor:
        return consistency_kl(clean_logits, noised_logits, temperature=self.temperature,
                              detach_target=self.detach_target)
