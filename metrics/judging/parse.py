"""A judge's answer, read strictly. The last non-empty line must be the answer form the prompt asked for
(``Score: 4`` with a point of the scale, or ``Label: <one of the labels>``, markdown bold allowed);
anything else is *missing*, with the reason (``refused``, ``unparseable``, ``out_of_scale``, ``empty``),
never a 0 or a guess.

Probability-weighted scores (G-Eval, Liu et al. 2023, eq. 1): where the server returns token
log-probabilities, the score is sum_k p(k) * k over the scale's points, p renormalised over the points
found among the top log-probabilities of the token that carries the score; without them (or when that
token is not found) it is the stated point."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from metrics.judging.prompt import JudgeCriterion

FORM = re.compile(r"^\s*(?:\*\*)?\s*(score|label)\s*(?:\*\*)?\s*[:=]\s*(?:\*\*)?\s*(.*?)\s*(?:\*\*)?\s*$", re.I)
REFUSAL = re.compile(r"\b(i can(?:no|')t|i'm sorry|i am sorry|as an ai|i won't|i will not|unable to (?:rate|evaluate|help))\b",
                     re.I)
NUMBER = re.compile(r"^[+-]?\d+(?:\.0+)?$")


@dataclass(frozen=True)
class Judgment:
    """One parsed answer: ``value`` (the score, or the label's position for labels) or None with
    ``missing`` saying why; ``weighted``: the value is G-Eval's expectation over the points."""

    value: float | None
    label: str = ""
    missing: str = ""
    weighted: bool = False
    stated: float | None = None  # the point the answer wrote (equal to value unless weighted)
    probabilities: dict[str, float] = field(default_factory=dict)


def _missing(text: str) -> Judgment:
    if not text.strip():
        return Judgment(None, missing="empty")
    return Judgment(None, missing="refused" if REFUSAL.search(text) else "unparseable")


def judgment_parse(text: str, criterion: JudgeCriterion, logprobs: Any = None) -> Judgment:
    """The answer ``text`` (and, optionally, the ``choices[0].logprobs`` object) as a Judgment."""
    lines = [line for line in (text or "").splitlines() if line.strip()]
    match = FORM.match(lines[-1]) if lines else None
    if match is None:
        return _missing(text or "")
    kind, raw = match.group(1).lower(), match.group(2).strip().strip('"').strip("'").strip()
    if criterion.is_scale:
        if kind != "score" or not NUMBER.match(raw):
            return Judgment(None, missing="unparseable")
        point = int(float(raw))
        if point not in criterion.points:
            return Judgment(None, missing="out_of_scale")
        weighted = _expectation(logprobs, str(point), criterion.points)
        if weighted is None:
            return Judgment(float(point), stated=float(point))
        value, probabilities = weighted
        return Judgment(value, weighted=True, stated=float(point), probabilities=probabilities)
    if kind != "label":
        return Judgment(None, missing="unparseable")
    by_fold = {label.casefold(): i for i, label in enumerate(criterion.labels)}
    position = by_fold.get(raw.casefold())
    if position is None:
        return Judgment(None, missing="out_of_scale")
    return Judgment(float(position), label=criterion.labels[position], stated=float(position))


def _expectation(logprobs: Any, stated: str, points: tuple[int, ...]) -> tuple[float, dict[str, float]] | None:
    """sum_k p(k) k over ``points`` at the last token that reads ``stated``, from OpenAI's
    ``logprobs.content[i].top_logprobs``; None where the answer carries no usable log-probabilities."""
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list):
        return None
    wanted = {str(p) for p in points}
    for entry in reversed(content):
        if not isinstance(entry, dict) or str(entry.get("token", "")).strip() != stated:
            continue
        top = entry.get("top_logprobs") or [{"token": entry.get("token"), "logprob": entry.get("logprob")}]
        mass: dict[str, float] = {}
        for option in top:
            token = str(option.get("token", "")).strip() if isinstance(option, dict) else ""
            logprob = option.get("logprob") if isinstance(option, dict) else None
            if token in wanted and isinstance(logprob, int | float) and math.isfinite(logprob):
                mass[token] = mass.get(token, 0.0) + math.exp(logprob)
        total = sum(mass.values())
        if total <= 0:
            return None
        probabilities = {k: v / total for k, v in sorted(mass.items(), key=lambda kv: int(kv[0]))}
        return sum(int(k) * p for k, p in probabilities.items()), probabilities
    return None
