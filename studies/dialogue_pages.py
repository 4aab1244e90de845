"""What the rater page of a dialogue-unit item shows (templates/raters/_dialogue.html): the whole
conversation with its speakers told apart, and for RME the anchor dialogue with its value."""

from __future__ import annotations

from typing import Any

from studies.models import Study, StudyItem


def speaker_turns(turns: list[dict[str, str]]) -> list[dict[str, str]]:
    """Turns with a ``side`` by speaker, not by position: the first speaker on one side, every other on
    the other (a dialogue may have two turns in a row by one speaker), so who said what stays visible."""
    first = turns[0]["speaker"] if turns else ""
    return [{**turn, "side": "side-a" if turn["speaker"] == first else "side-b"} for turn in turns]


def dialogue_context(study: Study, item: StudyItem) -> dict[str, Any]:
    anchor = item.reference_conversation if study.is_magnitude and item.reference_conversation_id else None
    return {
        "dialogue": True,
        "dialogue_turns": speaker_turns(item.conversation.turns),
        "anchor_turns": speaker_turns(anchor.turns) if anchor else None,
    }
