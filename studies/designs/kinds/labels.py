"""What the label kinds share (``categorical``: one label; ``multilabel``: any set of them): the criterion's
labels, how they are checked and what a form posts for a field."""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError

from studies.designs.kinds.base import PerTargetKind

if TYPE_CHECKING:
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


class LabelKind(PerTargetKind):
    """A kind whose answer is chosen from the criterion's ``options.labels``; a subclass says what one
    target's answer is and what the form posts for it (``PerTargetKind``)."""

    numeric = False

    @staticmethod
    def labels(criterion: Criterion) -> list[str]:
        return list((criterion.options or {}).get("labels") or [])

    def options_clean(self, options: Any) -> dict[str, Any]:
        errors: dict[str, str] = {}
        cleaned = {"labels": labels_clean(options, errors), **self.more_options_clean(options, errors)}
        if errors:
            raise ValidationError(errors)
        return cleaned

    def more_options_clean(self, options: Any, errors: dict[str, str]) -> dict[str, Any]:
        """The kind's options beside the labels, problems added to ``errors``."""
        return {}
