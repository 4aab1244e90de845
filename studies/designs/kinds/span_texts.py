"""The texts a span criterion's raters mark, per target: a response's stored text, or each turn of a
dialogue (a dialogue-unit or chat study's target is the conversation; a span there names its ``turn``)."""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from studies.designs.units import unit_for
from studies.models import Conversation, Response

if TYPE_CHECKING:
    from studies.models import Criterion, Study

Docs = dict[int, dict[int | None, str]]  # target id -> turn (None for a response) -> text


def marks_turns(study: Study) -> bool:
    """Whether the study's targets are whole dialogues, so that each span names a turn."""
    return unit_for(study).target_field != "response"


def target_docs(study: Study, target_ids: Iterable[int]) -> Docs:
    """Each target's markable texts: {None: text} for a response, {turn index: text} for a dialogue."""
    ids = list(target_ids)
    if not marks_turns(study):
        return {pk: {None: text} for pk, text in Response.objects.filter(pk__in=ids).values_list("pk", "text")}
    return {pk: {i: str((turn or {}).get("text") or "") for i, turn in enumerate(turns or [])}
            for pk, turns in Conversation.objects.filter(pk__in=ids).values_list("pk", "turns")}


def target_speakers(study: Study, target_ids: Iterable[int]) -> dict[int, dict[int, str]]:
    """Each dialogue target's speaker per turn ({} for responses): what the rater page shows beside a turn."""
    if not marks_turns(study):
        return {}
    return {pk: {i: str((turn or {}).get("speaker") or "") for i, turn in enumerate(turns or [])}
            for pk, turns in Conversation.objects.filter(pk__in=list(target_ids)).values_list("pk", "turns")}


def criterion_docs(criterion: Criterion, target_ids: Iterable[int]) -> Docs:
    return target_docs(criterion.study, target_ids)
