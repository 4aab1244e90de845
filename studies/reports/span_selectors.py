"""Span criteria (``studies.designs.kinds.spans``) for the report, the exports and the API: each rater's
spans, token-level agreement (α, Fleiss' κ, Cohen's κ with two raters, raw agreement), span-level
pairwise F1 (exact and overlapping), label counts per system and the aggregated (token-level majority)
spans of every target, with each method named and its source (``studies.analysis.spans``).

Only submitted (or approved) assignments a reviewer did not exclude count, and never a check item.
In a dialogue-unit or chat study every turn of the rated dialogue is one marked document.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from django.db.models import QuerySet

from studies.analysis import spans as span_stats
from studies.designs.common import DONE as DONE_STATUSES
from studies.designs.kinds.span_texts import target_docs
from studies.designs.kinds.spans import SPANS
from studies.models import Criterion, Rating, Study
from studies.pseudonyms import rater_pseudonym
from studies.reports import targets

EXAMPLES = 5


def span_criteria(studies: QuerySet[Study]) -> list[Criterion]:
    return list(Criterion.objects.filter(study__in=studies, kind=SPANS.key).select_related("study", "study__experiment")
                .order_by("study_id", "position"))


def _ratings(criterion: Criterion) -> list[dict[str, Any]]:
    ratings = targets.with_targets(Rating.objects.filter(
        criterion=criterion, assignment__status__in=DONE_STATUSES, assignment__excluded=False,
        item__check_kind="", spans__isnull=False))
    return list(ratings.order_by("item__position", "target_id", "assignment_id").values(
        "assignment__rater_id", "item_id", "item__position", "target_id", "target_system", "spans",
        "item__conversation__external_id", "conversation__external_id"))


def _annotations(rows: list[dict[str, Any]], docs: dict[int, dict[Any, str]]) -> list[dict[str, Any]]:
    """One annotation per rating and marked document (each turn of a dialogue)."""
    out = []
    for row in rows:
        for turn in docs.get(row["target_id"], {}):
            spans = [(s["start"], s["end"], s["label"]) for s in row["spans"] if s.get("turn") == turn]
            out.append({"doc": (row["target_id"], turn), "rater": row["assignment__rater_id"], "spans": spans,
                        "system": row["target_system"]})
    return out


def aggregated(annotations: list[dict[str, Any]], texts: dict[Any, str]) -> list[dict[str, Any]]:
    """Each document's token-level majority spans: {"target", "turn", "start", "end", "label", "text", "raters"}."""
    by_doc: dict[Any, list[list[tuple[int, int, str]]]] = defaultdict(list)
    for a in annotations:
        by_doc[a["doc"]].append(a["spans"])
    out = []
    for doc, given in by_doc.items():
        for start, end, label in span_stats.majority_spans(texts[doc], given):
            out.append({"target": doc[0], "turn": doc[1], "start": start, "end": end, "label": label,
                        "text": texts[doc][start:end], "raters": len(given)})
    return out


def criterion_spans(criterion: Criterion) -> dict[str, Any]:
    """One span criterion's figures (see the module docstring)."""
    from studies.analysis import span_agreement

    rows = _ratings(criterion)
    labels = list((criterion.options or {}).get("labels") or [])
    docs = target_docs(criterion.study, {r["target_id"] for r in rows})
    texts = {(target, turn): text for target, by_turn in docs.items() for turn, text in by_turn.items()}
    annotations = _annotations(rows, docs)
    per_system: dict[str, dict[str, Any]] = {}
    for row in rows:
        entry = per_system.setdefault(row["target_system"] or "", {"ratings": 0, "spans": 0, "labels": defaultdict(int)})
        entry["ratings"] += 1
        entry["spans"] += len(row["spans"])
        for s in row["spans"]:
            entry["labels"][s["label"]] += 1
    systems = [{"system": name, "ratings": e["ratings"], "spans_per_rating": e["spans"] / e["ratings"],
                "labels": [e["labels"].get(label, 0) for label in labels]} for name, e in sorted(per_system.items())]
    majority = aggregated(annotations, texts)
    return {
        "study": criterion.study.title, "criterion": criterion.name, "question": criterion.question,
        "labels": labels, "ratings": len(rows), "raters": len({r["assignment__rater_id"] for r in rows}),
        "token": span_agreement.token_agreement(texts, annotations, labels),
        "exact": span_stats.pairwise_f1(annotations, overlap=False),
        "overlap": span_stats.pairwise_f1(annotations, overlap=True),
        "span_method": span_stats.SPAN_METHOD, "aggregation_method": span_stats.AGGREGATION_METHOD,
        "label_counts": [span_stats.label_counts(annotations).get(label, 0) for label in labels],
        "systems": systems, "aggregated": majority, "examples": majority[:EXAMPLES],
    }


def span_report(studies: QuerySet[Study]) -> list[dict[str, Any]]:
    """One entry per span criterion of the studies; [] when there is none."""
    return [criterion_spans(c) for c in span_criteria(studies)]


EXPORT_FIELDS = ("study", "criterion", "source", "rater", "item", "conversation", "system", "target", "turn",
                 "start", "end", "label", "text")


def span_rows(studies: QuerySet[Study], *, raw_ids: bool = False) -> Iterator[dict[str, Any]]:
    """One row per marked span: every rater's (source "rater"), then the aggregated ones (source
    "majority": the token-level majority of the raters)."""
    for criterion in span_criteria(studies):
        rows = _ratings(criterion)
        docs = target_docs(criterion.study, {r["target_id"] for r in rows})
        raw = dict(Rating.objects.filter(criterion=criterion).values_list(
            "assignment__rater_id", "assignment__rater__external_id")) if raw_ids else {}
        where: dict[int, tuple[Any, Any, Any]] = {}
        for row in rows:
            conversation = row["conversation__external_id"] or row["item__conversation__external_id"]
            where[row["target_id"]] = (row["item__position"] + 1, conversation, row["target_system"])
            rater = raw.get(row["assignment__rater_id"]) if raw_ids else rater_pseudonym(
                criterion.study.experiment_id, row["assignment__rater_id"])
            for s in row["spans"]:
                text = docs.get(row["target_id"], {}).get(s.get("turn"), "")
                yield {"study": criterion.study.slug, "criterion": criterion.name, "source": "rater", "rater": rater,
                       "item": row["item__position"] + 1, "conversation": conversation, "system": row["target_system"],
                       "target": row["target_id"], "turn": s.get("turn"), "start": s["start"], "end": s["end"],
                       "label": s["label"], "text": text[s["start"]:s["end"]]}
        texts = {(t, turn): text for t, by_turn in docs.items() for turn, text in by_turn.items()}
        for span in aggregated(_annotations(rows, docs), texts):
            item, conversation, system = where[span["target"]]
            yield {"study": criterion.study.slug, "criterion": criterion.name, "source": "majority", "rater": "",
                   "item": item, "conversation": conversation, "system": system, "target": span["target"],
                   "turn": span["turn"], "start": span["start"], "end": span["end"], "label": span["label"],
                   "text": span["text"]}
