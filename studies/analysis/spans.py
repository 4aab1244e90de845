"""Statistics of span annotation (``kinds.spans``): raters mark spans of a text, each with one label.

A *document* is one marked text (a response, or one turn of a dialogue), keyed by anything hashable;
an annotation is one rater's spans on one document, ``(start, end, label)`` character offsets [start, end).

- Tokens: ``\\w+`` runs and single other non-space characters (``tokens``), so offsets always fall
  between characters a rater could select. A token carries a span's label when it overlaps the span
  (``start < span.end`` and ``end > span.start``); every other token is "none" (``NONE``).
- Token-level agreement: every (document, token) is a unit coded by each rater who annotated the
  document (the span label or none). Krippendorff's α at the nominal level (Krippendorff 2011;
  ``agreement.krippendorff_alpha``, as the ``krippendorff`` package), Fleiss' κ over the units with the
  most common number of raters (Fleiss 1971; ``labels.fleiss_kappa``, as statsmodels') and, where exactly
  two raters annotated every document, Cohen's κ = (p_o − p_e) / (1 − p_e) (Cohen 1960; as
  scikit-learn's ``cohen_kappa_score``), with raw agreement beside them. Token-level agreement over
  every token, "none" included, is the convention of Brandsen et al. (2020, "Creating a dataset for
  named entity recognition in the archaeology domain") and is inflated by the many unmarked tokens,
  which is why the span-level F1 below stands beside it.
- Span-level agreement: pairwise F1 between raters (Hripcsak & Rothschild 2005, "Agreement, the
  F-measure, and reliability in information retrieval"; Deleger et al. 2012, "Building gold standard
  corpora for medical natural language processing tasks"): for every pair of raters on a document, one
  rater's spans are the reference and the other's the response; matched spans are counted over all pairs
  (micro-averaged) and F1 = 2 · P · R / (P + R), which is symmetric in the two raters. *Exact* match: the
  same start, end and label (the CoNLL-2003 / ``seqeval`` strict convention); *overlapping* match: the
  same label and at least one shared character (the MUC / SemEval-2013 "partial" convention; Segura-Bedmar
  et al. 2013). Each span matches at most one span of the other rater.
- Aggregated spans: token-level majority vote — a token keeps a label given by more than half of the
  document's raters (else none; ties are none), and adjacent tokens with the same label join into one
  span from the first token's start to the last token's end.
- Check and practice spans (``spans_match``): every expected span is matched, one to one, by a given
  span of the same label whose start and end are each within ``slack`` characters, or whose overlap
  ratio (shared characters / characters in either, Jaccard) is at least ``min_overlap``; no given span
  is left over.

No Django and no pandas: the rater path (check and practice matching, the kind's tokens) imports it;
the token-level coefficients, which need pandas, are ``analysis.span_agreement``.
"""
from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

NONE = "none"
TOKEN = re.compile(r"\w+|[^\w\s]")
Span = tuple[int, int, str]

TOKEN_METHOD = ("token-level Krippendorff's α (nominal; Krippendorff 2011), Fleiss' κ (Fleiss 1971) and, with "
                "two raters, Cohen's κ (Cohen 1960); each token is a span's label or “none”")
SPAN_METHOD = ("span-level pairwise F1 between raters, micro-averaged (Hripcsak & Rothschild 2005; Deleger et "
               "al. 2012): exact match = same start, end and label (CoNLL-2003); overlapping = same label and "
               "at least one shared character (MUC / SemEval-2013 partial match)")
AGGREGATION_METHOD = "token-level majority vote (a label from more than half of the raters), adjacent tokens joined"


def tokens(text: str) -> list[tuple[int, int]]:
    """The [start, end) character offsets of each token of ``text``."""
    return [(m.start(), m.end()) for m in TOKEN.finditer(text)]


def token_labels(text: str, spans: Iterable[Span]) -> list[str]:
    """Each token's label: the first (by start) span overlapping it, else ``NONE``."""
    ordered = sorted(spans)
    out = []
    for start, end in tokens(text):
        out.append(next((label for s, e, label in ordered if start < e and end > s), NONE))
    return out


def annotations_by_doc(annotations: Iterable[Mapping[str, Any]]) -> dict[Hashable, dict[Hashable, list[Span]]]:
    """``[{"doc", "rater", "spans"}]`` -> doc -> rater -> spans (as tuples)."""
    docs: dict[Hashable, dict[Hashable, list[Span]]] = {}
    for a in annotations:
        docs.setdefault(a["doc"], {})[a["rater"]] = [(int(s[0]), int(s[1]), str(s[2])) for s in a["spans"]]
    return docs


def cohen_kappa(a: Sequence[Any], b: Sequence[Any]) -> float:
    """Cohen's κ of two raters' paired codes: (p_o − p_e) / (1 − p_e), p_e = Σ_k p_a(k) p_b(k)."""
    n = len(a)
    if n == 0:
        return math.nan
    p_o = sum(x == y for x, y in zip(a, b, strict=True)) / n
    ca, cb = Counter(a), Counter(b)
    p_e = sum(ca[k] * cb[k] for k in ca) / (n * n)
    return (p_o - p_e) / (1 - p_e) if p_e < 1 else math.nan


def _matches(a: Sequence[Span], b: Sequence[Span], *, overlap: bool) -> int:
    """How many spans of ``a`` match a span of ``b``, one to one (greedy in start order)."""
    left = sorted(b)
    n = 0
    for s, e, label in sorted(a):
        for j, (bs, be, bl) in enumerate(left):
            if bl == label and ((s < be and e > bs) if overlap else (s, e) == (bs, be)):
                n += 1
                del left[j]
                break
    return n


def pairwise_f1(annotations: Iterable[Mapping[str, Any]], *, overlap: bool) -> dict[str, Any]:
    """Micro-averaged pairwise F1 over every pair of raters of every document (see the module docstring):
    {"f1", "pairs", "spans"}; F1 is None without a pair, 1 where neither rater of any pair marked anything."""
    matched_a = matched_b = total_a = total_b = pairs = 0
    for by_rater in annotations_by_doc(annotations).values():
        for ra, rb in itertools.combinations(sorted(by_rater, key=str), 2):
            a, b = by_rater[ra], by_rater[rb]
            pairs += 1
            total_a += len(a)
            total_b += len(b)
            matched_a += _matches(a, b, overlap=overlap)
            matched_b += _matches(b, a, overlap=overlap)
    if not pairs:
        return {"f1": None, "pairs": 0, "spans": 0}
    if total_a + total_b == 0:
        return {"f1": 1.0, "pairs": pairs, "spans": 0}
    precision = matched_a / total_a if total_a else 0.0  # b as the reference: a's spans that b has
    recall = matched_b / total_b if total_b else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"f1": f1, "pairs": pairs, "spans": total_a + total_b}


def majority_spans(text: str, annotations: Sequence[Sequence[Span]]) -> list[Span]:
    """The token-level majority spans of several raters' spans on one text (see the module docstring)."""
    if not annotations:
        return []
    offsets = tokens(text)
    per_rater = [token_labels(text, spans) for spans in annotations]
    n = len(annotations)
    chosen: list[str] = []
    for i in range(len(offsets)):
        label, votes = Counter(r[i] for r in per_rater).most_common(1)[0]
        chosen.append(label if votes * 2 > n else NONE)
    out: list[Span] = []
    for i, label in enumerate(chosen):
        if label == NONE:
            continue
        if out and i > 0 and chosen[i - 1] == label:
            out[-1] = (out[-1][0], offsets[i][1], label)
        else:
            out.append((offsets[i][0], offsets[i][1], label))
    return out


def overlap_ratio(a: tuple[int, int], b: tuple[int, int]) -> float:
    """Shared characters / characters in either span (Jaccard of the two character ranges)."""
    shared = max(0, min(a[1], b[1]) - max(a[0], b[0]))
    union = max(a[1], b[1]) - min(a[0], b[0])
    return shared / union if union > 0 else 0.0


def spans_match(given: Iterable[Sequence[Any]], expected: Iterable[Sequence[Any]], *, slack: int = 0,
                min_overlap: float = 1.0) -> bool:
    """Whether ``given`` spans match ``expected`` ones within the tolerance (see the module docstring)."""
    left = sorted((int(s), int(e), str(label)) for s, e, label in given)
    for s, e, label in sorted((int(s), int(e), str(label)) for s, e, label in expected):
        hit = next((j for j, (gs, ge, gl) in enumerate(left) if gl == label and (
            (abs(gs - s) <= slack and abs(ge - e) <= slack) or overlap_ratio((gs, ge), (s, e)) >= min_overlap)),
            None)
        if hit is None:
            return False
        del left[hit]
    return not left


def label_counts(annotations: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """How many spans each label has over every annotation."""
    return dict(Counter(str(s[2]) for a in annotations for s in a["spans"]))

