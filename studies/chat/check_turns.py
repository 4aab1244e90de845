"""The scripted turn of a chat on a check item (``studies.rating.chat_checks``): which bot reply it replaces and
its text. The turn is stored like a reply (``chat.services``), marked ``"check": true``, without calling the bot."""
from __future__ import annotations

import random

from studies.chat.client import BotReply
from studies.chat.config import chat_config
from studies.models import Chat


class ScriptedReply(BotReply):
    """A check item's scripted text standing for the bot's reply (no call was made)."""


def check_reply_number(chat: Chat) -> int | None:
    """Which of the bot's replies (1 = the first) the check item's scripted text replaces: the researcher's, or
    one drawn per rater (seeded by the assignment) among those before the rater may end the chat; None when the
    chat's item is not a scripted check."""
    item = chat.item
    meta = (item.conversation.metadata or {}) if item.check_kind and item.conversation_id else {}
    if not meta.get("scripted_reply"):
        return None
    if meta.get("position"):
        return int(meta["position"])
    min_turns = int(chat_config(item.study)["min_turns"])
    return random.Random(f"{chat.assignment.seed}:{item.pk}:check").randint(1, min_turns)


def scripted_reply_due(chat: Chat) -> ScriptedReply | None:
    """The scripted reply if the bot's next reply in ``chat`` is the check's, else None (the bot is asked)."""
    number = check_reply_number(chat)
    if number is None:
        return None
    replies = sum(1 for t in chat.conversation.turns if t.get("speaker") == "system")
    if replies + 1 != number:
        return None
    return ScriptedReply(text=chat.item.conversation.turns[0]["text"], seconds=0.0, attempts=0)
