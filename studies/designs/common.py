"""Small pieces every design, unit and judgement kind module shares: number formatting, config field
checks, what an item build was asked for, and a page section."""
from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError

from studies.models import Assignment


def letter(position: int) -> str:
    """The letter of the target at 0-based ``position`` on a rater's screen: A, B, ..., then A27, A28, ..."""
    return string.ascii_uppercase[position] if position < 26 else f"A{position + 1}"


def target_key(order: Sequence[int], target_id: int) -> str:
    """The name a rater's page gives one of the targets it shows: its letter in the rater's order, never its
    database id. Check items are written after the regular items, so their ids are the newest; an id in a
    field name, a data attribute or a radio value would tell them apart in the page source."""
    return letter(list(order).index(target_id))


def target_of(order: Sequence[int], key: str) -> int | None:
    """The target a posted key names among those shown in ``order`` (``target_key``'s inverse); None for
    a key that names none of them (a forged or another item's)."""
    return next((t for i, t in enumerate(order) if letter(i) == key), None)


def field_name(target_id: int, criterion: str, order: Sequence[int]) -> str:
    """The form field of one target's answer to one criterion (rating designs and judgement kinds):
    ``r<letter>-<criterion>``, the letter the rater sees (``target_key``)."""
    return f"r{target_key(order, target_id)}-{criterion}"


def tuple_field(kind: str, criterion: str) -> str:
    """The form field of a tuple's best or worst pick for a criterion. The ``r0-`` prefix puts it
    among the fields the shared item page autosaves and re-displays (rater.js names it beside the
    responses' ``r<letter>-…``); a letter is never 0, so it never clashes with a response's field."""
    return f"r0-{kind}-{criterion}"


_ID_FIELD = re.compile(r"r(\d+)(-.+)")
_PICK_FIELDS = (tuple_field("best", ""), tuple_field("worst", ""))


def draft_in_letters(draft: Mapping[str, Any], order: Sequence[int]) -> dict[str, Any]:
    """A draft autosaved before pages named targets by letter, read with today's names: a
    ``r<id>-…`` key and a tuple pick's id become that target's letter in ``order``, so a rater who was typing
    while the new version was deployed finds the answers again. What names no target shown stays as it is."""
    def named(key: str) -> str:
        found = _ID_FIELD.fullmatch(key)
        if found and int(found[1]) in order:
            return f"r{target_key(order, int(found[1]))}{found[2]}"
        return key

    def picked(key: str, value: Any) -> Any:
        if key.startswith(_PICK_FIELDS) and isinstance(value, str) and value.isdigit() and int(value) in order:
            return target_key(order, int(value))
        return value
    return {named(k): picked(k, v) for k, v in draft.items()}


if TYPE_CHECKING:
    from studies.models import Corpus

Answers = Mapping[str, Any]  # criterion name -> the design's answer for it (as answers_parse returns it)
Errors = dict[str, str]      # form field (or criterion) -> what is wrong, in the rater's words
CheckAnswers = dict[int, dict[tuple[str, int], float]]  # item -> (criterion, response) -> value for checks
NOT_COUNTED = (Assignment.Status.ABANDONED, Assignment.Status.REJECTED)  # their items go back to the pool
DONE = (Assignment.Status.SUBMITTED, Assignment.Status.APPROVED)  # the assignments every report counts


def unknown_systems_message(unknown: Sequence[str], available: Sequence[str], corpus_slug: str) -> str:
    """What a build naming systems the corpus lacks says: those names, and the ones there are (names keep
    their case, so ``bota`` is not ``botA``: a name differing only in case is pointed at)."""
    there = sorted(available)
    folded = {name.casefold(): name for name in there}
    hints = [f"{name} (did you mean {folded[name.casefold()]}?)" if name.casefold() in folded else name
             for name in unknown]
    return (f"no responses from {', '.join(hints)} in corpus {corpus_slug}; its systems are "
            f"{', '.join(there) if there else '(none)'}")


def number_text(x: float) -> str:
    """A number as raters read it (and as rater.js writes it with String()): 100, 12.5, 1000000."""
    if isinstance(x, int) and not isinstance(x, bool):  # exact, and no float conversion to overflow on a huge whole number
        return str(x)
    return str(int(x)) if float(x).is_integer() else f"{x:.15g}"


def int_field(config: Mapping[str, Any], key: str, errors: Errors, *, low: int, high: int) -> int | None:
    """``config[key]`` if it is a whole number in low..high, else None with ``design_config.<key>``'s
    problem added to ``errors``."""
    value = config.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        errors[f"design_config.{key}"] = f"must be a whole number from {low} to {high}, got {value!r}"
        return None
    if not low <= value <= high:
        errors[f"design_config.{key}"] = f"must be from {low} to {high}, got {value}"
        return None
    return value


@dataclass(frozen=True)
class ItemSpec:
    """What the researcher chose to build a study's items from (``study_items_build``'s arguments).
    A corpus is needed by the units that judge what it holds; a chat study's items are systems."""

    corpus: Corpus | None = None
    systems: Sequence[str] | None = None
    reference_system: str | None = None
    reference_conversation: str | None = None
    limit: int | None = None
    seed: int = 0

    def corpus_required(self) -> Corpus:
        """The corpus, or ValidationError asking for one."""
        if self.corpus is None:
            raise ValidationError({"corpus": "choose a corpus to build the items from"})
        return self.corpus


@dataclass(frozen=True)
class Section:
    """A part of a page that a design adds: a template and what it needs (``data``). ``key`` names the
    data where a caller keeps it in a dict (the live result's ``pairwise`` rows, the API report's
    ``pairwise`` entry); the page includes ``template`` with ``section`` = ``data``."""

    key: str
    template: str
    data: Any
