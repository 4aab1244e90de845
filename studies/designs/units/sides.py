"""Which side of the chat a speaker's bubbles sit on, fixed by who the speaker is, never by who
happens to talk first in a conversation (bubbles swapped sides between the conversations
of a best-worst tuple). Side-a is the system's side throughout, as on the rater's chat page
(``raters/chat.html``: the bot on side-a, the rater on side-b)."""
from __future__ import annotations

from typing import Any

# Speaker names that stand for the system in the corpora Concord reads (FED "model", DSTC "system",
# the chat transcripts' "Bot", OpenAI's "assistant").
SYSTEM_SPEAKERS = frozenset({"system", "model", "bot", "assistant", "agent", "machine", "sys", "s"})


def context_sides(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The context of a judged response: the response replies to the context's last speaker, so that
    speaker is on side-b and every other speaker, the response's own speaker among them, on side-a."""
    last = turns[-1].get("speaker") if turns else None
    return [{**turn, "side": "side-b" if turn.get("speaker") == last else "side-a"} for turn in turns]


def dialogue_sides(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A whole dialogue: the system's speaker (a name in ``SYSTEM_SPEAKERS``) on side-a and the others on
    side-b; where no speaker is named as a system, the speaker whose name sorts first is on side-a
    (so "A"/"B" dialogues keep A on side-a whoever opens)."""
    names = {str(turn.get("speaker", "")) for turn in turns}
    systems = {n for n in names if n.strip().lower() in SYSTEM_SPEAKERS}
    left = systems or ({min(names)} if names else set())
    return [{**turn, "side": "side-a" if str(turn.get("speaker", "")) in left else "side-b"} for turn in turns]
