"""Categorical judgements: one of N labels per target ("Is this response safe / unsafe / unsure?").

The criterion's ``options``: ``{"labels": [...]}`` (2 to 12 distinct labels of 1 to 60 characters, in
the order the rater sees them; the first is the "best" one for simulated raters). An answer is one of
the labels, stored in ``Rating.label``; check rules expect a label (``{"response": 1, "label": "safe"}``).
The report counts labels per system (``studies.analysis.labels``), never averages them. What it shares
with multi-label (the labels, parsing and checking every target): ``kinds.labels``.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.utils.translation import gettext

from studies.designs.kinds.base import RatingsDesign
from studies.designs.kinds.labels import LabelKind, posted

if TYPE_CHECKING:
    from studies.models import Criterion


class CategoricalKind(LabelKind):
    key = "categorical"
    label = "One of several labels (categorical)"
    template = "raters/kinds/categorical.html"
    check_rule_key = "label"
    rater_task = "pick one label"

    def row_context(self, design: RatingsDesign, config: Mapping[str, Any], criterion: Criterion) -> dict[str, Any]:
        return {"labels": self.labels(criterion)}

    def form_given(self, post: Mapping[str, Any], name: str) -> Any:
        values = posted(post, name)
        return values[-1] if values else ""

    def answer(self, criterion: Criterion, given: Any) -> tuple[Any, str | None]:
        labels = self.labels(criterion)
        if given in (None, ""):
            return None, gettext("pick one of the labels for this response")
        if not isinstance(given, str) or given not in labels:
            return None, f"“{str(given)[:30]}” is not one of the labels ({', '.join(labels)})"
        return given, None

    def rating_fields(self, design: RatingsDesign, answer: Any) -> dict[str, Any]:
        return {"value": None, "rank": None, "label": answer}

    def stored_fields(self) -> tuple[str, ...]:
        return ("label",)

    def form_value(self, design: RatingsDesign, stored: Mapping[str, Any]) -> str:
        return stored.get("label") or ""

    def check_value(self, design: RatingsDesign, stored: Mapping[str, Any]) -> Any:
        return stored.get("label")

    def expected_clean(self, criterion: Criterion, expected: Any) -> tuple[Any, str | None]:
        labels = self.labels(criterion)
        if not isinstance(expected, str) or expected not in labels:
            return None, f"must be one of the labels of {criterion.name} ({', '.join(labels)})"
        return expected, None

    def simulate(self, criterion: Criterion, quality: float, rng: Any) -> Any:
        """Quality 0 or above: the first label; each unit below steps one label further (clipped)."""
        labels = self.labels(criterion)
        return labels[min(len(labels) - 1, max(0, int(round(-quality))))]

    def export_text(self, stored: Mapping[str, Any]) -> str:
        return stored.get("label") or ""


CATEGORICAL = CategoricalKind()
