"""What a rating judges, as one key for every reader: the response in a response-unit study, the
conversation in a dialogue-unit study (``Study.unit``; see ``Rating``). The analysis layer
(``studies.analysis``: ICC, alpha, system means) works on a ``unit`` column and never asks which kind
it holds; a condition is one study, and a study has one unit, so ids of the two kinds never mix in one
ICC. The expressions below are what the selectors put in that column."""

from __future__ import annotations

from django.db.models import Count, F, OuterRef, Subquery, TextField
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Coalesce

from studies.models import StudyItemConversation

# The rated target's id: the response's, or the conversation's (exactly one is set: rating_one_target).
TARGET_ID = Coalesce(F("response_id"), F("conversation_id"))
# The system judged: the response's system, or the system that took part in a rated dialogue
# (kept in the conversation's metadata by the dialogue-level imports, e.g. FED's "model").
TARGET_SYSTEM = Coalesce(
    F("response__system__name"), KeyTextTransform("system", "conversation__metadata"), output_field=TextField()
)


def with_targets(ratings):
    """Ratings annotated with ``target_id`` and ``target_system`` (see above)."""
    return ratings.annotate(target_id=TARGET_ID, target_system=TARGET_SYSTEM)


# How many dialogues a dialogue-unit BWS item ranks (its m in the m + 1 - rank normalisation); NULL on
# other items, so callers coalesce it with the count of the item's responses.
DIALOGUES_SHOWN = Subquery(
    StudyItemConversation.objects.filter(item=OuterRef("item")).values("item").annotate(n=Count("id")).values("n")[:1]
)
