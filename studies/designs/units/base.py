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

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Q, QuerySet

from studies.designs.units.sides import dialogue_sides
from studies.models import Conversation, StudyItemConversation

if TYPE_CHECKING:
    from studies.designs.common import ItemSpec
    from studies.models import AssignmentItem, Study, StudyItem


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
    # A check item's written context is itself what is judged (a whole dialogue): no responses are written.
    checks_judge_the_context: ClassVar[bool] = False
    collects_dialogues: ClassVar[bool] = False  # the rater makes the dialogue (a chat) before rating it
    # A practice item is one conversation written for it and judged whole (rules number it 1), not responses to
    # a context; None: as the unit's check items (``checks_judge_the_context``).
    practice_judges_the_context: ClassVar[bool | None] = None
    # The Practice card's label for the written conversation.
    practice_context_label: ClassVar[str] = 'Conversation (one turn per line, "A: text")'
    form_fields: ClassVar[Mapping[str, forms.Field]] = {}  # the study form's fields for the unit's settings

    def config_from_form(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """The unit's settings from the study form's cleaned data (``form_fields``)."""
        return {}

    def form_initial(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """The study form's values of the unit's settings."""
        return {}

    def design_problem(self, design: ItemShape) -> str | None:
        """Why this unit cannot be judged with the design beyond what the design says of the unit's
        level (``StudyDesign.unit_refusals``), or None."""
        return None

    def checks_refusal(self, design: Any, *, from_preview: bool = False) -> str | None:
        """Why check items are refused for a study of this unit and ``design`` (its ``checks_problem``),
        or None. ``from_preview``: a gold item saved from the builder's preview."""
        return self.checks_problem

    def practice_refusal(self, design: Any, *, from_preview: bool = False) -> str | None:
        """Why practice items are refused for a study of this unit and ``design``, or None: as its check items
        unless the unit says otherwise. ``from_preview``: an item saved from the builder's preview."""
        return self.checks_refusal(design)

    def written_turns_clean(self, turns: list[dict[str, str]]) -> tuple[list[dict[str, str]], dict[str, str]]:
        """A written practice conversation's turns as the unit stores them, and problems keyed
        ``context[i].speaker``; any speaker will do unless the unit says otherwise."""
        return turns, {}

    def config_clean(self, config: Mapping[str, Any] | None, *, design: ItemShape) -> dict[str, Any]:
        """The unit's settings (``Study.unit_config``) with their defaults, or ValidationError naming
        each bad field (``unit_config.<key>``); a unit without settings takes none."""
        if config:
            raise ValidationError({"unit_config": f"the {self.key} unit takes no settings"})
        return {}

    def default_criteria(self) -> list[dict[str, str]]:
        """The criteria a new study of this unit gets when the researcher names none (empty: the design's)."""
        return []

    def default_question(self, name: str) -> str | None:
        """The question of a criterion the researcher named without one (None: the design's default)."""
        return None

    def items_build(self, *, study: Study, spec: ItemSpec, design: ItemShape) -> int:
        """(Re)build a draft study's items for this unit; the caller holds the study row lock."""
        raise NotImplementedError

    def publish_problems(self, study: Study) -> list[str]:
        """Why a study of this unit cannot be published yet beyond what its design says (a chat study:
        a system its owner has no endpoint for); empty when it can."""
        return []

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

    def browser_column_of(self, target_ids: Iterable[int]) -> dict[int, int]:
        """target id -> the browser column (``item_columns``' id) its rating goes under; empty when
        the columns are the targets."""
        return {}

    def browser_transcripts(self, item_ids: Sequence[int]) -> dict[int, list[dict[str, Any]]]:
        """item id -> dialogues the raters made on it (a chat's transcripts), for the item browser."""
        return {}

    def shown_turns(self, turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A transcript as the rater sees it (speakers and their sides), for a kind that shows turns itself."""
        return dialogue_sides(turns)

    def pending_url(self, slot: AssignmentItem) -> str | None:
        """Where the rater must go before this item can be rated (a chat still to have), or None."""
        return None

    def conversations(self, study: Study) -> QuerySet[Conversation]:
        """The conversations the study's items show (what dialogue-level metrics score): an item's
        own conversation and those a ranking or comparing item shows; check items' conversations are left
        out (no result reads them, so a metric need not score them before its human-vs-metric report)."""
        items = study.items.filter(check_kind="")
        shown = StudyItemConversation.objects.filter(item__in=items).values("conversation_id")
        return Conversation.objects.filter(Q(pk__in=items.values("conversation_id")) | Q(pk__in=shown))
