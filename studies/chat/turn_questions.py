"""Per-turn questions during a chat (model-chat, ParlAI/Mephisto: checkboxes after every bot reply): a chat
study whose criteria include a per-turn one (``studies.designs.kinds.per_turn``) asks them about each of the
bot's replies as it arrives, and the chat takes the rater's next message only once the last reply's questions
are answered (``unanswered``, asked by ``chat.services`` before a message is stored).

The answers are the rating page's own fields (``r<letter>-<criterion>.t<index>``, the turn's index in the
transcript), kept in the slot's autosaved draft: the rating page after the chat shows them ticked, the rater
reviews them and submits them with the rest, and they are stored and checked like any answer. One chat per
item (a side-by-side chat's two replies are ranked, not labelled per turn: no questions there)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction

from studies.designs import kind_for
from studies.designs.common import field_name
from studies.designs.kinds.per_turn import NONE_TEXT, NONE_VALUE, PER_TURN, judged_indices, options_of, turn_field
from studies.designs.rater_reads import study_criteria
from studies.models import AssignmentItem, Chat


class TurnAnswersRefused(Exception):
    """An answer to a turn's questions that is not acceptable, with the field it is about."""

    def __init__(self, message: str, *, field: str = "") -> None:
        super().__init__(message)
        self.field = field


def _asked(study) -> list[Any]:
    return [c for c in study_criteria(study) if kind_for(c) is PER_TURN]


def _slot_chat(assignment, item_id: int) -> tuple[AssignmentItem | None, Chat | None]:
    chats = list(Chat.objects.filter(assignment=assignment, item_id=item_id).select_related("conversation"))
    slot = AssignmentItem.objects.filter(assignment=assignment, item_id=item_id).first()
    return slot, (chats[0] if len(chats) == 1 else None)


def turn_questions(assignment, item_id: int) -> dict[str, Any] | None:
    """What the chat page asks after each bot reply: the criteria (question, mode, labels with definitions)
    and, per judged turn index, each criterion's field, whether it is answered and what is ticked; None when
    the study asks nothing per turn (or the item has two chats side by side)."""
    criteria = _asked(assignment.study)
    if not criteria:
        return None
    slot, chat = _slot_chat(assignment, item_id)
    if slot is None or chat is None:
        return None
    draft, order, turns = slot.draft or {}, slot.response_order, chat.conversation.turns
    per_turn: dict[str, dict[str, Any]] = {}
    pending = False
    for criterion in criteria:
        base = field_name(chat.conversation_id, criterion.name, order)
        for index in judged_indices(turns, options_of(criterion)[2]):
            name = turn_field(base, index)
            given = draft.get(name)
            answered = given is not None
            pending = pending or not answered
            per_turn.setdefault(str(index), {})[criterion.name] = {
                "field": name, "answered": answered,
                "chosen": given if isinstance(given, list) else ([given] if given else [])}
    definitions = {c.name: (c.options or {}).get("definitions") or {} for c in criteria}
    return {"criteria": [{"name": c.name, "question": c.question, "mode": options_of(c)[0],
                          "labels": [{"label": label, "definition": definitions[c.name].get(label, "")}
                                     for label in options_of(c)[1]],
                          "none_value": NONE_VALUE, "none_text": NONE_TEXT} for c in criteria],
            "turns": per_turn, "pending": pending}


def unanswered(assignment, item_id: int) -> bool:
    """Whether a bot reply's questions are still unanswered (the chat waits for them)."""
    asked = turn_questions(assignment, item_id)
    return bool(asked and asked["pending"])


@transaction.atomic
def turn_answers_save(*, assignment, item_id: int, answers: Mapping[str, Any]) -> dict[str, Any]:
    """Check the answers to bot turns' questions (field -> a label, or a list of labels; [] in the binary
    mode: none of them) and keep them in the slot's draft; TurnAnswersRefused names the first bad field and
    nothing is kept."""
    if not isinstance(answers, Mapping) or not answers:
        raise TurnAnswersRefused("give the answers to the questions about the bot's reply", field="answers")
    asked = turn_questions(assignment, item_id)
    if asked is None:
        raise TurnAnswersRefused("this chat asks no questions about single turns", field="answers")
    fields = {entry["field"]: name for turns in asked["turns"].values() for name, entry in turns.items()}
    criteria = {c.name: c for c in _asked(assignment.study)}
    cleaned: dict[str, Any] = {}
    for name, given in answers.items():
        if name not in fields:
            raise TurnAnswersRefused(f"{str(name)[:40]} is not a question about one of the bot's replies so far",
                                     field=str(name))
        mode, labels, _ = options_of(criteria[fields[name]])
        given = (given[-1] if given else "") if mode == "categorical" and isinstance(given, list) else given
        answer, problem = PER_TURN.turn_answer(mode, labels, given)
        if problem:
            raise TurnAnswersRefused(problem, field=str(name))
        cleaned[name] = answer if isinstance(answer, str) else (list(answer) or
                                                               ([NONE_VALUE] if mode == "multilabel" else []))
    slot = AssignmentItem.objects.select_for_update().get(assignment=assignment, item_id=item_id)
    AssignmentItem.objects.filter(pk=slot.pk).update(draft={**(slot.draft or {}), **cleaned})
    return turn_questions(assignment, item_id) or {}
