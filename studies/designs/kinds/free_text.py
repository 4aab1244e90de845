"""Free-text judgements ("What would make this response better?"): a text per target, with a minimum
and a maximum length in characters.

The criterion's ``options``: ``{"min_length": 1, "max_length": 1000}`` (0 <= min <= max <= 2000, max >= 1):
a minimum of 0 makes the text optional.
Stored in ``Rating.text``; it is exported, shown in the item browser and the report's examples, and
never read as a number (``numeric = False``). No check rule can expect a text.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext

from studies.designs.kinds.base import PerTargetKind, RatingsDesign
from studies.text_checks import text_problem

if TYPE_CHECKING:
    from studies.models import Criterion

MAX_TEXT = 2000  # as much as autosave keeps (rating.answers.DRAFT_REASON_MAX)
DEFAULTS = {"min_length": 1, "max_length": 1000}


def length_problem(text: str, low: int, high: int) -> str | None:
    """What is wrong with a text: its length (in characters, surrounding spaces not counted), or a NUL,
    control character or lone surrogate the database cannot hold (a 400, never a 500); None."""
    if problem := text_problem(text):
        return gettext("this text %(problem)s") % {"problem": problem}
    n = len(text.strip())
    if n < low:
        return (gettext("write something here") if n == 0 and low <= 1
                else gettext("write at least {low} characters (now {n})").format(low=low, n=n))
    if n > high:
        return gettext("write at most {high} characters (now {n})").format(high=high, n=n)
    return None


def _bounds(criterion: Criterion) -> tuple[int, int]:
    options = {**DEFAULTS, **(criterion.options or {})}
    return int(options["min_length"]), int(options["max_length"])


class FreeTextKind(PerTargetKind):
    key = "free_text"
    label = "Free text"
    template = "raters/kinds/free_text.html"
    numeric = False
    rater_task = "write a short text"
    long_text = True

    def options_clean(self, options: Any) -> dict[str, Any]:
        given = {**DEFAULTS, **(options if isinstance(options, Mapping) else {})}
        errors: dict[str, str] = {}
        cleaned: dict[str, int] = {}
        for key in ("min_length", "max_length"):
            value = given[key]
            if isinstance(value, str) and value.strip().isdigit():
                value = int(value)
            low = 0 if key == "min_length" else 1  # a minimum of 0: the text is optional
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_TEXT:
                errors[f"options.{key}"] = f"must be a whole number from {low} to {MAX_TEXT}, got {value!r}"
            else:
                cleaned[key] = value
        if not errors and cleaned["min_length"] > cleaned["max_length"]:
            errors["options.max_length"] = f"must be at least min_length ({cleaned['min_length']})"
        if errors:
            raise ValidationError(errors)
        return cleaned

    def row_context(self, design: RatingsDesign, config: Mapping[str, Any], criterion: Criterion) -> dict[str, Any]:
        low, high = _bounds(criterion)
        return {"min_length": low, "max_length": high}

    def form_given(self, post: Mapping[str, Any], name: str) -> Any:
        raw = post.get(name)
        return raw.strip() if isinstance(raw, str) else ""

    def answer(self, criterion: Criterion, given: Any) -> tuple[Any, str | None]:
        if not isinstance(given, str):
            return None, "must be a text"
        low, high = _bounds(criterion)
        problem = length_problem(given, low, high)
        return (None, problem) if problem else (given, None)

    def rating_fields(self, design: RatingsDesign, answer: Any) -> dict[str, Any]:
        return {"value": None, "rank": None, "text": answer.strip()}

    def stored_fields(self) -> tuple[str, ...]:
        return ("text",)

    def form_value(self, design: RatingsDesign, stored: Mapping[str, Any]) -> str:
        return stored.get("text") or ""

    def check_value(self, design: RatingsDesign, stored: Mapping[str, Any]) -> Any:
        return stored.get("text")

    def simulate(self, criterion: Criterion, quality: float, rng: Any) -> Any:
        low, high = _bounds(criterion)
        text = "Reads well and fits the conversation." if quality >= 0 else "Hard to follow; it ignores the question."
        return text.ljust(low, ".")[:high]

    def export_text(self, stored: Mapping[str, Any]) -> str:
        return stored.get("text") or ""


FREE_TEXT = FreeTextKind()
