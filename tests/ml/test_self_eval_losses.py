"""SelF-Eval's losses on hand-made tensors with hand-computed values: the signed separation with the
per-dialogue margin λ = 1/(levels − 1), compactness with a mask of the samples present, R-drop; and
the masked forms reduce to QuantiDCE's unmasked ones when nothing is masked."""
import pytest
import torch

from ml.losses import compactness_loss, rdrop_loss, self_eval_mlr_loss, separation_loss
from ml.losses.self_eval_mlr import SelfEvalRankingLoss, dialogue_margins


def grid():
    """Two dialogues by rising quality. Dialogue 0: n = 2 (3 levels), level samples 1/2/1.
    Dialogue 1: n = 1 (2 levels), padded to 3 levels."""
    scores = torch.tensor([[[0.1, 0.0], [0.5, 0.3], [0.6, 0.0]],
                           [[0.2, 0.4], [0.5, 0.0], [0.0, 0.0]]])
    mask = torch.tensor([[[True, False], [True, True], [True, False]],
                         [[True, True], [True, False], [False, False]]])
    return scores, mask


def test_margins_are_one_over_levels_minus_one():
    _, mask = grid()
    assert dialogue_margins(mask).tolist() == pytest.approx([0.5, 1.0])


def test_signed_separation_by_hand():
    scores, mask = grid()
    # dialogue 0: centroids 0.1, 0.4, 0.6; λ = 0.5; pairs (0,1) w1: max(0, .5 − .3) = .2; (0,2) w2: max(0, 1 − .5) = .5;
    # (1,2) w1: max(0, .5 − .2) = .3 → 1.0.  dialogue 1: centroids 0.3, 0.5; λ = 1: max(0, 1 − .2) = .8 → mean .9
    value = separation_loss(scores, margin=dialogue_margins(mask), signed=True, mask=mask)
    assert float(value) == pytest.approx(0.9)
    # a level above a better one is penalised by the full gap (signed), not rewarded as L1 would
    swapped = torch.tensor([[[0.9], [0.1]]])
    assert float(separation_loss(swapped, margin=1.0, signed=True)) == pytest.approx(1.8)
    assert float(separation_loss(swapped, margin=1.0)) == pytest.approx(0.2)


def test_masked_compactness_by_hand():
    scores, mask = grid()
    # dialogue 0: level 1 centroid .4, |.5 − .4| = |.3 − .4| = .1 → max(0, .1 − .05) twice = .1; others single samples.
    # dialogue 1: level 0 centroid .3: .1 each → .1; total (.1 + .1)/2
    assert float(compactness_loss(scores, margin=0.05, mask=mask)) == pytest.approx(0.1)
    # per-level-mean form: dialogue 0 level 1: max(0, .1 − .05) = .05; dialogue 1 level 0: .05 → mean .05
    assert float(compactness_loss(scores, margin=0.05, mask=mask, per_level_mean=True)) == pytest.approx(0.05)


def test_the_mask_of_a_full_grid_changes_nothing():
    scores = torch.rand(3, 4, 5, generator=torch.Generator().manual_seed(0))
    full = torch.ones_like(scores, dtype=torch.bool)
    assert float(separation_loss(scores, margin=0.3, mask=full)) == pytest.approx(float(separation_loss(scores, margin=0.3)))
    assert float(compactness_loss(scores, mask=full)) == pytest.approx(float(compactness_loss(scores)))
    assert float(compactness_loss(scores, mask=full, per_level_mean=True)) == pytest.approx(
        float(compactness_loss(scores, per_level_mean=True)))


def test_self_eval_mlr_is_separation_plus_compactness_and_has_gradients():
    scores, mask = grid()
    scores.requires_grad_(True)
    separation, compactness = self_eval_mlr_loss(scores, mask, compactness_margin=0.05)
    assert (float(separation.detach()), float(compactness.detach())) == pytest.approx((0.9, 0.1))
    total, parts = SelfEvalRankingLoss(0.05)(scores, mask)
    total.backward()
    assert float(total.detach()) == pytest.approx(1.0) and parts == pytest.approx({"separation": 0.9, "compactness": 0.1})
    assert scores.grad[~mask].abs().sum() == 0  # padding gets no gradient
    # the ideal scores (n − i)/n meet every margin exactly: no separation loss
    ideal = torch.tensor([[[0.0], [0.5], [1.0]]])
    assert float(self_eval_mlr_loss(ideal, torch.ones_like(ideal, dtype=torch.bool))[0]) == 0.0


def test_rdrop_by_hand():
    first = torch.tensor([[[0.5, 0.2]], [[0.1, 0.9]]])
    second = torch.tensor([[[0.3, 0.2]], [[0.4, 0.0]]])
    mask = torch.tensor([[[True, True]], [[True, False]]])
    # dialogue 0: .04 + 0; dialogue 1: .09 (the second sample is padding) → mean .065
    assert float(rdrop_loss(first, second, mask)) == pytest.approx(0.065)
    assert float(rdrop_loss(torch.tensor([0.5, 0.1]), torch.tensor([0.2, 0.1]))) == pytest.approx(0.09)
