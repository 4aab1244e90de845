"""BERT's masking rule for masked language modelling (Devlin et al. 2019, Sec. 3.1), as MDD-Eval's
student uses it on context ∘ response: each non-special, non-padding token is chosen with probability
``probability`` (15 %); a chosen token becomes [MASK] with probability 0.8, a random vocabulary token
with 0.1, and stays as it is with 0.1; the label is the original token at chosen positions and −100
elsewhere. Only training batches are masked — never the inputs a score is computed from (the released
MDD-Eval code masked at inference too)."""
from __future__ import annotations

import torch

IGNORE = -100


def mask_tokens(input_ids: torch.Tensor, maskable: torch.Tensor, *, mask_id: int, vocab_size: int,
                probability: float = 0.15, generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``maskable`` (bool, same shape): False at special tokens and padding. Returns (masked ids, labels)."""
    def draw(p: float) -> torch.Tensor:
        return torch.rand(input_ids.shape, generator=generator) < p

    chosen = draw(probability) & maskable
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, IGNORE))
    replaced = chosen & draw(0.8)
    randomised = chosen & ~replaced & draw(0.5)  # half of the remaining 20 %: 10 % of all chosen
    masked = input_ids.clone()
    masked[replaced] = mask_id
    masked[randomised] = torch.randint(vocab_size, input_ids.shape, generator=generator)[randomised]
    return masked, labels
