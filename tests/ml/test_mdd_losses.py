"""MDD-Eval's student loss terms on hand-made tensors with hand-computed values, and BERT's 80/10/10
masking rule on a large draw."""
import math

import pytest
import torch

from ml.data.mlm_masking import IGNORE, mask_tokens
from ml.losses.consistency_kl import ConsistencyKLLoss, consistency_kl
from ml.losses.masked_lm import MaskedLMLoss, masked_lm_loss
from ml.losses.soft_cross_entropy import SoftCrossEntropyLoss, soft_cross_entropy

LN2 = math.log(2)
QUARTER_HALF_QUARTER = torch.tensor([[0.0, LN2, 0.0]])  # softmax = (1/4, 1/2, 1/4)


def test_soft_cross_entropy_hand_values():
    assert soft_cross_entropy(QUARTER_HALF_QUARTER, torch.tensor([[0.0, 1.0, 0.0]])).item() == pytest.approx(LN2)
    # −(½ ln ¼ + ½ ln ½) = 1.5 ln 2
    assert soft_cross_entropy(QUARTER_HALF_QUARTER, torch.tensor([[0.5, 0.5, 0.0]])).item() == pytest.approx(1.5 * LN2)
    # smoothing 0.3: target (0.1, 0.8, 0.1) -> 0.2·2 ln 2 + 0.8 ln 2 = 1.2 ln 2
    smoothed = SoftCrossEntropyLoss(label_smoothing=0.3)(QUARTER_HALF_QUARTER, torch.tensor([[0.0, 1.0, 0.0]]))
    assert smoothed.item() == pytest.approx(1.2 * LN2)
    # batch mean, and one-hot targets equal torch's cross-entropy
    logits = torch.tensor([[2.0, -1.0, 0.5], [0.1, 0.2, 3.0]])
    assert soft_cross_entropy(logits, torch.eye(3)[[0, 2]]).item() == pytest.approx(
        torch.nn.functional.cross_entropy(logits, torch.tensor([0, 2])).item())
    with pytest.raises(ValueError, match="differ in shape"):
        soft_cross_entropy(logits, torch.eye(3))


def test_consistency_kl_hand_values_and_gradient_only_through_the_noised_pair():
    uniform = torch.zeros(1, 3, requires_grad=True)
    clean = QUARTER_HALF_QUARTER.clone().requires_grad_(True)
    # KL((¼, ½, ¼) ‖ ⅓) = ½ ln ¾ + ½ ln 3/2 = ½ ln 9/8
    loss = consistency_kl(clean, uniform)
    assert loss.item() == pytest.approx(0.5 * math.log(9 / 8))
    loss.backward()
    assert clean.grad is None and uniform.grad is not None and uniform.grad.abs().sum() > 0
    assert consistency_kl(QUARTER_HALF_QUARTER, QUARTER_HALF_QUARTER).item() == pytest.approx(0.0, abs=1e-7)
    # temperature ½ sharpens the target to (1/6, 4/6, 1/6): KL vs uniform = −⅓ ln 2 + ⅔ ln 2 = ⅓ ln 2
    sharpened = ConsistencyKLLoss(temperature=0.5)(QUARTER_HALF_QUARTER, torch.zeros(1, 3))
    assert sharpened.item() == pytest.approx(LN2 / 3)
    both = torch.zeros(1, 3)
    both[0, 1] = 1.0
    both.requires_grad_(True)
    consistency_kl(both, torch.zeros(1, 3), detach_target=False).backward()
    assert both.grad.abs().sum() > 0  # without detaching, the clean side learns too


def test_masked_lm_loss_counts_chosen_positions_only():
    logits = torch.zeros(1, 2, 3)
    logits[0, 1] = QUARTER_HALF_QUARTER[0]
    logits[0, 0] = torch.tensor([9.0, -9.0, 0.0])  # not chosen: must not count
    assert masked_lm_loss(logits, torch.tensor([[IGNORE, 1]])).item() == pytest.approx(LN2)
    assert MaskedLMLoss()(logits, torch.tensor([[IGNORE, 0]])).item() == pytest.approx(math.log(4))
    nothing = masked_lm_loss(logits.requires_grad_(True), torch.full((1, 2), IGNORE))
    assert nothing.item() == 0.0 and nothing.requires_grad  # a batch with no chosen token is 0, not NaN


def test_bert_masking_rule_80_10_10():
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(1000, 2000, (200, 500), generator=generator)
    maskable = torch.ones_like(ids, dtype=torch.bool)
    maskable[:, 0] = maskable[:, -1] = False  # [CLS] and [SEP]
    masked, labels = mask_tokens(ids, maskable, mask_id=103, vocab_size=5000, probability=0.15, generator=generator)
    chosen = labels != IGNORE
    assert not chosen[:, 0].any() and not chosen[:, -1].any()
    assert torch.equal(labels[chosen], ids[chosen]) and torch.equal(masked[~chosen], ids[~chosen])
    share = chosen.sum().item() / maskable.sum().item()
    as_mask = (masked[chosen] == 103).float().mean().item()
    unchanged = (masked[chosen] == ids[chosen]).float().mean().item()
    randomised = 1 - as_mask - unchanged
    assert share == pytest.approx(0.15, abs=0.005)
    assert as_mask == pytest.approx(0.8, abs=0.01) and unchanged == pytest.approx(0.1, abs=0.01)
    assert randomised == pytest.approx(0.1, abs=0.01)
