"""Multi-label judgements: any subset of N labels per target ("Which problems does it have?
repetition, contradiction, off-topic, ungrammatical").

The criterion's ``options``: ``{"labels": [...], "none_option": bool}``. With ``none_option`` (the
default) the rater ticks the labels that apply or "None of these" (stored as ``[]``), so an unanswered
question is never read as "no problem"; without it at least one label is ticked. Answers are stored in
``Rating.labels``, sorted; check rules expect a label set
(``{"response": 1, "labels": ["repetition"]}``, ``[]`` for none). Agreement is one binary agreement per
label (``studies.analysis.labels``).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.utils.translation import gettext, gettext_lazy

from studies.designs.kinds.base import RatingsDesign
from studies.designs.kinds.labels import NONE_VALUE, LabelKind, posted

if TYPE_CHECKING:
    from studies.models import Criterion

NONE_TEXT = gettext_lazy("None of these")


def _options(criterion: Criterion) -> tuple[list[str], bool]:
    return LabelKind.labels(criterion), bool((criterion.options or {}).get("none_option", True))


class MultiLabelKind(LabelKind):
    key = "multilabel"
    label = "Any of several labels (multi-label)"
    template = "raters/kinds/multilabel.html"
    many_values = True
    check_rule_key = "labels"
    rater_task = "tick the labels that apply"

    def more_options_clean(self, options: Any, errors: dict[str, str]) -> dict[str, Any]:
        none_option = options.get("none_option", True) if isinstance(options, Mapping) else True
        if not isinstance(none_option, bool):
            errors["options.none_option"] = f"must be true or false, got {none_option!r}"
        return {"none_option": none_option}

    def row_context(self, design: RatingsDesign, config: Mapping[str, Any], criterion: Criterion) -> dict[str, Any]:
        labels, none_option = _options(criterion)
        return {"labels": labels, "none_option": none_option, "none_value": NONE_VALUE, "none_text": NONE_TEXT}

    def answer(self, criterion: Criterion, given: Any) -> tuple[list[str] | None, str | None]:
        """The chosen labels in the criterion's order ([] for none), or the rater-facing problem."""
        labels, none_option = _options(criterion)
        if not isinstance(given, (list, tuple)) or not all(isinstance(g, str) for g in given):
            return None, "give a list of labels"
        chosen = set(given)
        if NONE_VALUE in chosen:
            if len(chosen) > 1:
                return None, gettext("“None of these” cannot go with other labels")
            if not none_option:
                return None, gettext("tick at least one label")
            return [], None
        unknown = sorted(chosen - set(labels))
        if unknown:
            return None, f"“{unknown[0][:30]}” is not one of the labels ({', '.join(labels)})"
        if not chosen:
            return None, (gettext("tick the labels that apply, or “None of these”") if none_option
                          else gettext("tick at least one label"))
        return [label for label in labels if label in chosen], None

    def form_given(self, post: Mapping[str, Any], name: str) -> Any:
        return posted(post, name)  # every ticked box

    def api_given(self, given: Any) -> Any:
        return [NONE_VALUE] if given == [] else given  # an API answer of [] means "none of these" where offered

    def rating_fields(self, design: RatingsDesign, answer: Any) -> dict[str, Any]:
        # Sorted: one stored form per set, whatever order a form or an API gave it in.
        chosen = [] if NONE_VALUE in answer else sorted(set(answer))
        return {"value": None, "rank": None, "labels": chosen}

    def stored_fields(self) -> tuple[str, ...]:
        return ("labels",)

    def form_value(self, design: RatingsDesign, stored: Mapping[str, Any]) -> Any:
        labels = stored.get("labels")
        if labels is None:
            return []
        return list(labels) or [NONE_VALUE]

    def check_value(self, design: RatingsDesign, stored: Mapping[str, Any]) -> Any:
        labels = stored.get("labels")
        return None if labels is None else tuple(sorted(labels))

    def expected_clean(self, criterion: Criterion, expected: Any) -> tuple[Any, str | None]:
        labels, _ = _options(criterion)
        if not isinstance(expected, list) or not all(isinstance(e, str) and e in labels for e in expected):
            return None, f"must be a list of labels of {criterion.name} ({', '.join(labels)}; [] for none)"
        return sorted(set(expected)), None

    def simulate(self, criterion: Criterion, quality: float, rng: Any) -> Any:
        """The first k labels, k = round(−quality) clipped (0 is "none of these" where offered)."""
        labels, none_option = _options(criterion)
        k = min(len(labels), max(0 if none_option else 1, int(round(-quality))))
        return labels[:k] or [NONE_VALUE]

    def export_text(self, stored: Mapping[str, Any]) -> str:
        labels = stored.get("labels")
        return "" if labels is None else ("; ".join(labels) or str(NONE_TEXT))


MULTILABEL = MultiLabelKind()
