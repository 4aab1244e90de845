"""Reads for the self-chat pages and API: a researcher's runs (admins: every run), their self-chat
corpora (the ones a run may fill), each bot's settings as shown, and one conversation's turns."""
from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from studies.chat.selfchat import speakers
from studies.models import Corpus, SelfChatDialogue, SelfChatRun


def selfchat_runs_of(user) -> QuerySet[SelfChatRun]:
    runs = SelfChatRun.objects.select_related("system_a", "system_b", "corpus")
    return runs if user.is_superuser else runs.filter(owner=user)


def selfchat_corpora(user) -> QuerySet[Corpus]:
    """The corpora a new run may fill: the user's own self-chat corpora, newest first."""
    return Corpus.objects.filter(owner=user, source_format="selfchat").order_by("-created_at", "-pk")


def run_settings(run: SelfChatRun) -> list[dict[str, Any]]:
    """Per bot: its system, speaker name, settings and personas, for the run and conversation pages."""
    names = speakers(run)
    return [{"side": side, "system": (run.system_a if side == "a" else run.system_b).name, "speaker": names[side],
             "settings": (run.bot_settings or {}).get(side, {}), "personas": (run.personas or {}).get(side, [])}
            for side in ("a", "b")]


def dialogue_turns(run: SelfChatRun, dialogue: SelfChatDialogue) -> list[dict[str, Any]]:
    """The conversation as the corpus holds it (or, not finished yet, as stored so far: the opener, then
    the bots' turns), each turn with its speaker and whether it is the opener."""
    if dialogue.conversation is not None:
        return list(dialogue.conversation.turns)
    return [{"speaker": speakers(run)["b"], "text": dialogue.opener, "opener": True}, *dialogue.turns]
