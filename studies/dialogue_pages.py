"""What the rater page of a dialogue-unit item shows (templates/raters/_dialogue.html): the whole
conversation with its speakers told apart, for RME the anchor dialogue with its value, and for BWS the
several dialogues to rank (lettered in the rater's order)."""

from __future__ import annotations

import string
from typing import Any

from studies.models import Conversation, Design, Study, StudyItem

EXCERPT_CHARS = 90


def speaker_turns(turns: list[dict[str, str]]) -> list[dict[str, str]]:
    """Turns with a ``side`` by speaker, not by position: the first speaker on one side, every other on
    the other (a dialogue may have two turns in a row by one speaker), so who said what stays visible."""
    first = turns[0]["speaker"] if turns else ""
    return [{**turn, "side": "side-a" if turn["speaker"] == first else "side-b"} for turn in turns]


def _ranked(study: Study, order: list[int]) -> dict[int, list[dict[str, str]]]:
    """conversation id -> turns of the dialogues a BWS item ranks (one query; none for other designs)."""
    if study.design != Design.BWS:
        return {}
    return dict(Conversation.objects.filter(pk__in=order).values_list("pk", "turns"))


def target_texts(study: Study, order: list[int]) -> dict[int, str]:
    """What the ranking list shows of each dialogue (its opening turn); empty for a single dialogue."""
    turns = _ranked(study, order)
    return {cid: (turns[cid][0]["text"] if turns.get(cid) else "") for cid in order}


def dialogue_context(study: Study, item: StudyItem, order: list[int]) -> dict[str, Any]:
    anchor = item.reference_conversation if study.is_magnitude and item.reference_conversation_id else None
    ranked = _ranked(study, order)
    return {
        "dialogue": True,
        "dialogue_turns": speaker_turns(item.conversation.turns),
        "anchor_turns": speaker_turns(anchor.turns) if anchor else None,
        "ranked_dialogues": [
            {"id": cid, "letter": string.ascii_uppercase[i], "turns": speaker_turns(ranked[cid])}
            for i, cid in enumerate(order)
            if cid in ranked
        ],
    }
