"""Reads of the chat unit: the state of a rater's chat (for the page and its JSON), the transcripts of a
study (for the item browser and exports), and the systems a chat study can use. The rater's views never
name a system: sides are letters."""
from __future__ import annotations

import statistics
import string
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Avg, Count, Max, Q, Sum
from django.utils import timezone
from django.utils.translation import gettext

from studies.chat import turn_questions
from studies.chat.client import RATER_MESSAGES
from studies.chat.config import chat_config
from studies.chat.services import STALE_MARGIN_SECONDS
from studies.endpoint_owners import chat_systems_usable_by, endpoints_visible_to
from studies.models import Assignment, AssignmentItem, Chat, ChatTurn, Study, StudyItemSystem

__all__ = ["chat_systems_usable_by", "endpoints_visible_to", "chat_state", "state_chats", "chat_waiting", "slot_chats", "chat_ended", "item_systems",
           "study_chats", "chat_summary", "systems_with_endpoints"]

WHO = {ChatTurn.Role.USER: "You", ChatTurn.Role.SYSTEM: "Bot"}


def _status(chat: Chat, now) -> str:
    if chat.status == Chat.Status.WAITING and chat.waiting_since < now - timedelta(
            seconds=settings.CHAT_REPLY_DEADLINE_SECONDS + STALE_MARGIN_SECONDS):
        return Chat.Status.FAILED
    return chat.status


def _reply_wait(asked: dict | None, reply: dict) -> float:
    """Seconds from the rater's message to the reply's storing (the bot's time and the server's, which
    under load adds to it), or the bot's time alone where that does not tell (a reply to a retry)."""
    seconds = reply["seconds"]
    if asked is None or "time" not in asked or "time" not in reply:
        return seconds
    waited = (datetime.fromisoformat(reply["time"]) - datetime.fromisoformat(asked["time"])).total_seconds()
    return waited if 0 <= waited - seconds < 10 else seconds


def state_chats(assignment: Assignment | int, item_id: int) -> list[Chat]:
    """The rater's chats on one item with their transcripts (``Conversation.turns``, stored with each
    ChatTurn in the same transaction, ``services._append``): what ``chat_state`` reads, in one query."""
    return list(Chat.objects.filter(assignment=assignment, item_id=item_id).select_related("conversation")
                .order_by("position"))


def chat_state(assignment: Assignment, item_id: int, chats: list[Chat] | None = None) -> dict[str, Any]:
    """What the chat page shows and its script polls: each side's turns (the rater's and the bot's, no
    system name), its status and the rater's message for a failure, and what the rater may do now.
    ``chats``: the item's chats with their conversations as the caller holds them (a turn's, just
    written), else read here (``state_chats``)."""
    config, now = chat_config(assignment.study), timezone.now()
    if chats is None:
        chats = state_chats(assignment, item_id)
    replies: list[float] = []
    sides = []
    for chat in chats:
        turns = []
        asked = None
        for index, turn in enumerate(chat.conversation.turns):
            role = turn["speaker"]
            turns.append({"role": role, "who": WHO[role], "text": turn["text"], "index": index})
            if role == ChatTurn.Role.USER:
                asked = turn
            elif turn.get("seconds") is not None:
                replies.append(_reply_wait(asked, turn))
                asked = None
        status = _status(chat, now)
        failed = status == Chat.Status.FAILED
        sides.append({"letter": string.ascii_uppercase[chat.position], "status": status, "turns": turns,
                      "error": gettext(RATER_MESSAGES.get(chat.error_kind or "timeout", RATER_MESSAGES["reply"]))
                      if failed else "",
                      "exchanges": sum(t["role"] == ChatTurn.Role.SYSTEM for t in turns)})
    statuses = {side["status"] for side in sides}
    exchanges = min((side["exchanges"] for side in sides), default=0)
    ended = bool(sides) and statuses == {Chat.Status.ENDED}
    return {
        "sides": sides, "exchanges": exchanges, "min_turns": config["min_turns"], "max_turns": config["max_turns"],
        "message_max_chars": config["message_max_chars"], "ended": ended,
        # when the page first looks for a reply: the median wait for the system's replies so far
        "reply_expected_ms": round(1000 * statistics.median(replies)) if replies else None,
        "waiting": Chat.Status.WAITING in statuses, "failed": Chat.Status.FAILED in statuses,
        # per-turn questions after each bot reply (studies.chat.turn_questions): the next message waits for them
        "questions": (asked := turn_questions.turn_questions(assignment, item_id)),
        "can_send": bool(sides) and statuses == {Chat.Status.OPEN} and exchanges < config["max_turns"]
        and not (asked and asked["pending"]),
        "can_retry": Chat.Status.FAILED in statuses,
        "can_end": not ended and Chat.Status.WAITING not in statuses
        and (Chat.Status.FAILED in statuses or exchanges >= config["min_turns"]),
    }


def chat_waiting(token: str, position: int) -> list[tuple[int, int, str, Any]]:
    """The chats of one slot that wait for a reply, as (assignment id, item id, caller, waiting since),
    for a started assignment: the page's poll while the system writes, in one light query (no
    assignment, study or item loaded). Empty: something changed, the page needs the whole state."""
    slot_item = AssignmentItem.objects.filter(assignment__token=token, position=position).values("item_id")
    return list(Chat.objects.filter(assignment__token=token, assignment__status=Assignment.Status.STARTED,
                                    item_id__in=slot_item, status=Chat.Status.WAITING)
                .values_list("assignment_id", "item_id", "caller", "waiting_since"))


def slot_chats(token: str, position: int) -> list[Chat]:
    """The chats of one slot with their transcripts, assignment and study (the page's poll: one
    query, no slot loaded); empty when the slot has none (not opened, or no such slot)."""
    slot_item = AssignmentItem.objects.filter(assignment__token=token, position=position).values("item_id")
    return list(Chat.objects.filter(assignment__token=token, item_id__in=slot_item)
                .select_related("conversation", "assignment__study").order_by("position"))


def chat_ended(assignment: Assignment, item_id: int) -> bool:
    """Whether the rater's chat on this item is over (and may be rated)."""
    chats = Chat.objects.filter(assignment=assignment, item_id=item_id)
    return chats.exists() and not chats.exclude(status=Chat.Status.ENDED).exists()


def item_systems(item_ids: Iterable[int]) -> dict[int, list[str]]:
    """item id -> names of the systems it chats with, canonical order (researchers' pages only)."""
    systems: dict[int, list[str]] = {}
    for item_id, name in StudyItemSystem.objects.filter(item_id__in=list(item_ids)).order_by("item_id", "position") \
            .values_list("item_id", "system__name"):
        systems.setdefault(item_id, []).append(name)
    return systems


def study_chats(study: Study, *, raw_ids: bool = False) -> Iterator[dict[str, Any]]:
    """Every chat of the study, one dict each (the transcript export's lines): item, side, system, the
    rater (pseudonym unless ``raw_ids``), status, end reason, failures and the turns with their time and
    seconds, and the settings the bot was given (persona, system prompt, sampling). Never an endpoint's
    URL or key."""
    from studies.reports.selectors import rater_pseudonym

    chats = (Chat.objects.filter(item__study=study).order_by("pk")
             .values_list("pk", "item_id", "item__position", "position", "system__name", "conversation_id",
                          "conversation__external_id", "assignment__rater_id", "assignment__rater__platform",
                          "assignment__rater__external_id", "status", "end_reason", "failures", "started_at",
                          "ended_at", "conversation__turns", "conversation__metadata"))
    for (pk, item_id, item_position, side, system, conversation_id, external_id, rater_id, platform, external,
         status, end_reason, failures, started, ended, turns, metadata) in chats.iterator(chunk_size=500):
        yield {"study": study.slug, "chat": pk, "item": item_id, "item_position": item_position, "side": side,
               "system": system, "conversation": conversation_id, "conversation_external_id": external_id,
               "rater": f"{platform}:{external}" if raw_ids else rater_pseudonym(study.experiment_id, rater_id),
               "status": status, "end_reason": end_reason, "failures": failures,
               "started_at": started.isoformat(), "ended_at": ended.isoformat() if ended else None,
               "settings": (metadata or {}).get("settings") or {}, "turns": turns}


def chat_summary(studies: Iterable[Study]) -> list[dict[str, Any]]:
    """Per chat study and system: chats, how they ended (by the rater, at the last turn, after the system
    failed), failed calls, replies per chat and the system's reply time (mean and slowest, seconds,
    retries included); aggregated in the database. Chats on check items (a scripted reply stands for one of the
    system's) are left out."""
    ids = [s.pk for s in studies]
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for slug, title, system, chats, ended, failed_end, failures in (
            Chat.objects.filter(item__study_id__in=ids, item__check_kind="").values("item__study__slug", "item__study__title", "system__name")
            .annotate(n=Count("id"), ended=Count("id", filter=Q(status=Chat.Status.ENDED)),
                      failed_end=Count("id", filter=Q(end_reason=Chat.EndReason.BOT_FAILED)), failures=Sum("failures"))
            .order_by("item__study__slug", "system__name")
            .values_list("item__study__slug", "item__study__title", "system__name", "n", "ended", "failed_end",
                         "failures")):
        rows[(slug, system)] = {"study": slug, "title": title, "system": system, "chats": chats, "ended": ended,
                                "ended_after_failure": failed_end, "failed_calls": failures or 0,
                                "replies_per_chat": None, "reply_seconds_mean": None, "reply_seconds_max": None}
    for slug, system, replies, mean, slowest in (
            ChatTurn.objects.filter(chat__item__study_id__in=ids, chat__item__check_kind="", role=ChatTurn.Role.SYSTEM)
            .values("chat__item__study__slug", "chat__system__name")
            .annotate(n=Count("id"), mean=Avg("seconds"), slowest=Max("seconds"))
            .values_list("chat__item__study__slug", "chat__system__name", "n", "mean", "slowest")):
        row = rows[(slug, system)]
        row.update(replies_per_chat=replies / row["chats"], reply_seconds_mean=mean, reply_seconds_max=slowest)
    return list(rows.values())


def systems_with_endpoints(user) -> list[dict[str, Any]]:
    """The endpoints ``user`` may see (``endpoints_visible_to``): id, system, owner, protocol, URL, model
    and whether a key is set (never the key)."""
    return [{"id": e.pk, "system": e.system.name, "owner": e.owner.get_username() if e.owner else "admins only",
             "protocol": e.protocol, "url": e.url, "model_name": e.model_name, "has_key": e.has_key,
             "key_source": "environment" if e.key_env else ("stored" if e.key_encrypted else "")}
            for e in endpoints_visible_to(user).order_by("system__name", "owner_id")]
