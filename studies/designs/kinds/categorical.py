"""Categorical judgements: one of N labels per target ("Is this response safe / unsafe / unsure?").

The criterion's ``options``: ``{"labels": [...]}`` (2 to 12 distinct labels of 1 to 60 characters, in
the order the rater sees them; the first is the "best" one for simulated raters). An answer is one of
the labels, stored in ``Rating.label``; check rules expect a label (``{"response": 1, "label": "safe"}``).
The report counts labels per system (``studies.analysis.labels``), never averages them.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError

from studies.designs.common import field_name
from studies.designs.kinds.base import JudgementKind, RatingsDesign

if TYPE_CHECKING:
    from studies.designs.common import Errors
    from studies.models import Criterion

MIN_LABELS, MAX_LABELS, MAX_LABEL = 2, 12, 60
NONE_VALUE = "__none__"  # the form value of multi-label's "None of these" (no label may start with "__")


def labels_clean(options: Any, errors: dict[str, str], *, key: str = "options.labels") -> list[str]:
    """The criterion's labels (2..12 distinct non-empty texts of at most 60 characters), problems added
    to ``errors`` under ``key``."""
    raw = options.get("labels") if isinstance(options, Mapping) else None
    if isinstance(raw, str):  # a form's text box: one label per line, or comma-separated on one line
        raw = [part.strip() for part in (raw.splitlines() if "\n" in raw.strip() else raw.split(",")) if part.strip()]
    if not isinstance(raw, (list, tuple)):
        errors[key] = f"give {MIN_LABELS} to {MAX_LABELS} labels, e.g. [\"safe\", \"unsafe\", \"unsure\"]"
        return []
    if not all(isinstance(label, str) for label in raw):
        errors[key] = "every label is a text"
        return []
    labels = [label.strip() for label in raw]
    if not MIN_LABELS <= len(labels) <= MAX_LABELS:
        errors[key] = f"give {MIN_LABELS} to {MAX_LABELS} labels, got {len(labels)}"
    elif not all(labels):
        errors[key] = "every label is a non-empty text"
    elif any(len(label) > MAX_LABEL for label in labels):
        errors[key] = f"a label has at most {MAX_LABEL} characters"
    elif any(label.startswith("__") for label in labels):
        errors[key] = "a label may not start with “__”"
    elif len({label.casefold() for label in labels}) != len(labels):
        errors[key] = "labels must be different"
    return labels


def posted(post: Mapping[str, Any], name: str) -> list[str]:
    """Every value posted for a field (a form's QueryDict has several for ticked boxes; a JSON draft or
    an API a list or one text)."""
    if hasattr(post, "getlist"):
        values = post.getlist(name)
        if len(values) == 1 and isinstance(values[0], list):
            values = values[0]
    else:
        given = post.get(name)
        values = given if isinstance(given, list) else ([] if given in (None, "") else [given])
    return [str(v).strip() for v in values if str(v).strip()]


def _labels(criterion: Criterion) -> list[str]:
    return list((criterion.options or {}).get("labels") or [])


class CategoricalKind(JudgementKind):
    key = "categorical"
    label = "One of several labels (categorical)"
    template = "raters/kinds/categorical.html"
    check_rule_key = "label"
    numeric = False
    rater_task = "pick one label"

    def options_clean(self, options: Any) -> dict[str, Any]:
        errors: dict[str, str] = {}
        labels = labels_clean(options, errors)
        if errors:
            raise ValidationError(errors)
        return {"labels": labels}

    def row_context(self, design: RatingsDesign, config: Mapping[str, Any], criterion: Criterion) -> dict[str, Any]:
        return {"labels": _labels(criterion)}

    def _problem(self, criterion: Criterion, given: Any) -> str | None:
        labels = _labels(criterion)
        if given in (None, ""):
            return "pick one of the labels for this response"
        if not isinstance(given, str) or given not in labels:
            return f"“{str(given)[:30]}” is not one of the labels ({', '.join(labels)})"
        return None

    def criterion_parse(self, design: RatingsDesign, config: Mapping[str, Any], criterion: Criterion,
                        post: Mapping[str, Any], order: Sequence[int]) -> tuple[dict[int, Any], Errors]:
        answers: dict[int, Any] = {}
        errors: Errors = {}
        for target in order:
            name = field_name(target, criterion.name, order)
            values = posted(post, name)
            given = values[-1] if values else ""
            if problem := self._problem(criterion, given):
                errors[name] = problem
            else:
                answers[target] = given
        return answers, errors

    def criterion_problems(self, design: RatingsDesign, config: Mapping[str, Any], criterion: Criterion,
                           answers: Mapping[int, Any], order: Sequence[int]) -> Errors:
        return {f"{criterion.name}.{target}": problem for target, given in answers.items()
                if (problem := self._problem(criterion, given))}

    def rating_fields(self, design: RatingsDesign, answer: Any) -> dict[str, Any]:
        return {"value": None, "rank": None, "label": answer}

    def stored_fields(self) -> tuple[str, ...]:
        return ("label",)

    def form_value(self, design: RatingsDesign, stored: Mapping[str, Any]) -> str:
        return stored.get("label") or ""

    def check_value(self, design: RatingsDesign, stored: Mapping[str, Any]) -> Any:
        return stored.get("label")

    def expected_clean(self, criterion: Criterion, expected: Any) -> tuple[Any, str | None]:
        labels = _labels(criterion)
        if not isinstance(expected, str) or expected not in labels:
            return None, f"must be one of the labels of {criterion.name} ({', '.join(labels)})"
        return expected, None

    def simulate(self, criterion: Criterion, quality: float, rng: Any) -> Any:
        """Quality 0 or above: the first label; each unit below steps one label further (clipped)."""
        labels = _labels(criterion)
        return labels[min(len(labels) - 1, max(0, int(round(-quality))))]

    def export_text(self, stored: Mapping[str, Any]) -> str:
        return stored.get("label") or ""


CATEGORICAL = CategoricalKind()
