"""Reads for the corpus browser (the pages under /corpora/ and the API's corpus conversations): the
conversations of one corpus found by text, system and speaker, and one conversation as raters would
see it, with its system, the speaker judged, its persona and the settings it was made with.

Visibility is the import page's (``listing.corpora_listed``): a researcher's own corpora and the shared
ones nobody owns; another researcher's corpus is never found (the views answer 404).

Search runs in the database on the turns' JSON text (``Cast(turns, text)``), so it pages through a large
corpus without loading it: ``text`` is a case-insensitive substring of any turn or response; ``speaker``
matches a turn's speaker name exactly (as stored, ``"speaker": "<name>"``); ``system`` is the
conversation's ``metadata.system`` (dialogue corpora) or the system of one of its responses."""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django.db import connection
from django.db.models import Count, Q, QuerySet, TextField
from django.db.models.functions import Cast

from studies.corpora.listing import corpora_listed
from studies.designs.units.sides import dialogue_sides
from studies.models import Conversation, Corpus, Response

PAGE_SIZE = 25
# Metadata keys that say who the conversation is with and how it was made, shown first and by name.
PERSONA_KEYS = ("persona", "personas", "bot_persona_strings", "context", "system_prompt")
SHOWN_APART = ("system", "judged_speaker")


def corpora_browsed(user) -> QuerySet[Corpus]:
    """The corpora a researcher may browse, with their counts (newest first)."""
    return corpora_listed(user)


def _json_text(value: str) -> str:
    # PostgreSQL's jsonb text keeps non-ASCII characters; SQLite keeps the text json.dumps wrote (escaped).
    return json.dumps(value, ensure_ascii=connection.vendor != "postgresql")


def conversations_found(corpus: Corpus, *, text: str = "", system: str = "", speaker: str = "") -> QuerySet[Conversation]:
    """The corpus's conversations matching every filter given (module docstring), in import order, each
    with ``responses_count``."""
    found = corpus.conversations.all()
    if text or speaker:
        found = found.annotate(turns_text=Cast("turns", output_field=TextField()))
    if text:
        escaped = _json_text(text)[1:-1]  # as the text appears inside the stored JSON string
        in_responses = Response.objects.filter(conversation__corpus=corpus, text__icontains=text).values("conversation_id")
        found = found.filter(Q(turns_text__icontains=escaped) | Q(pk__in=in_responses))
    if speaker:
        found = found.filter(turns_text__contains=f'"speaker": {_json_text(speaker)}')
    if system:
        by_response = Response.objects.filter(conversation__corpus=corpus, system__name=system).values("conversation_id")
        found = found.filter(Q(metadata__system=system) | Q(pk__in=by_response))
    return found.annotate(responses_count=Count("responses")).order_by("pk")


def corpus_systems_and_speakers(corpus: Corpus, limit: int = 200) -> tuple[list[str], list[str]]:
    """The systems (from the conversations' metadata and their responses) and the speakers of a corpus,
    for the browser's filters; read from at most ``limit`` conversations' turns for the speakers."""
    systems = set(Response.objects.filter(conversation__corpus=corpus).values_list("system__name", flat=True).distinct())
    systems |= {str(s) for s in corpus.conversations.exclude(metadata__system=None)
                .values_list("metadata__system", flat=True).distinct() if s}
    speakers: dict[str, None] = {}
    for turns in corpus.conversations.order_by("pk").values_list("turns", flat=True)[:limit]:
        for turn in turns or []:
            if isinstance(turn, Mapping) and turn.get("speaker") not in (None, ""):
                speakers[str(turn["speaker"])] = None
    return sorted(systems), sorted(speakers)


def preview_text(conversation: Conversation, length: int = 140) -> str:
    """The conversation's first turns, shortened, for a list row."""
    texts = [str(t.get("text", "")) for t in (conversation.turns or [])[:3] if isinstance(t, Mapping)]
    joined = " / ".join(texts)
    return joined if len(joined) <= length else joined[: length - 1] + "…"


def conversation_speakers(conversation: Conversation) -> list[str]:
    return list(dict.fromkeys(str(t.get("speaker", "")) for t in conversation.turns or [] if isinstance(t, Mapping)))


def conversation_shown(conversation: Conversation) -> dict[str, Any]:
    """One conversation as a rater reads it (turns on the rater page's two sides, the judged speaker's
    turns marked), with its system, judged speaker, persona and the rest of its metadata (settings)."""
    metadata = conversation.metadata if isinstance(conversation.metadata, Mapping) else {}
    judged = str(metadata.get("judged_speaker") or "")
    turns = [{"speaker": str(t.get("speaker", "")), "text": str(t.get("text", "")), "side": t["side"],
              "judged": bool(judged) and str(t.get("speaker", "")) == judged}
             for t in dialogue_sides([dict(t) for t in conversation.turns or [] if isinstance(t, Mapping)])]
    persona = {k: metadata[k] for k in PERSONA_KEYS if metadata.get(k) not in (None, "", [], {})}
    settings = {k: v for k, v in metadata.items() if k not in SHOWN_APART and k not in persona}
    responses = [{"system": r.system.name, "text": r.text, "position": r.position, "is_reference": r.is_reference}
                 for r in conversation.responses.select_related("system").order_by("system__name", "position")]
    return {"id": conversation.pk, "external_id": conversation.external_id, "corpus": conversation.corpus.slug,
            "system": str(metadata.get("system") or ""), "judged_speaker": judged,
            "speakers": conversation_speakers(conversation), "turns": turns, "responses": responses,
            "persona": persona, "settings": settings}


def shown_value(value: Any) -> str:
    """A metadata value as text: strings as they are, lists one per line, anything else as indented JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value)
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
