"""Writes of the chat unit: open a rater's chat, post a turn, retry a failed reply, end the chat (the
unit's items are built by ``studies.designs.units.chat``).

A turn is three steps so that no database lock is held while a bot thinks, and nothing the rater typed
is lost whatever the bot does:

1. one transaction with the assignment row locked (every turn of one assignment runs one after the
   other): the checks (the chat is open, the message fits, the rate limit), then the rater's message is
   stored in each chat of the item and the chats are marked waiting;
2. the bot call(s), outside any transaction (two side by side run in parallel), bounded by the
   endpoint's timeout, its retries and ``CHAT_REPLY_DEADLINE_SECONDS``;
3. one more locked transaction: the reply is stored, or the failure (the rater may retry or end).

A message re-sent with the same ``client_id`` (a double click, a retried fetch, a reloaded form) is
stored once: the unique (chat, client_id) and the lock make sure of it. A chat left waiting by a server
that died mid-call counts as failed once the deadline has long passed, so the rater can retry it.

With ``background=True`` (the rater's views) steps 2 and 3 run in the web process's call
threads (``studies.chat.calls``) and the turn returns as soon as step 1 has committed; the page follows
the chat's state. Each call is named in ``Chat.caller``: only the current call stores a reply, and a
call whose process died (a killed worker) is resumed by the next look at the chat
(``chat_replies_resume``) instead of waiting for the deadline.
"""
from __future__ import annotations

import logging
import random
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext

from studies.chat import calls, check_turns, turn_questions
from studies.chat.client import BotError, BotReply, bot_reply
from studies.chat.config import bot_settings, chat_config, recorded_settings
from studies.chat.endpoints import allowed_networks, endpoint_for_call
from studies.endpoint_owners import item_endpoints
from studies.models import (
    Assignment,
    AssignmentItem,
    Chat,
    ChatTurn,
    Conversation,
    Corpus,
    Study,
    StudyItemSystem,
    SystemEndpoint,
)
from studies.rating import platforms

logger = logging.getLogger(__name__)

STALE_MARGIN_SECONDS = 15
CLIENT_ID_MAX = 64


class ChatRefused(Exception):
    """The chat cannot do what was asked now; ``message`` is for the rater, ``status`` the HTTP status
    (400 a bad message, 409 the chat's state, 429 too fast), ``field`` the form field concerned."""

    def __init__(self, message: str, *, status: int = 409, field: str = "", retry_after: int | None = None):
        super().__init__(message)
        self.status, self.field, self.retry_after = status, field, retry_after


@dataclass
class TurnOutcome:
    stored: bool  # False when the message had been stored already (a re-send)
    replies: int  # replies stored by this call
    failures: int  # bot failures met by this call
    pending: int = 0  # chats whose reply is being fetched in the background


def chat_corpus(study: Study) -> Corpus:
    """The corpus that holds the study's chat transcripts (one per study)."""
    corpus, _ = Corpus.objects.get_or_create(
        slug=f"chat-{study.slug}"[:80],
        defaults={"title": f"Chats of {study.title}"[:200], "source_format": "chat", "source_name": study.slug,
                  "owner_id": study.experiment.owner_id})
    return corpus


def _locked(assignment: Assignment) -> Assignment:
    """The assignment row, locked; refuses one that is no longer being worked on. Only that row (``OF``): the
    study comes along unlocked, or every turn of a study would wait for every other rater's."""
    locked = Assignment.objects.select_for_update(of=("self",)).select_related("study").get(pk=assignment.pk)
    if locked.status != Assignment.Status.STARTED:
        raise ChatRefused(gettext("this task is already %(status)s") % {"status": locked.get_status_display().lower()})
    return locked


def _chats(assignment: Assignment, item_id: int) -> list[Chat]:
    return list(Chat.objects.filter(assignment=assignment, item_id=item_id)
                .select_related("conversation", "system", "item").order_by("position"))


def _expire_stale(chats: list[Chat], now) -> None:
    """A chat still waiting long after any reply could have come (the server stopped mid-call) fails."""
    limit = now - timedelta(seconds=settings.CHAT_REPLY_DEADLINE_SECONDS + STALE_MARGIN_SECONDS)
    for chat in chats:
        if chat.status == Chat.Status.WAITING and chat.waiting_since < limit:
            chat.status, chat.waiting_since = Chat.Status.FAILED, None
            chat.error_kind, chat.error = "timeout", "no reply was stored: the server stopped while waiting"
            chat.save(update_fields=["status", "waiting_since", "error_kind", "error"])


def _append(chat: Chat, role: str, text: str, now, seconds: float | None, *, client_id: str = "",
            attempts: int = 1, check: bool = False) -> None:
    """Store one turn (the ChatTurn row, whose unique keys guard against doubles) and append it to the
    chat's conversation (speaker, text, time, seconds): the transcript that reports, exports and
    metrics read. Callers hold the assignment lock, so the loaded transcript is the current one."""
    turns = chat.conversation.turns
    ChatTurn.objects.create(chat=chat, index=len(turns), role=role, text=text, client_id=client_id, created_at=now,
                            seconds=seconds, attempts=attempts)
    turns.append({"speaker": role, "text": text, "time": now.isoformat(), "seconds": seconds,
                  **({"check": True} if check else {})})  # a check item's scripted reply (chat.check_turns)
    chat.conversation.save(update_fields=["turns"])


@transaction.atomic
def chat_open(*, assignment: Assignment, item_id: int) -> list[Chat]:
    """The rater's chat(s) on this item, created on first opening: one conversation per system, in a
    per-rater order (seeded by the assignment), whose ids become the slot's rated targets."""
    locked = _locked(assignment)
    if chats := _chats(locked, item_id):
        return chats
    slot = AssignmentItem.objects.filter(assignment=locked, item_id=item_id).select_related("item").first()
    if slot is None:
        raise ChatRefused(gettext("this chat is not part of the task"), status=404)
    systems = list(StudyItemSystem.objects.filter(item_id=item_id).select_related("system").order_by("position"))
    if not systems:
        raise ChatRefused(gettext("this item has no system to chat with"), status=404)
    random.Random(f"{locked.seed}:{item_id}").shuffle(systems)
    corpus, now, study = chat_corpus(locked.study), timezone.now(), locked.study
    chats = []
    for position, link in enumerate(systems):
        conversation = Conversation.objects.create(
            corpus=corpus, external_id=f"a{locked.pk}-i{item_id}-{position}", turns=[],
            metadata={"system": link.system.name, "source": "chat", "study": study.slug, "assignment": locked.pk,
                      **({"settings": given} if (given := recorded_settings(chat_config(study))) else {})})
        chats.append(Chat.objects.create(assignment=locked, item_id=item_id, position=position, system=link.system,
                                         conversation=conversation, started_at=now))
    AssignmentItem.objects.filter(pk=slot.pk).update(response_order=[c.conversation_id for c in chats])
    return _chats(locked, item_id)


def _last_role(chat: Chat) -> str | None:
    turns = chat.conversation.turns
    return turns[-1]["speaker"] if turns else None


def _exchanges(chat: Chat) -> int:
    return sum(turn["speaker"] == ChatTurn.Role.SYSTEM for turn in chat.conversation.turns)


def _since_last(chat: Chat, now) -> float:
    """Seconds since the chat's last turn was stored (or the chat began): how long the rater took."""
    turns = chat.conversation.turns
    last = datetime.fromisoformat(turns[-1]["time"]) if turns else chat.started_at
    return max(0.0, (now - last).total_seconds())


def _message_clean(text: str, limit: int) -> str:
    text = (text or "").strip()
    if not text:
        raise ChatRefused(gettext("type a message first"), status=400, field="text")
    if len(text) > limit:
        raise ChatRefused(gettext("a message may have at most %(limit)s characters (this one has %(n)s)")
                          % {"limit": limit, "n": len(text)},
                          status=400, field="text")
    if problem := platforms.text_problem(text):
        raise ChatRefused(f"the message {problem}", status=400, field="text")
    return text


def _rate_problem(assignment: Assignment, per_minute: int, now) -> int | None:
    """Seconds to wait before the next message when the assignment sent ``per_minute`` in the last minute."""
    recent = list(ChatTurn.objects.filter(chat__assignment=assignment, chat__position=0, role=ChatTurn.Role.USER,
                                          created_at__gt=now - timedelta(seconds=60))
                  .order_by("created_at").values_list("created_at", flat=True))
    if len(recent) < per_minute:
        return None
    return max(1, int((recent[-per_minute] + timedelta(seconds=60) - now).total_seconds()) + 1)


def _begin_turn(assignment: Assignment, item_id: int, text: str, client_id: str,
                caller: str = "") -> tuple[list[Chat], bool]:
    """Step 1 of a turn: store the rater's message in each chat and mark them waiting for ``caller`` (locked)."""
    with transaction.atomic():
        locked = _locked(assignment)
        config, now = chat_config(locked.study), timezone.now()
        chats = _chats(locked, item_id)
        if not chats:
            raise ChatRefused(gettext("open the chat first"), status=404)
        if client_id and ChatTurn.objects.filter(chat=chats[0], client_id=client_id).exists():
            return chats, False  # a re-send of a stored message
        _expire_stale(chats, now)
        text = _message_clean(text, config["message_max_chars"])
        statuses = {c.status for c in chats}
        if Chat.Status.ENDED in statuses:
            raise ChatRefused(gettext("this chat has ended"))
        if Chat.Status.WAITING in statuses:
            raise ChatRefused(gettext("wait for the reply before sending another message"))
        if Chat.Status.FAILED in statuses:
            raise ChatRefused(gettext("the system did not reply to your last message: try again or end the chat"))
        if _exchanges(chats[0]) >= config["max_turns"]:
            raise ChatRefused(gettext("this chat has had its %(max_turns)s turns") % {"max_turns": config["max_turns"]})
        if turn_questions.unanswered(locked, item_id):  # model-chat: the questions on each reply come first
            raise ChatRefused(gettext("answer the questions about the bot's last reply first; your message is still "
                                      "in the box"), status=409, field="questions")
        if wait := _rate_problem(locked, config["messages_per_minute"], now):
            raise ChatRefused(gettext("you are sending messages quickly: wait %(wait)s s and send it again; your "
                                      "message is still in the box") % {"wait": wait},
                              status=429, field="text", retry_after=wait)
        for chat in chats:
            _append(chat, ChatTurn.Role.USER, text, now, _since_last(chat, now), client_id=client_id)
            chat.status, chat.waiting_since, chat.caller = Chat.Status.WAITING, now, caller
            chat.save(update_fields=["status", "waiting_since", "caller"])
        return chats, True


def _request(chat: Chat, endpoint: SystemEndpoint | None):
    """What step 2 needs for one chat, read here (in the request's thread): the endpoint with its key,
    or the BotError that stands for the reply, and the dialogue so far (as step 1 or the retry left it).
    ``endpoint`` is the study owner's for the chat's system (``studies.endpoint_owners.item_endpoints``), never
    another researcher's: without one the turn fails and no key is sent."""
    history = [{"speaker": t["speaker"], "text": t["text"]} for t in chat.conversation.turns]
    try:
        endpoint = endpoint_for_call(endpoint)
    except BotError as error:
        return error, history, chat.conversation.external_id, {}
    sent = bot_settings((chat.conversation.metadata or {}).get("settings"), endpoint.protocol)
    return endpoint, history, chat.conversation.external_id, sent


def _ask(request) -> BotReply | BotError:
    """Step 2 for one chat: the bot call alone (no database access, so it may run in a thread)."""
    endpoint, history, conversation_id, sent = request
    if isinstance(endpoint, BotError):
        return endpoint
    try:
        return bot_reply(endpoint, history, conversation_id=conversation_id,
                         deadline_seconds=settings.CHAT_REPLY_DEADLINE_SECONDS, allowed=allowed_networks(),
                         settings=sent)
    except BotError as error:
        return error
    except Exception as error:  # noqa: BLE001 - whatever the call raises, the turn ends as failed with Try again
        logger.exception("a chat bot call raised")
        return BotError("reply", f"the call failed: {type(error).__name__}: {error}"[:500])


def _call_bots(requests: dict[int, tuple]) -> dict[int, BotReply | BotError]:
    """Step 2: every waiting chat's bot (chat id -> ``_request``), in parallel when there are two."""
    if len(requests) == 1:
        [(pk, request)] = requests.items()
        return {pk: _ask(request)}
    with ThreadPoolExecutor(max_workers=len(requests)) as pool:
        return dict(zip(requests, pool.map(_ask, requests.values()), strict=True))


def _answer(assignment: Assignment, item_id: int, chats: list[Chat], caller: str, background: bool) -> TurnOutcome:
    """Steps 2 and 3 for ``chats`` (marked waiting for ``caller``): here, or in this process's call
    threads once the marking has committed."""
    scripted = {chat.pk: reply for chat in chats if (reply := check_turns.scripted_reply_due(chat))}
    if scripted:  # a check item's scripted reply stands for the bot's: no call for this turn
        return _finish_turn(assignment, item_id, scripted, caller)
    owned = item_endpoints(item_id, [c.system_id for c in chats])  # the study owner's, read at every turn
    requests = {chat.pk: _request(chat, owned.get(chat.system_id)) for chat in chats}  # no query in the call thread
    if not background:
        return _finish_turn(assignment, item_id, _call_bots(requests), caller)
    assignment_id = assignment.pk

    def job() -> None:
        try:
            _finish_turn(Assignment(pk=assignment_id), item_id, _call_bots(requests), caller)
        except Exception as error:  # the outcome could not be stored: fail the turn now, not at the stale margin
            logger.exception("a chat reply could not be stored")
            _fail_waiting(list(requests), caller, f"the reply could not be stored: {type(error).__name__}")

    transaction.on_commit(lambda: calls.background(job))
    return TurnOutcome(stored=True, replies=0, failures=0, pending=len(chats))


def _fail_waiting(chat_ids: list[int], caller: str, detail: str) -> int:
    """The chats still waiting for ``caller`` fail with ``detail`` (one UPDATE, no lock or read: the last
    resort of a call thread whose outcome could not be stored); how many."""
    return Chat.objects.filter(pk__in=chat_ids, status=Chat.Status.WAITING, caller=caller).update(
        status=Chat.Status.FAILED, waiting_since=None, error_kind="reply", error=detail[:2000],
        failures=F("failures") + 1)


def _finish_turn(assignment: Assignment, item_id: int, outcomes: dict[int, BotReply | BotError],
                 caller: str = "") -> TurnOutcome:
    """Step 3: store each reply (or failure) in a chat still waiting for it, from this call (locked)."""
    replies = failures = 0
    with transaction.atomic():
        locked = Assignment.objects.select_for_update(of=("self",)).select_related("study").get(pk=assignment.pk)
        max_turns, now = chat_config(locked.study)["max_turns"], timezone.now()
        for chat in _chats(locked, item_id):
            outcome = outcomes.get(chat.pk)
            if outcome is None or chat.status != Chat.Status.WAITING or (caller and chat.caller != caller):
                continue  # ended, expired or resumed by another call meanwhile: the late reply is dropped
            if isinstance(outcome, BotError):
                failures += 1
                chat.status, chat.waiting_since = Chat.Status.FAILED, None
                chat.error_kind, chat.error, chat.failures = outcome.kind, str(outcome)[:2000], chat.failures + 1
                chat.save(update_fields=["status", "waiting_since", "error_kind", "error", "failures"])
                continue
            replies += 1
            _append(chat, ChatTurn.Role.SYSTEM, outcome.text, now, outcome.seconds, attempts=outcome.attempts,
                    check=isinstance(outcome, check_turns.ScriptedReply))
            chat.status, chat.waiting_since, chat.error_kind, chat.error = Chat.Status.OPEN, None, "", ""
            if _exchanges(chat) >= max_turns:
                chat.status, chat.ended_at, chat.end_reason = Chat.Status.ENDED, now, Chat.EndReason.MAX_TURNS
            chat.save(update_fields=["status", "waiting_since", "error_kind", "error", "ended_at", "end_reason"])
    return TurnOutcome(stored=True, replies=replies, failures=failures)


def chat_turn_post(*, assignment: Assignment, item_id: int, text: str, client_id: str = "",
                   background: bool = False) -> TurnOutcome:
    """The rater sends ``text``; every system of the item replies (or fails). ``client_id`` (the page's
    id for this message, up to 64 characters) makes a re-send store once. ChatRefused when the chat
    cannot take a message now (nothing stored then). ``background``: return once the message is stored,
    the replies following in this process's call threads (``pending``)."""
    client_id = (client_id or "")[:CLIENT_ID_MAX]
    caller = calls.caller_new()
    chats, stored = _begin_turn(assignment, item_id, text, client_id, caller)
    if not stored:
        if background:  # a re-send after a lost answer: its call may have died with the worker
            chat_replies_resume(assignment=assignment, item_id=item_id)
        return TurnOutcome(stored=False, replies=0, failures=0)
    return _answer(assignment, item_id, chats, caller, background)


def chat_reply_retry(*, assignment: Assignment, item_id: int, background: bool = False) -> TurnOutcome:
    """Ask again the systems that failed to answer the rater's last message."""
    with transaction.atomic():
        locked = _locked(assignment)
        now = timezone.now()
        chats = _chats(locked, item_id)
        _expire_stale(chats, now)
        failed = [c for c in chats if c.status == Chat.Status.FAILED]
        for chat in [c for c in failed if _last_role(c) != ChatTurn.Role.USER]:  # nothing left to answer
            chat.status, chat.error_kind, chat.error = Chat.Status.OPEN, "", ""
            chat.save(update_fields=["status", "error_kind", "error"])
            failed.remove(chat)
        if not failed:
            return TurnOutcome(stored=False, replies=0, failures=0)
        caller = calls.caller_new()
        for chat in failed:
            chat.status, chat.waiting_since, chat.caller = Chat.Status.WAITING, now, caller
            chat.save(update_fields=["status", "waiting_since", "caller"])
    return _answer(assignment, item_id, failed, caller, background)


def chat_replies_resume(*, assignment: Assignment, item_id: int, callers: list[str] | None = None) -> int:
    """Call again, in the background, the chats of this item still waiting for a call whose process is
    gone (``calls.caller_alive``: a killed or restarted worker on this node, or a node whose lease in the
    shared cache ended); the number resumed. A call that cannot be told (another node without a shared
    cache) is left to the reply deadline (then the chat fails and the rater may retry). Cheap when nothing waits: one query (none with ``callers``, the waiting
    chats' callers as the caller read them), no lock."""
    if callers is None:
        callers = list(Chat.objects.filter(assignment_id=assignment.pk, item_id=item_id,
                                           status=Chat.Status.WAITING).values_list("caller", flat=True))
    if not any(calls.caller_alive(caller) is False for caller in callers):
        return 0
    with transaction.atomic():
        try:
            locked = _locked(assignment)
        except ChatRefused:
            return 0
        now = timezone.now()
        chats = _chats(locked, item_id)
        _expire_stale(chats, now)
        orphans = [c for c in chats if c.status == Chat.Status.WAITING and calls.caller_alive(c.caller) is False
                   and _last_role(c) == ChatTurn.Role.USER]
        if not orphans:
            return 0
        caller = calls.caller_new()
        for chat in orphans:
            chat.waiting_since, chat.caller = now, caller
            chat.save(update_fields=["waiting_since", "caller"])
    _answer(locked, item_id, orphans, caller, background=True)
    return len(orphans)


@transaction.atomic
def chat_end(*, assignment: Assignment, item_id: int) -> list[Chat]:
    """The rater ends the chat and moves on to rating it: once it has had ``min_turns`` exchanges, or at
    any time after a system failed (the transcript keeps what there is, and the reason)."""
    locked = _locked(assignment)
    now = timezone.now()
    chats = _chats(locked, item_id)
    if not chats:
        raise ChatRefused(gettext("open the chat first"), status=404)
    _expire_stale(chats, now)
    if all(c.status == Chat.Status.ENDED for c in chats):
        return chats
    if any(c.status == Chat.Status.WAITING for c in chats):
        raise ChatRefused(gettext("wait for the reply before ending the chat"))
    failed = any(c.status == Chat.Status.FAILED for c in chats)
    minimum, done = chat_config(locked.study)["min_turns"], min(_exchanges(c) for c in chats)
    if not failed and done < minimum:
        raise ChatRefused(gettext("chat for at least %(minimum)s turns before you end it (so far %(done)s)")
                          % {"minimum": minimum, "done": done})
    reason = Chat.EndReason.BOT_FAILED if failed else Chat.EndReason.RATER
    for chat in chats:
        if chat.status != Chat.Status.ENDED:
            chat.status, chat.ended_at, chat.end_reason, chat.waiting_since = Chat.Status.ENDED, now, reason, None
            chat.save(update_fields=["status", "ended_at", "end_reason", "waiting_since"])
    return chats
