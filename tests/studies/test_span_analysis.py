"""Span annotation statistics (studies.analysis.spans, span_agreement) against trusted libraries and hand
counts: token-level α (krippendorff), Fleiss' κ (statsmodels), Cohen's κ (scikit-learn), pairwise F1,
majority spans and the check tolerance."""
import math

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from studies.analysis.span_agreement import token_agreement, token_table
from studies.analysis.spans import (
    NONE,
    majority_spans,
    overlap_ratio,
    pairwise_f1,
    spans_match,
    token_labels,
    tokens,
)

TEXTS = {
    "d1": "The cat sat on the mat, then it flew to Paris.",
    "d2": "I love pizza. Pizza is a vegetable!",
    "d3": "Sure, I can help you with that booking today.",
}
LABELS = ["error", "unsafe"]


def random_annotations(seed: int, raters: int, *, docs=TEXTS) -> list[dict]:
    """Each rater marks random whole tokens with random labels (no overlaps)."""
    rng = np.random.default_rng(seed)
    out = []
    for doc, text in docs.items():
        offsets = tokens(text)
        for r in range(raters):
            spans, i = [], 0
            while i < len(offsets):
                if rng.random() < 0.3:
                    j = min(len(offsets), i + int(rng.integers(1, 4)))
                    spans.append((offsets[i][0], offsets[j - 1][1], LABELS[int(rng.integers(0, 2))]))
                    i = j + 1
                else:
                    i += 1
            out.append({"doc": doc, "rater": f"r{r}", "spans": spans})
    return out


def test_span_tokens_are_words_and_punctuation_with_offsets():
    text = "Hello, world!"
    assert [text[s:e] for s, e in tokens(text)] == ["Hello", ",", "world", "!"]


def test_span_token_labels_take_an_overlapping_span_else_none():
    text = "one two three four"
    assert token_labels(text, [(4, 9, "error")]) == [NONE, "error", "error", NONE]  # "two t" touches "three"
    assert token_labels(text, []) == [NONE] * 4


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("raters", [2, 3, 4])
def test_span_token_alpha_matches_krippendorff_package(seed, raters):
    annotations = random_annotations(seed, raters)
    ours = token_agreement(TEXTS, annotations, LABELS)
    table = token_table(TEXTS, annotations)
    codes = {NONE: 0, "error": 1, "unsafe": 2}
    units = sorted(table["unit"].unique())
    rater_ids = sorted(table["rater"].unique())
    data = np.full((len(rater_ids), len(units)), np.nan)
    for unit, rater, label in table.itertuples(index=False):
        data[rater_ids.index(rater), units.index(unit)] = codes[label]
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert ours["alpha"] == pytest.approx(expected, abs=1e-9)


def test_span_token_alpha_with_missing_raters_matches_krippendorff_package():
    annotations = [a for a in random_annotations(7, 4) if not (a["doc"] == "d2" and a["rater"] == "r3")]
    ours = token_agreement(TEXTS, annotations, LABELS)
    table = token_table(TEXTS, annotations)
    units, raters = sorted(table["unit"].unique()), sorted(table["rater"].unique())
    data = np.full((len(raters), len(units)), np.nan)
    for unit, rater, label in table.itertuples(index=False):
        data[raters.index(rater), units.index(unit)] = {NONE: 0, "error": 1, "unsafe": 2}[label]
    assert ours["alpha"] == pytest.approx(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"),
                                          abs=1e-9)
    assert ours["cohen_kappa"] is None  # four raters: Cohen's κ does not apply


@pytest.mark.parametrize("seed", [4, 5])
def test_span_token_cohen_kappa_matches_sklearn_for_two_raters(seed):
    annotations = random_annotations(seed, 2)
    ours = token_agreement(TEXTS, annotations, LABELS)
    a = [label for doc in TEXTS for label in token_labels(TEXTS[doc], next(
        x["spans"] for x in annotations if x["doc"] == doc and x["rater"] == "r0"))]
    b = [label for doc in TEXTS for label in token_labels(TEXTS[doc], next(
        x["spans"] for x in annotations if x["doc"] == doc and x["rater"] == "r1"))]
    assert ours["cohen_kappa"] == pytest.approx(cohen_kappa_score(a, b), abs=1e-9)
    assert ours["raw_agreement"] == pytest.approx(np.mean([x == y for x, y in zip(a, b, strict=True)]), abs=1e-12)


@pytest.mark.parametrize("seed", [8, 9])
def test_span_token_fleiss_kappa_matches_statsmodels(seed):
    annotations = random_annotations(seed, 3)
    ours = token_agreement(TEXTS, annotations, LABELS)
    table = token_table(TEXTS, annotations).assign(unit=lambda f: f["unit"].map(str))
    wide = table.pivot(index="unit", columns="rater", values="label").replace({NONE: 0, "error": 1, "unsafe": 2})
    counts, _ = aggregate_raters(wide.to_numpy(dtype=int), n_cat=3)
    assert ours["fleiss_kappa"] == pytest.approx(fleiss_kappa(counts), abs=1e-9)
    assert "Krippendorff" in ours["method"] and "Fleiss" in ours["method"]


def test_span_pairwise_f1_exact_and_overlapping_hand_counts():
    a = {"doc": "d1", "rater": "a", "spans": [(0, 3, "error"), (8, 11, "error"), (30, 40, "unsafe")]}
    b = {"doc": "d1", "rater": "b", "spans": [(0, 3, "error"), (8, 14, "error"), (30, 40, "error")]}
    exact, overlapping = pairwise_f1([a, b], overlap=False), pairwise_f1([a, b], overlap=True)
    assert exact["f1"] == pytest.approx(1 / 3)  # one of three spans on each side matches exactly
    assert overlapping["f1"] == pytest.approx(2 / 3)  # the second pair overlaps with the same label; the third differs
    assert exact["pairs"] == overlapping["pairs"] == 1


def test_span_pairwise_f1_is_symmetric_and_micro_averaged_over_pairs():
    annotations = random_annotations(11, 3)
    flipped = [{**x, "rater": {"r0": "r2", "r2": "r0"}.get(x["rater"], x["rater"])} for x in annotations]
    for overlap in (False, True):
        assert pairwise_f1(annotations, overlap=overlap)["f1"] == pytest.approx(pairwise_f1(flipped, overlap=overlap)["f1"])
    assert pairwise_f1(annotations, overlap=False)["pairs"] == 3 * len(TEXTS)
    assert pairwise_f1(annotations, overlap=True)["f1"] >= pairwise_f1(annotations, overlap=False)["f1"]


def test_span_pairwise_f1_without_pairs_or_spans():
    assert pairwise_f1([{"doc": "d1", "rater": "a", "spans": []}], overlap=False)["f1"] is None
    two_empty = [{"doc": "d1", "rater": r, "spans": []} for r in "ab"]
    assert pairwise_f1(two_empty, overlap=True)["f1"] == 1.0


def test_span_majority_joins_adjacent_tokens_and_drops_ties():
    text = "The cat sat on the mat"
    spans = [[(4, 11, "error")], [(4, 7, "error")], [(8, 11, "error"), (19, 22, "unsafe")]]
    assert majority_spans(text, spans) == [(4, 11, "error")]  # "cat" 2/3, "sat" 2/3, "mat" 1/3
    assert majority_spans(text, [[(4, 7, "error")], [(4, 7, "unsafe")]]) == []  # a tie is none
    assert majority_spans(text, []) == []


def test_span_check_tolerance_slack_and_overlap_ratio():
    expected = [(4, 7, "error")]
    assert spans_match([(4, 7, "error")], expected)
    assert not spans_match([(3, 7, "error")], expected)
    assert spans_match([(3, 8, "error")], expected, slack=1)
    assert not spans_match([(4, 7, "unsafe")], expected, slack=5)
    assert overlap_ratio((4, 7), (4, 10)) == pytest.approx(0.5)
    assert spans_match([(4, 10, "error")], expected, min_overlap=0.5)
    assert not spans_match([(4, 10, "error")], expected, min_overlap=0.6)
    assert not spans_match([(4, 7, "error"), (10, 12, "error")], expected, slack=3)  # an extra span fails
    assert spans_match([], []) and not spans_match([], expected)


def test_span_agreement_with_nothing_rated():
    out = token_agreement(TEXTS, [], LABELS)
    assert math.isnan(out["alpha"]) and out["tokens"] == 0
