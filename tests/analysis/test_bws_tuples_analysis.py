"""Best-worst tuples (STATISTICS.md §2): tuple generation properties, and split-half reliability
against an independent NumPy/SciPy computation that draws the same random numbers."""
import itertools

import numpy as np
import pytest
from scipy import stats

from studies.analysis.bws import balanced_tuples, group_means_ci, pair_count_sd, pair_counts, split_half_reliability


@pytest.mark.parametrize(("n_items", "size"), [(13, 4), (10, 3), (23, 5), (5, 4), (41, 4)])
def test_every_item_appears_equally_often_in_about_2n_distinct_tuples(n_items, size):
    tuples = balanced_tuples(n_items, size=size, factor=2, seed=3)
    assert tuples.shape == (2 * n_items, size)  # 2N tuples even when size does not divide N
    assert all(len(set(row)) == size for row in tuples.tolist())  # no item twice in a tuple
    assert set(np.bincount(tuples.ravel(), minlength=n_items).tolist()) == {2 * size}


def test_pair_co_occurrence_is_spread_better_than_a_single_shuffle_and_sd_matches_the_matrix():
    n = 30
    kept = balanced_tuples(n, size=4, factor=2, tries=30, seed=7)
    single = [balanced_tuples(n, size=4, factor=2, tries=1, seed=s) for s in range(30)]
    assert pair_count_sd(kept, n) == pytest.approx(pair_counts(kept, n).std(), abs=1e-12)
    assert pair_count_sd(kept, n) <= np.median([pair_count_sd(t, n) for t in single])
    counts = pair_counts(kept, n)
    assert counts.sum() == 2 * n * 6  # six pairs per tuple
    # most pairs meet at most twice: no pair is concentrated in many tuples
    assert counts.max() <= 3


def test_the_same_seed_gives_the_same_tuples():
    assert (balanced_tuples(17, seed=5) == balanced_tuples(17, seed=5)).all()
    assert not (balanced_tuples(17, seed=5) == balanced_tuples(17, seed=6)).all()


def _independent_split_half(items, ranks, tuples, annotations, trials, seed):
    """Split-half written from the definition with NumPy (no pandas): same random draws (one
    uniform per annotation per trial, annotations in order of first appearance), halves by
    alternating within each tuple sorted by the draw, counting scores per half."""
    items, ranks, tuples, annotations = map(np.asarray, (items, ranks, tuples, annotations))
    _, first = np.unique(annotations, return_index=True)
    order_ann = annotations[np.sort(first)]
    ann_tuple = np.array([tuples[annotations == a][0] for a in order_ann])
    worst = {a: ranks[annotations == a].max() for a in order_ann}
    rng = np.random.default_rng(seed)
    codes, uniq = np.unique(items, return_inverse=True)[1], np.unique(items)
    rs, ps = [], []
    for _ in range(trials):
        key = rng.random(len(order_ann))
        idx = np.lexsort((key, ann_tuple))
        half_of = {}
        for t in np.unique(ann_tuple):
            members = [order_ann[i] for i in idx if ann_tuple[i] == t]
            for j, a in enumerate(members):
                half_of[a] = j % 2
        scores = []
        for h in (0, 1):
            mask = np.array([half_of[a] == h for a in annotations])
            best = np.bincount(codes[mask], weights=(ranks[mask] == 1), minlength=len(uniq))
            bad = np.bincount(codes[mask], weights=np.array([r == worst[a] for r, a in zip(ranks[mask], annotations[mask], strict=True)]),
                              minlength=len(uniq))
            seen = np.bincount(codes[mask], minlength=len(uniq))
            with np.errstate(invalid="ignore", divide="ignore"):
                scores.append(np.where(seen > 0, (best - bad) / seen, np.nan))
        both = ~np.isnan(scores[0]) & ~np.isnan(scores[1])
        rs.append(stats.spearmanr(scores[0][both], scores[1][both]).statistic)
        ps.append(stats.pearsonr(scores[0][both], scores[1][both]).statistic)
    r = np.mean(rs)
    p = np.mean(ps)
    return r, np.std(rs), p, np.std(ps), 2 * r / (1 + r), 2 * p / (1 + p)


def test_split_half_equals_an_independent_computation_with_the_same_seed():
    rng = np.random.default_rng(11)
    n_items = 24
    quality = rng.normal(size=n_items)
    tuples = balanced_tuples(n_items, size=4, seed=4)
    rows = []
    for t, members in enumerate(tuples):
        for a in range(int(rng.integers(2, 6))):  # unequal numbers of annotations per tuple
            seen = quality[members] + rng.normal(0, 0.8, 4)
            best, worst = members[np.argmax(seen)], members[np.argmin(seen)]
            for m in members:
                rows.append((int(m), 1 if m == best else 4 if m == worst else 2, t, f"{t}-{a}"))
    items, ranks, tuple_ids, annotations = zip(*rows, strict=True)
    ours = split_half_reliability(items, ranks, tuple_ids, annotations, trials=100, seed=9)
    theirs = _independent_split_half(items, ranks, tuple_ids, annotations, trials=100, seed=9)
    got = (ours.spearman_mean, ours.spearman_sd, ours.pearson_mean, ours.pearson_sd, ours.spearman_brown,
           ours.pearson_brown)
    assert got == pytest.approx(theirs, abs=1e-9)
    assert ours.trials == 100 and 0 < ours.spearman_mean < 1


def test_group_means_ci_is_the_t_interval_over_members():
    scores = np.array([0.5, -0.25, 0.0, 1.0, -1.0, 0.25, 0.75])
    groups = np.array(list("aaabbbb"))
    table = group_means_ci(scores, groups)
    for name, values in (("a", scores[:3]), ("b", scores[3:])):
        low, high = stats.t.interval(0.95, len(values) - 1, loc=values.mean(), scale=stats.sem(values))
        assert table.loc[name, "mean"] == pytest.approx(values.mean(), abs=1e-12)
        assert (table.loc[name, "low"], table.loc[name, "high"]) == pytest.approx((low, high), abs=1e-9)
    single = group_means_ci([0.3], ["x"])
    assert np.isnan(single.loc["x", "low"])


def test_every_pair_of_small_design_meets():
    tuples = balanced_tuples(6, size=4, factor=2, seed=0)
    met = {tuple(sorted(p)) for row in tuples.tolist() for p in itertools.combinations(row, 2)}
    assert len(met) == 15  # every one of the 6·5/2 pairs meets at least once
