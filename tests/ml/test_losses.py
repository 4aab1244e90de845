"""Losses on hand-made tensors: values worked out by hand, gradients against the analytic ones, and
the variants (signed separation, per-level-mean compactness, KD layer mapping)."""
import pytest
import torch

from ml.losses import (
    MultiLevelRankingLoss,
    compactness_loss,
    distillation_loss,
    ordering_loss,
    separation_loss,
)
from ml.losses.distillation import uniform_layer_map


def levels(*centroids_and_spread):
    """One context, 3 levels x 2 samples: (c - d, c + d) per level."""
    return torch.tensor([[[c - d, c + d] for c, d in centroids_and_spread]], dtype=torch.float64, requires_grad=True)


def test_separation_is_zero_for_well_separated_levels():
    assert separation_loss(levels((0.1, 0), (0.5, 0), (0.9, 0))).item() == 0.0


def test_separation_value_and_gradient_by_hand():
    scores = levels((0.5, 0), (0.5, 0), (0.6, 0))
    loss = separation_loss(scores, margin=0.3)
    # pairs (1,2): 0.3 - 0 ; (1,3): 0.6 - 0.1 ; (2,3): 0.3 - 0.1  -> 1.0
    assert loss.item() == pytest.approx(1.0)
    loss.backward()
    # d/dc1 = -sign(c2-c1)*(-1)... c1 is below c2 (tie: |.| has zero subgradient) and c3:
    # pair (1,3) pushes c1 down (+1 in the loss gradient), (2,3) pushes c2 down, c3 pulled up (-2);
    # each centroid is the mean of 2 samples, so every sample gets half
    assert scores.grad[0].tolist() == [[0.5, 0.5], [0.5, 0.5], [-1.0, -1.0]]


def test_signed_separation_also_punishes_reversed_levels():
    reversed_levels = levels((0.9, 0), (0.5, 0), (0.1, 0))
    assert separation_loss(reversed_levels).item() == 0.0  # L1 distance cannot see the order
    # signed: (1,2): 0.3 + 0.4 ; (1,3): 0.6 + 0.8 ; (2,3): 0.3 + 0.4 -> 2.8
    assert separation_loss(reversed_levels, signed=True).item() == pytest.approx(2.8)


def test_compactness_per_sample_and_per_level_mean():
    scores = levels((0.5, 0.2), (0.5, 0.05), (0.5, 0.3))
    # per sample: |c - s| = 0.2, 0.05, 0.3 -> relu(d - 0.1) = 0.1 x2, 0 x2, 0.2 x2 -> 0.6
    assert compactness_loss(scores).item() == pytest.approx(0.6)
    # per level mean: the same here because both samples of a level are equally far
    assert compactness_loss(scores, per_level_mean=True).item() == pytest.approx(0.3)
    loss = compactness_loss(scores)
    loss.backward()
    # d/ds of relu(|c - s| - mu) with c = mean: for a 2-sample level, each sample's pull is ±1 (own) ∓1/2 (via c) x2
    assert scores.grad[0, 0].tolist() == pytest.approx([-1.0, 1.0])
    assert scores.grad[0, 1].tolist() == pytest.approx([0.0, 0.0])


def test_ordering_counts_only_inverted_pairs():
    assert ordering_loss(levels((0.1, 0), (0.5, 0), (0.9, 0))).item() == 0.0
    # c = 0.6, 0.4, 0.5: (1,2) 0.2, (1,3) 0.1, (2,3) 0 -> 0.3
    assert ordering_loss(levels((0.6, 0), (0.4, 0), (0.5, 0))).item() == pytest.approx(0.3)


def test_losses_average_over_contexts():
    one = levels((0.5, 0), (0.5, 0), (0.6, 0)).detach()
    two = torch.cat([one, levels((0.1, 0), (0.5, 0), (0.9, 0)).detach()])
    assert separation_loss(two).item() == pytest.approx(separation_loss(one).item() / 2)


def train(loss_fn, raw, steps=300):
    optimiser = torch.optim.SGD([raw], lr=0.5)
    first, parts = loss_fn(torch.sigmoid(raw))
    assert first.item() == pytest.approx(sum(parts.values()))
    for _ in range(steps):
        optimiser.zero_grad()
        total, _ = loss_fn(torch.sigmoid(raw))
        total.backward()
        optimiser.step()
    return first.item(), total.item(), torch.sigmoid(raw).mean(-1)


@pytest.mark.parametrize(("signed", "start"), [
    (False, "slightly ordered"),  # the paper's L1 form: from scores already leaning the right way
    (True, "random"),              # the signed form also recovers contexts that start reversed
])
def test_gradient_descent_on_mlr_separates_and_orders_levels(signed, start):
    noise = 0.1 * torch.randn(6, 3, 5, generator=torch.Generator().manual_seed(0))
    lean = torch.tensor([-0.05, 0.0, 0.05])[None, :, None] if start == "slightly ordered" else 0.0
    raw = (noise * (0.1 if start == "slightly ordered" else 1.0) + lean).requires_grad_()
    first, last, centroids = train(MultiLevelRankingLoss(signed=signed), raw)
    assert last < 0.05 * first
    assert (centroids[:, 1] - centroids[:, 0] > 0.25).all() and (centroids[:, 2] - centroids[:, 1] > 0.25).all()


def test_l1_separation_and_ordering_cancel_on_a_reversed_context():
    """With d = |c_j − c_i|, a context whose levels are reversed is an equilibrium: separation pushes
    the centroids apart in their (wrong) order exactly as hard as ordering pulls them back."""
    scores = levels((0.6, 0), (0.5, 0), (0.4, 0))
    total, _ = MultiLevelRankingLoss()(scores)
    total.backward()
    assert total.item() > 0 and scores.grad.abs().max().item() == pytest.approx(0.0)


def fake_outputs(layers, width=8, heads=2, tokens=4, seed=0):
    generator = torch.Generator().manual_seed(seed)
    hidden = [torch.randn(1, tokens, width, generator=generator) for _ in range(layers + 1)]
    attentions = [torch.softmax(torch.randn(1, heads, tokens, tokens, generator=generator), -1) for _ in range(layers)]
    return hidden, attentions


def test_distillation_is_zero_for_an_identical_student_and_sums_mses_otherwise():
    hidden, attentions = fake_outputs(4)
    score = torch.tensor([0.7])
    assert distillation_loss(hidden, hidden, attentions, attentions, score, score).item() == 0.0
    shifted = [h + 0.5 for h in hidden]
    # every hidden MSE is 0.25 (5 entries: embeddings + 4 layers), attentions equal, score off by 0.1
    value = distillation_loss(shifted, hidden, attentions, attentions, score + 0.1, score).item()
    assert value == pytest.approx(5 * 0.25 + 0.01)


def test_a_smaller_student_learns_from_evenly_spaced_teacher_layers():
    assert uniform_layer_map(2, 6) == [0, 3, 6]
    teacher_hidden, teacher_attn = fake_outputs(6, seed=1)
    student_hidden = [teacher_hidden[t].clone().requires_grad_() for t in (0, 3, 6)]
    student_attn = [teacher_attn[t - 1].clone() for t in (3, 6)]
    score = torch.tensor([0.4])
    loss = distillation_loss(student_hidden, teacher_hidden, student_attn, teacher_attn, score, score)
    assert loss.item() == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="not a multiple"):
        uniform_layer_map(4, 6)


def test_distillation_gradients_reach_the_student_only():
    teacher_hidden, teacher_attn = fake_outputs(2, seed=2)
    teacher_hidden = [h.requires_grad_() for h in teacher_hidden]
    student_hidden = [torch.zeros_like(h, requires_grad=True) for h in teacher_hidden]
    student_score = torch.tensor([0.0], requires_grad=True)
    loss = distillation_loss(student_hidden, teacher_hidden, teacher_attn, teacher_attn, student_score, torch.tensor([1.0]))
    loss.backward()
    assert student_hidden[1].grad is not None and student_hidden[1].grad.abs().sum() > 0
    assert student_score.grad.item() == pytest.approx(-2.0)  # d/ds (s - 1)^2 at s = 0
    assert all(h.grad is None for h in teacher_hidden)  # the teacher is frozen (detached)
