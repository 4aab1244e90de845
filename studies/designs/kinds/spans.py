"""Span annotation: the rater marks words of a response (or of a dialogue's turns) and gives each marked
span one of the criterion's labels ("Mark the words that are wrong: factual error, contradiction, unsafe").

The criterion's ``options``: ``{"labels": [...], "overlap": false}`` (2 to 12 labels, as the label kinds;
``overlap``: whether two spans may share characters). An answer is a list of spans, each
``{"start": int, "end": int, "label": str}``: character offsets [start, end) into the target's stored text
(a response's ``text``; in a dialogue-unit or chat study each span also names its ``turn``, the 0-based
index into the conversation's turns, and the offsets are into that turn's text). ``[]`` is "nothing to
mark". Stored in ``Rating.spans``, sorted. The rater page tokenises the text (``analysis.spans.tokens``'
rule) and the rater picks words with the mouse, a finger or the keyboard (``static/concord/rater_spans.js``);
the server checks every span against the stored text, so an API answer is checked alike.

Check and practice rules expect spans with a tolerance: ``{"response": 1, "spans": {"spans": [...],
"slack": 2, "min_overlap": 0.5}}`` (or a bare list: exact match); see ``analysis.spans.spans_match``.
Agreement and aggregation: ``studies.analysis.spans``; the report section: ``studies.reports.span_report``.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext

from studies.analysis.spans import TOKEN, tokens
from studies.designs.common import field_name
from studies.designs.kinds.base import JudgementKind, RatingsDesign
from studies.designs.kinds.labels import labels_clean
from studies.designs.kinds.span_texts import criterion_docs, marks_turns, target_docs, target_speakers

if TYPE_CHECKING:
    from studies.designs.common import Errors
    from studies.models import Criterion, Study

MAX_SPANS = 50
SPAN_KEYS = {"start", "end", "label", "turn"}


def _options(criterion: Criterion) -> tuple[list[str], bool]:
    options = criterion.options or {}
    return list(options.get("labels") or []), bool(options.get("overlap", False))


def spans_problem(given: Any, docs: Mapping[int | None, str], labels: Sequence[str], *, overlap: bool,
                  turns: bool) -> tuple[list[dict[str, Any]] | None, str | None]:
    """The spans cleaned and sorted, or (None, the first problem naming the span, its field and value).
    ``docs``: the target's texts by turn (None for a response)."""
    if isinstance(given, str):
        try:
            given = json.loads(given) if given.strip() else None
        except ValueError:
            return None, gettext("the marked spans could not be read (reload the page and mark them again)")
    if given is None:
        return None, gettext("mark the spans, or confirm there is nothing to mark")
    if not isinstance(given, list):
        return None, gettext("give a list of spans ([] for none)")
    if len(given) > MAX_SPANS:
        return None, gettext("at most %(most)s spans, got %(n)s") % {"most": MAX_SPANS, "n": len(given)}
    cleaned: list[dict[str, Any]] = []
    for n, span in enumerate(given, start=1):
        if not isinstance(span, Mapping):
            return None, gettext("span %(n)s: give start, end and label") % {"n": n}
        unknown = sorted(set(span) - SPAN_KEYS - {"text"})
        if unknown:
            return None, gettext("span %(n)s: unknown key %(key)s") % {"n": n, "key": repr(unknown[0])}
        turn = span.get("turn")
        if turns:
            if isinstance(turn, bool) or not isinstance(turn, int) or turn not in docs:
                return None, (gettext("span %(n)s: turn %(turn)s is not a turn of this dialogue (0 to %(last)s)")
                              % {"n": n, "turn": repr(turn), "last": len(docs) - 1})
        elif turn is not None:
            return None, gettext("span %(n)s: a response has no turns (turn %(turn)s)") % {"n": n, "turn": repr(turn)}
        text = docs.get(turn if turns else None, "")
        for name in ("start", "end"):
            value = span.get(name)
            if isinstance(value, bool) or not isinstance(value, int):
                return None, (gettext("span %(n)s: %(name)s must be a whole number, got %(value)s")
                              % {"n": n, "name": name, "value": repr(value)})
        start, end = int(span["start"]), int(span["end"])
        if not 0 <= start < end <= len(text):
            return None, (gettext("span %(n)s: [%(start)s, %(end)s) is out of range (the text has %(length)s characters; "
                                  "0 ≤ start < end ≤ its length)")
                          % {"n": n, "start": start, "end": end, "length": len(text)})
        if not TOKEN.search(text[start:end]):
            return None, gettext("span %(n)s: [%(start)s, %(end)s) marks only spaces") % {"n": n, "start": start, "end": end}
        label = span.get("label")
        if label not in labels:
            return None, (gettext("span %(n)s: label “%(label)s” is not one of the labels (%(labels)s)")
                          % {"n": n, "label": str(label)[:30], "labels": ", ".join(labels)})
        cleaned.append({**({"turn": turn} if turns else {}), "start": start, "end": end, "label": label})
    cleaned.sort(key=lambda s: (s.get("turn", -1), s["start"], s["end"], s["label"]))
    for a, b in zip(cleaned, cleaned[1:], strict=False):
        same_turn = a.get("turn") == b.get("turn")
        if same_turn and (a["start"], a["end"], a["label"]) == (b["start"], b["end"], b["label"]):
            return None, (gettext("the span [%(start)s, %(end)s) “%(label)s” is given twice")
                          % {"start": a["start"], "end": a["end"], "label": a["label"]})
        if same_turn and not overlap and b["start"] < a["end"]:
            return None, (gettext("the spans [%(start)s, %(end)s) and [%(start2)s, %(end2)s) overlap: this question "
                                  "takes spans that do not overlap")
                          % {"start": a["start"], "end": a["end"], "start2": b["start"], "end2": b["end"]})
    return cleaned, None


def expected_spans_clean(expected: Any, labels: Sequence[str]) -> tuple[dict[str, Any] | None, str | None]:
    """A check rule's expected spans and tolerance: a list of spans (exact match), or
    ``{"spans": [...], "slack": characters 0..50, "min_overlap": 0 < ratio <= 1}``."""
    rule = {"spans": expected} if isinstance(expected, list) else expected
    if not isinstance(rule, Mapping) or not isinstance(rule.get("spans"), list):
        return None, 'give the expected spans: [{"start": 0, "end": 4, "label": "…"}] ([] for none)'
    unknown = sorted(set(rule) - {"spans", "slack", "min_overlap"})
    if unknown:
        return None, f"unknown key {unknown[0]!r} (spans, slack, min_overlap)"
    slack, ratio = rule.get("slack", 0), rule.get("min_overlap", 1.0)
    if isinstance(slack, bool) or not isinstance(slack, int) or not 0 <= slack <= 50:
        return None, f"slack must be a whole number of characters from 0 to 50, got {slack!r}"
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 < ratio <= 1:
        return None, f"min_overlap must be a ratio above 0 and at most 1, got {ratio!r}"
    spans = []
    for n, span in enumerate(rule["spans"], start=1):
        ok = isinstance(span, Mapping) and all(isinstance(span.get(k), int) and not isinstance(span.get(k), bool)
                                               for k in ("start", "end"))
        if not ok or not 0 <= span["start"] < span["end"]:
            return None, f"expected span {n}: give whole numbers 0 ≤ start < end"
        if span.get("label") not in labels:
            return None, f"expected span {n}: label “{str(span.get('label'))[:30]}” is not one of ({', '.join(labels)})"
        spans.append({"start": span["start"], "end": span["end"], "label": span["label"]})
    return {"spans": sorted(spans, key=lambda s: (s["start"], s["end"], s["label"])), "slack": slack,
            "min_overlap": float(ratio)}, None


def simulated_spans(docs: Mapping[int | None, str], labels: Sequence[str], quality: float,
                    turns: bool) -> list[dict[str, Any]]:
    """A simulated rater's spans: none at quality -0.5 or above; below, the first word of the text (the
    last turn in a dialogue), labelled further down the labels the lower the quality."""
    if quality >= -0.5 or not docs:
        return []
    turn = max((t for t in docs if docs[t].strip()), default=None, key=lambda t: -1 if t is None else t)
    match = TOKEN.search(docs.get(turn, "")) if turn is not None or not turns else None
    if match is None:
        return []
    label = labels[min(len(labels) - 1, max(0, int(math.floor(-quality)) - 1))]
    return [{**({"turn": turn} if turns else {}), "start": match.start(), "end": match.end(), "label": label}]


def text_pieces(text: str) -> list[dict[str, Any]]:
    """The text as tokens (``analysis.spans.tokens``) and the spaces between them, each with its offsets."""
    pieces: list[dict[str, Any]] = []
    at = 0
    for start, end in tokens(text):
        if start > at:
            pieces.append({"text": text[at:start], "start": at, "end": start, "token": False})
        pieces.append({"text": text[start:end], "start": start, "end": end, "token": True})
        at = end
    if at < len(text):
        pieces.append({"text": text[at:], "start": at, "end": len(text), "token": False})
    return pieces


class SpanKind(JudgementKind):
    key = "spans"
    label = "Marked spans with labels (span annotation)"
    template = "raters/kinds/spans.html"
    check_rule_key = "spans"
    numeric = False
    rater_task = "mark words and label them"
    own_report = True  # studies.reports.span_views
    long_text = True  # the spans' JSON: autosave keeps it whole, as a free text's

    def options_clean(self, options: Any) -> dict[str, Any]:
        errors: dict[str, str] = {}
        labels = labels_clean(options, errors)
        overlap = options.get("overlap", False) if isinstance(options, Mapping) else False
        if not isinstance(overlap, bool):
            errors["options.overlap"] = f"must be true or false, got {overlap!r}"
        if errors:
            raise ValidationError(errors)
        return {"labels": labels, "overlap": overlap}

    def row_context(self, design: RatingsDesign, config: Mapping[str, Any], criterion: Criterion) -> dict[str, Any]:
        labels, overlap = _options(criterion)
        return {"labels": labels, "overlap": overlap, "span_labels_json": json.dumps(labels)}

    def target_context(self, study: Study, criterion: Criterion, target_ids: Sequence[int]) -> dict[int, Any]:
        """Each target's markable texts for the rater page, cut into tokens on the server (the offsets the
        page posts are the stored text's, whatever the browser's string indexing):
        {"span_docs": [{"turn", "speaker", "pieces": [{"text", "start", "end", "token"}]}]}."""
        docs, speakers = target_docs(study, target_ids), target_speakers(study, target_ids)
        return {t: {"span_docs": [{"turn": "" if turn is None else turn,
                                   "speaker": speakers.get(t, {}).get(turn, "") if turn is not None else "",
                                   "pieces": text_pieces(text)} for turn, text in docs.get(t, {}).items()]}
                for t in target_ids}

    def criterion_parse(self, design: RatingsDesign, config: Mapping[str, Any], criterion: Criterion,
                        post: Mapping[str, Any], order: Sequence[int]) -> tuple[dict[int, Any], Errors]:
        docs, labels, overlap = criterion_docs(criterion, order), *_options(criterion)
        turns = marks_turns(criterion.study)
        answers: dict[int, Any] = {}
        errors: Errors = {}
        for target in order:
            name = field_name(target, criterion.name, order)
            raw = post.get(name)
            spans, problem = spans_problem(raw if raw not in (None, "") else None, docs.get(target, {}), labels,
                                           overlap=overlap, turns=turns)
            if problem:
                errors[name] = problem
            else:
                answers[target] = spans
        return answers, errors

    def criterion_problems(self, design: RatingsDesign, config: Mapping[str, Any], criterion: Criterion,
                           answers: Mapping[int, Any], order: Sequence[int]) -> Errors:
        docs, labels, overlap = criterion_docs(criterion, list(answers)), *_options(criterion)
        turns = marks_turns(criterion.study)
        return {f"{criterion.name}.{target}": problem for target, given in answers.items()
                if (problem := spans_problem(given, docs.get(target, {}), labels, overlap=overlap, turns=turns)[1])}

    def rating_fields(self, design: RatingsDesign, answer: Any) -> dict[str, Any]:
        spans = json.loads(answer) if isinstance(answer, str) else answer
        return {"value": None, "rank": None,
                "spans": sorted((dict(s) for s in spans), key=lambda s: (s.get("turn", -1), s["start"], s["end"]))}

    def stored_fields(self) -> tuple[str, ...]:
        return ("spans",)

    def form_value(self, design: RatingsDesign, stored: Mapping[str, Any]) -> str:
        spans = stored.get("spans")
        return "" if spans is None else json.dumps(spans)

    def check_value(self, design: RatingsDesign, stored: Mapping[str, Any]) -> Any:
        spans = stored.get("spans")
        return None if spans is None else tuple((s["start"], s["end"], s["label"]) for s in spans)

    def expected_clean(self, criterion: Criterion, expected: Any) -> tuple[Any, str | None]:
        return expected_spans_clean(expected, _options(criterion)[0])

    def simulate(self, criterion: Criterion, quality: float, rng: Any) -> Any:
        """Without the text, a simulated rater marks nothing (``target_simulate`` reads the text)."""
        return []

    def target_simulate(self, criterion: Criterion, target_id: int, quality: float, rng: Any) -> Any:
        docs = criterion_docs(criterion, [target_id]).get(target_id, {})
        return simulated_spans(docs, _options(criterion)[0], quality, marks_turns(criterion.study))

    def export_text(self, stored: Mapping[str, Any]) -> str:
        spans = stored.get("spans")
        if spans is None:
            return ""
        return "; ".join(f"{'t' + str(s['turn']) + ' ' if 'turn' in s else ''}[{s['start']},{s['end']}) {s['label']}"
                         for s in spans) or "no spans"


SPANS = SpanKind()
