"""Masked language modelling on the student's input (MDD-Eval, Zhang et al. AAAI 2022, Sec. 3.3; BERT,
Devlin et al. 2019): 15 % of the tokens of context ∘ response are chosen (``ml.data.mlm_masking``) and
the encoder's MLM head predicts the original token at each of them:

    L_mlm = −(1/|M|) Σ_{i ∈ M} log softmax(W · h_i)_{x_i}

M = the chosen positions (label ≠ −100), x_i = the original token, h_i = the hidden state of the
masked input. It keeps the encoder a language model while it adapts to the augmented domains."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

IGNORE = -100


def masked_lm_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """``logits`` (B, T, V), ``labels`` (B, T) with −100 where no token was chosen. No chosen token: 0."""
    if not bool((labels != IGNORE).any()):
        return logits.sum() * 0.0  # keeps the graph (and the device) without a NaN mean over nothing
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=IGNORE)


class MaskedLMLoss(nn.Module):
    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return masked_lm_loss(logits, labels)
