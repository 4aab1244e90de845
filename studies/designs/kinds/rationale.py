"""The free-text reason ("Why?") any criterion may ask for beside its answer, optional or required.

It is a second field per target, ``r<letter>-<criterion>.rationale`` (slugs have no dot, so it never
collides with a criterion's own field); answers carry it under ``<criterion>.rationale`` (target id ->
text) beside the criterion's own answers, and it is stored in ``Rating.rationale``.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from django.utils.translation import gettext

from studies.designs.common import field_name
from studies.text_checks import text_problem

if TYPE_CHECKING:
    from studies.designs.common import Errors
    from studies.models import Criterion

SUFFIX = ".rationale"
CHOICES = ("", "optional", "required")
MAX_RATIONALE = 2000


def rationale_field(target_id: int, criterion: str, order: Sequence[int]) -> str:
    return field_name(target_id, criterion, order) + SUFFIX


def rationale_key(criterion: str) -> str:
    """The answers key of a criterion's reasons."""
    return criterion + SUFFIX


def rationale_clean(value: Any) -> tuple[str, str | None]:
    """A criterion's rationale setting ("", "optional", "required"; True means required), or the problem."""
    if value is True:
        return "required", None
    if value in (None, False):
        return "", None
    if value not in CHOICES:
        return "", f"must be one of: none, optional, required (got {value!r})"
    return str(value), None


def _problem(criterion: Criterion, text: Any) -> str | None:
    if not isinstance(text, str):
        return "must be a text"
    if problem := text_problem(text):  # a NUL is a DataError on PostgreSQL: refused here, by field
        return gettext("this reason %(problem)s") % {"problem": problem}
    n = len(text.strip())
    if criterion.rationale == "required" and n == 0:
        return gettext("say why in a few words")
    if n > MAX_RATIONALE:
        return gettext("write at most {high} characters (now {n})").format(high=MAX_RATIONALE, n=n)
    return None


def rationale_parse(criterion: Criterion, post: Mapping[str, Any], order: Sequence[int]) -> tuple[dict[int, str], Errors]:
    """The posted reasons of one criterion (target -> text) and their problems by field; {} when the
    criterion asks for none."""
    if not criterion.rationale:
        return {}, {}
    reasons: dict[int, str] = {}
    errors: Errors = {}
    for target in order:
        name = rationale_field(target, criterion.name, order)
        raw = post.get(name)
        text = raw.strip() if isinstance(raw, str) else ""
        if problem := _problem(criterion, text):
            errors[name] = problem
        else:
            reasons[target] = text
    return reasons, errors


def rationale_problems(criterion: Criterion, reasons: Any, shown: set[int]) -> Errors:
    """What is wrong with the reasons given to the store (keys ``<criterion>.rationale[.<target>]``)."""
    key = rationale_key(criterion.name)
    if not criterion.rationale:
        return {key: "this question asks for no reason"} if reasons else {}
    if reasons is None:
        reasons = {}
    if not isinstance(reasons, Mapping) or not set(reasons) <= shown:
        return {key: "give reasons only for the responses shown"}
    errors: Errors = {}
    for target in sorted(shown):
        if problem := _problem(criterion, reasons.get(target, "")):
            errors[f"{key}.{target}"] = problem
    return errors
