"""What one screen of a design is called on the rater pages, in the page's language: the designs name it
in English (``StudyDesign.screen_nouns``: "pairs of responses"); the words known here are translated,
any other noun keeps the English derivation (``first word's plural s dropped``)."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _

# English plural -> (the plural counted on the start page, its singular, one screen's heading)
SCREEN_WORDS = {
    "conversations": (_("conversations"), _("conversation"), _("Conversation")),
    "dialogues": (_("dialogues"), _("dialogue"), _("Dialogue")),
    "pairs of responses": (_("pairs of responses"), _("pair of responses"), _("Pair of responses")),
    "pairs of conversations": (_("pairs of conversations"), _("pair of conversations"), _("Pair of conversations")),
    "sets of responses": (_("sets of responses"), _("set of responses"), _("Set of responses")),
    "sets of dialogues": (_("sets of dialogues"), _("set of dialogues"), _("Set of dialogues")),
}


def _one(noun: str) -> str:
    first, _sep, rest = noun.partition(" ")
    return " ".join(filter(None, [first.removesuffix("s"), rest]))


def screen_words(noun: str) -> tuple[str, str, str]:
    """(plural, singular, heading) of a design's screen noun, translated where known."""
    known = SCREEN_WORDS.get(noun)
    if known:
        return tuple(str(word) for word in known)
    one = _one(noun)
    return noun, one, (one[:1].upper() + one[1:]) or "Item"
