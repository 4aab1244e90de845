"""The protocol of a unit of judgement (``Study.unit``): what one rating judges.

A unit owns what differs by the thing judged: which targets an item shows (responses or
conversations), where a rating points (``Rating.response`` or ``Rating.conversation``), how items are
built from a corpus (one per conversation with every chosen system's response; one per dialogue), and
what the rater's page shows of them. Designs decide on a unit's ``level`` only ("response" or
"dialogue"), so a new unit that judges dialogues (a chat) runs every design that runs on dialogues.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    from studies.designs.common import ItemSpec
    from studies.models import Study, StudyItem


class ItemShape(Protocol):
    """What a unit asks of the study's design (``StudyDesign`` has all of it) when it builds items
    and shows them: whether an anchor is shown and not judged, whether targets are ranked, the
    anchor's fixed value, and the hook that hears how many targets each item shows."""

    @property
    def key(self) -> str: ...

    @property
    def anchored(self) -> bool: ...

    @property
    def ranks(self) -> bool: ...

    def fixed_reference_value(self, config: Mapping[str, Any]) -> float | None: ...

    def items_shown(self, study: Study, shown: int) -> None: ...


class StudyUnit:
    """One instance per ``Unit`` value, registered in ``studies.designs.units`` (``unit_for``)."""

    key: ClassVar[str]
    level: ClassVar[str] = "response"    # "response" or "dialogue": what designs decide on
    row_noun: ClassVar[str] = "Response"  # what a row of the rater's form stands for
    target_field: ClassVar[str] = "response"  # the Rating field a rating of this unit sets
    shown_relation: ClassVar[str] = "item_responses"  # the StudyItem relation listing what an item shows
    checks_problem: ClassVar[str | None] = None  # why check items are refused for this unit, or None

    def default_criteria(self) -> list[dict[str, str]]:
        """The criteria a new study of this unit gets when the researcher names none (empty: the design's)."""
        return []

    def default_question(self, name: str) -> str | None:
        """The question of a criterion the researcher named without one (None: the design's default)."""
        return None

    def items_build(self, *, study: Study, spec: ItemSpec, design: ItemShape) -> int:
        """(Re)build a draft study's items for this unit; the caller holds the study row lock."""
        raise NotImplementedError

    def item_targets(self, item_ids: Iterable[int]) -> dict[int, list[int]]:
        """item id -> the ids a rater judges on it, in canonical order (responses or conversations)."""
        raise NotImplementedError

    def rating_target(self, target_id: int) -> dict[str, int]:
        """The Rating fields that name what was rated."""
        return {f"{self.target_field}_id": target_id}

    def rating_unique_fields(self) -> list[str]:
        """The unique key a double submit upserts on (``Rating`` constraints)."""
        return ["assignment", self.target_field, "criterion"]

    def target_texts(self, study: Study, item: StudyItem, order: Sequence[int], *, ranked: bool) -> dict[int, str]:
        """What the form's rows show of each target (the response's text; a ranked dialogue's opening turn)."""
        raise NotImplementedError

    def form_context(self, study: Study, item: StudyItem, order: Sequence[int], *,
                     design: ItemShape) -> dict[str, Any]:
        """What the unit adds to the rater's page (the whole dialogue, an anchor dialogue, ...)."""
        return {}

    def item_columns(self, items: Sequence[StudyItem]) -> dict[int, list[dict[str, Any]]]:
        """item id -> what the item browser shows as its columns: each target the item shows, in
        canonical order, as {"id", "system", "text"}."""
        raise NotImplementedError

    def shown_count(self, study: Study) -> int | None:
        """How many targets the study's first (non-check) item shows, or None without items."""
        first = study.items.filter(check_kind="").order_by("position").first()
        if first is None:
            return None
        return getattr(first, self.shown_relation).count()
