"""Self-chats: two bots (or one with itself) talk from an opener for a number of turns; the finished
conversations are a corpus (``SelfChatRun.corpus``) that an ACUTE-Eval study compares (Li, Weston and
Roller 2019 compare self-chats when human–bot chats cost too much).

- ``selfchat_create``: the run, one ``SelfChatDialogue`` per conversation with its opener and each bot's
  persona drawn (``selfchat_draws``), into a new corpus or a self-chat corpus of the researcher's own
  (several runs of several pairs of bots fill one, for one ACUTE-Eval study); the job is queued by name
  (``studies.tasks.selfchat_run``). Both systems' endpoints must be the researcher's own: they are looked
  up through ``chat.selectors.endpoints_visible_to(owner)`` only.
- ``selfchat_run``: makes every dialogue not yet done, turn by turn. Bot a answers the opener, then b,
  then a ... until ``turns`` bot turns. The transcript gives the opener to bot b, so each bot sees the
  transcript: its own turns (b's include the opener) as the system's, the other's as the user's; each gets
  its settings and its persona (``client.request_body``: the system prompt, then the persona). A cancelled
  run stops before its next call (``selfchat_cancel``). Each finished turn is
  saved at once, so a rerun (a Celery redelivery after a worker died, or the researcher's "run again")
  continues where the stored turns end. Calls to one endpoint are spaced by its ``requests_per_minute``.
- A failing endpoint (``client.BotError`` after its retries) is recorded on the dialogue (side, kind,
  detail), which keeps its turns and is not in the corpus; after ``MAX_FAILURES_IN_A_ROW`` failed
  dialogues the run stops (status failed). Only a dialogue with all its turns becomes a ``Conversation``
  (metadata: ``system`` = bot a's, ``judged_speaker`` = bot a's speaker, ``partner``, and each bot's
  system, protocol, model, settings and persona, ``personas``, ``opener``, ``seed``), in the transaction that
  marks it done.
"""
from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from django.conf import settings as django_settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from studies import jobs
from studies.chat.client import BotError, bot_reply
from studies.chat.endpoints import allowed_networks, endpoint_for_call
from studies.chat.selectors import endpoints_visible_to
from studies.models import Conversation, Corpus, SelfChatDialogue, SelfChatRun, SystemEndpoint

MAX_FAILURES_IN_A_ROW = 3
MAX_OPENERS, MAX_OPENER_CHARS = 1000, 2000
MAX_PERSONAS, MAX_PERSONA_CHARS = 1000, 2000
# Each bot's settings: the key, its kind and range (``bot_settings_clean``).
BOT_SETTINGS: dict[str, tuple[type, float, float]] = {
    "system_prompt": (str, 0, 4000), "temperature": (float, 0.0, 2.0), "top_p": (float, 0.0, 1.0),
    "max_tokens": (int, 1, 32000), "requests_per_minute": (int, 0, 6000),
}


def bot_settings_clean(raw: Any, prefix: str, errors: dict[str, str]) -> dict[str, Any]:
    """One bot's settings checked (``BOT_SETTINGS``); problems keyed ``<prefix>.<key>``."""
    if raw in (None, ""):
        return {}
    if not isinstance(raw, Mapping):
        errors[prefix] = "must be an object of settings"
        return {}
    clean: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in BOT_SETTINGS:
            errors[f"{prefix}.{key}"] = f"unknown setting; use {', '.join(BOT_SETTINGS)}"
            continue
        kind, low, high = BOT_SETTINGS[key]
        if value in (None, ""):
            continue
        if kind is str:
            if not isinstance(value, str) or len(value) > high:
                errors[f"{prefix}.{key}"] = f"must be text of at most {int(high)} characters"
                continue
            clean[key] = value.strip()
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and value != int(value)):
            errors[f"{prefix}.{key}"] = f"must be a {'whole ' if kind is int else ''}number from {low:g} to {high:g}"
            continue
        if not low <= value <= high:
            errors[f"{prefix}.{key}"] = f"must be from {low:g} to {high:g}, got {value!r}"
            continue
        clean[key] = kind(value)
    return clean


def balanced_draws(options: Sequence[str], count: int, *, seed: int, stream: str) -> list[str]:
    """``count`` draws from ``options``, each used ``floor(count/n)`` or ``ceil(count/n)`` times: the options
    are shuffled anew for every block of ``n`` draws by ``random.Random(f"{seed}:{stream}")``. The same seed
    and lists give the same draws, so runs of different systems with one seed meet the same contexts at
    the same conversation (balanced across systems, as ParlAI seeds its contexts per conversation)."""
    if not options:
        return [""] * count
    rng, drawn = random.Random(f"{seed}:{stream}"), []
    while len(drawn) < count:
        block = list(options)
        rng.shuffle(block)
        drawn += block
    return drawn[:count]


def selfchat_draws(run: SelfChatRun) -> list[dict[str, Any]]:
    """Each conversation's opener and personas: ``{"opener": ..., "personas": {"a": ..., "b": ...}}``."""
    openers = balanced_draws(run.openers, run.conversations, seed=run.seed, stream="openers")
    sides = {side: balanced_draws((run.personas or {}).get(side) or [], run.conversations, seed=run.seed,
                                  stream=f"personas-{side}") for side in ("a", "b")}
    return [{"opener": openers[i], "personas": {side: sides[side][i] for side in ("a", "b") if sides[side][i]}}
            for i in range(run.conversations)]


def _lines_clean(raw: Any, field: str, errors: dict[str, str], *, low: int, high: int, longest: int,
                 noun: str) -> list[str]:
    """A list of texts (one per line in the form); problems name the line."""
    if raw in (None, "") and low == 0:
        return []
    if isinstance(raw, str) or not isinstance(raw, Sequence):
        errors[field] = f"give a list of {noun}s, one per line"
        return []
    cleaned = []
    for line, value in enumerate(raw, start=1):
        text = value.strip() if isinstance(value, str) else ""
        if not text:
            errors[field] = f"line {line}: an {noun} must be non-empty text" if noun[0] in "aeiou" else \
                f"line {line}: a {noun} must be non-empty text"
            return []
        if len(text) > longest:
            errors[field] = f"line {line}: at most {longest} characters (it has {len(text)})"
            return []
        cleaned.append(text)
    if not low <= len(cleaned) <= high:
        errors[field] = f"give from {low} to {high} {noun}s, got {len(cleaned)}"
    return cleaned


def _visible_endpoint(owner: Any, system_name: str) -> SystemEndpoint | None:
    return endpoints_visible_to(owner).filter(system__name=system_name).select_related("system").first()


def _corpus_slug(title: str) -> str:
    base = (slugify(title) or "self-chat")[:60]
    slug, n = base, 1
    while Corpus.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug


@transaction.atomic
def selfchat_create(*, owner: Any, title: str, system_a: str, system_b: str, openers: Sequence[str],
                    conversations: int, turns: int, bot_settings: Mapping[str, Any] | None = None,
                    personas: Mapping[str, Sequence[str]] | None = None, seed: int | None = None,
                    corpus: Corpus | None = None, queue: bool = True) -> SelfChatRun:
    """Create a self-chat run and queue it. ``system_b`` may be ``system_a`` (a bot with itself). The
    conversations go to a new corpus, or to ``corpus``, a self-chat corpus of the same researcher (so
    that one ACUTE-Eval study compares the self-chats of several runs). ``personas``: each bot's list,
    one drawn per conversation; ``seed`` (default: the seed of the corpus's first run, else 0, so runs
    into one corpus draw the same contexts). Every bad field is named; nothing is written then.
    ``queue=False``: the caller runs it (the demo's load)."""
    errors: dict[str, str] = {}
    if corpus is not None and (corpus.owner_id != getattr(owner, "pk", None) or corpus.source_format != "selfchat"):
        errors["corpus"] = "add self-chats only to a self-chat corpus of your own"
    title = (title or "").strip()
    if not title or len(title) > 200:
        errors["title"] = "give a title of at most 200 characters"
    endpoints = {}
    for field, name in (("system_a", system_a), ("system_b", system_b)):
        endpoints[field] = _visible_endpoint(owner, name or "")
        if endpoints[field] is None:
            errors[field] = f"you have no endpoint for a system named {str(name)[:80]!r}"
    cleaned_openers = _lines_clean(openers, "openers", errors, low=1, high=MAX_OPENERS, longest=MAX_OPENER_CHARS,
                                   noun="opener")
    raw_personas = personas or {}
    if not isinstance(raw_personas, Mapping) or set(raw_personas) - {"a", "b"}:
        errors["personas"] = 'give each bot\'s list of personas: {"a": [...], "b": [...]}'
        raw_personas = {}
    cleaned_personas = {side: found for side in ("a", "b") if (found := _lines_clean(
        raw_personas.get(side), f"personas.{side}", errors, low=0, high=MAX_PERSONAS, longest=MAX_PERSONA_CHARS,
        noun="persona"))}
    for field, value, high in (("conversations", conversations, 10000), ("turns", turns, 100)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
            errors[field] = f"must be a whole number from 1 to {high}, got {value!r}"
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= 2**31 - 1):
        errors["seed"] = f"must be a whole number from 0 to {2**31 - 1}, got {seed!r}"
    raw = bot_settings or {}
    if not isinstance(raw, Mapping):
        errors["bot_settings"] = 'must be {"a": {...}, "b": {...}}'
        raw = {}
    unknown = [k for k in raw if k not in ("a", "b")]
    if unknown:
        errors["bot_settings"] = f"unknown bot {unknown[0]!r}; the bots are a and b"
    cleaned = {side: bot_settings_clean(raw.get(side), f"bot_settings.{side}", errors) for side in ("a", "b")}
    if errors:
        raise ValidationError(errors)
    if seed is None:
        first = corpus.selfchat_runs.order_by("created_at", "pk").first() if corpus is not None else None
        seed = first.seed if first is not None else 0
    corpus = corpus or Corpus.objects.create(slug=_corpus_slug(title), title=title, source_format="selfchat",
                                             source_name=f"self-chat of {system_a} and {system_b}", owner=owner)
    run = SelfChatRun.objects.create(owner=owner, title=title, corpus=corpus, system_a=endpoints["system_a"].system,
                                     system_b=endpoints["system_b"].system, openers=cleaned_openers,
                                     personas=cleaned_personas, seed=seed, conversations=conversations, turns=turns,
                                     bot_settings=cleaned)
    SelfChatDialogue.objects.bulk_create(
        [SelfChatDialogue(run=run, index=i, opener=drawn["opener"], personas=drawn["personas"])
         for i, drawn in enumerate(selfchat_draws(run))], batch_size=2000)
    if queue:
        jobs.queue_after_commit("studies.tasks.selfchat_run", run.pk, robust=True)
    return run


def speakers(run: SelfChatRun) -> dict[str, str]:
    """Each bot's speaker name in the transcripts: its system's, numbered when a bot talks to itself."""
    a, b = run.system_a.name, run.system_b.name
    return {"a": f"{a}-1", "b": f"{b}-2"} if a == b else {"a": a, "b": b}


def _history(opener: str, turns: Sequence[Mapping[str, Any]], side: str) -> list[dict[str, str]]:
    """The dialogue as the bot on ``side`` sees it, the transcript's: its own turns the system's, the rest
    the user's; the opener is bot b's turn (the transcript's first speaker), so bot b never sees two user
    turns in a row."""
    shown = [{"speaker": "system" if side == "b" else "user", "text": opener}]
    shown += [{"speaker": "system" if t["side"] == side else "user", "text": t["text"]} for t in turns]
    return shown


class Pacer:
    """Spaces the calls to one endpoint ``60 / requests_per_minute`` seconds apart (0: no limit)."""

    def __init__(self, per_minute: int, clock: Callable[[], float], pause: Callable[[float], None]):
        self.gap = 60.0 / per_minute if per_minute else 0.0
        self.clock, self.pause, self.last = clock, pause, None

    def wait(self) -> None:
        if self.gap and self.last is not None:
            left = self.last + self.gap - self.clock()
            if left > 0:
                self.pause(left)
        self.last = self.clock()


def _call_settings(settings: Mapping[str, Any] | None, persona: str) -> dict[str, Any]:
    """A bot's settings for one conversation: its persona after its system prompt (as a chat study sends
    its persona)."""
    settings = dict(settings or {})
    prompt = "\n\n".join(p for p in (settings.get("system_prompt") or "", persona or "") if p)
    if prompt:
        settings["system_prompt"] = prompt
    return settings


def _bot_record(run: SelfChatRun, endpoint: SystemEndpoint | None, side: str) -> dict[str, Any]:
    return {"system": (run.system_a if side == "a" else run.system_b).name,
            "protocol": endpoint.protocol if endpoint else "", "model": endpoint.model_name if endpoint else "",
            "speaker": speakers(run)[side], "settings": run.bot_settings.get(side, {})}


@transaction.atomic
def _dialogue_finish(run: SelfChatRun, dialogue: SelfChatDialogue, bots: Mapping[str, dict[str, Any]]) -> None:
    """The finished dialogue as a Conversation of the run's corpus, in one transaction with its status."""
    names = speakers(run)
    turns = [{"speaker": names["b"], "text": dialogue.opener, "opener": True}]
    turns += [{"speaker": t["speaker"], "text": t["text"], "seconds": t.get("seconds")} for t in dialogue.turns]
    conversation, _ = Conversation.objects.get_or_create(
        corpus=run.corpus, external_id=f"selfchat-{run.pk}-{dialogue.index}",
        defaults={"turns": turns, "metadata": {
            "system": run.system_a.name, "partner": run.system_b.name, "judged_speaker": names["a"],
            "selfchat_run": run.pk, "opener": dialogue.opener, "seed": run.seed,
            "personas": {side: dialogue.personas.get(side, "") for side in ("a", "b")},
            "bots": {side: {**bot, "persona": dialogue.personas.get(side, "")} for side, bot in bots.items()}}})
    dialogue.conversation, dialogue.status = conversation, SelfChatDialogue.Status.DONE
    dialogue.error_side = dialogue.error_kind = dialogue.error = ""
    dialogue.save(update_fields=["conversation", "status", "error_side", "error_kind", "error"])


def selfchat_run(*, run: SelfChatRun, clock: Callable[[], float] = time.monotonic,
                 pause: Callable[[float], None] = time.sleep,
                 on_turn: Callable[[SelfChatDialogue], None] | None = None) -> SelfChatRun:
    """Make every dialogue of the run that is not done (rules in the module docstring); failed ones are
    tried again from their stored turns. ``on_turn`` is called after each stored turn (progress)."""
    with transaction.atomic():
        run = (SelfChatRun.objects.select_for_update(of=("self",))  # not the systems and corpus it joins
               .select_related("system_a", "system_b", "corpus").get(pk=run.pk))
        if run.status == SelfChatRun.Status.CANCELLED:
            return run
        run.status, run.error = SelfChatRun.Status.RUNNING, ""
        run.save(update_fields=["status", "error", "updated_at"])
    found = {"a": _visible_endpoint(run.owner, run.system_a.name), "b": _visible_endpoint(run.owner, run.system_b.name)}
    bots = {side: _bot_record(run, found[side], side) for side in ("a", "b")}
    pacers = {side: Pacer(run.bot_settings.get(side, {}).get("requests_per_minute", 0), clock, pause)
              for side in ("a", "b")}
    if found["a"] is not None and found["b"] is not None and found["a"].pk == found["b"].pk:
        pacers["b"] = pacers["a"]  # one endpoint talking to itself: one rate limit
    names = speakers(run)
    failures_in_a_row = 0
    for dialogue in run.dialogues.exclude(status=SelfChatDialogue.Status.DONE).order_by("index"):
        try:
            while len(dialogue.turns) < run.turns:
                if _cancelled(run):
                    run.refresh_from_db(fields=["status", "error", "updated_at"])
                    return run
                side = "a" if len(dialogue.turns) % 2 == 0 else "b"
                endpoint = endpoint_for_call(found[side])
                pacers[side].wait()
                reply = bot_reply(endpoint, _history(dialogue.opener, dialogue.turns, side),
                                  conversation_id=f"selfchat-{run.pk}-{dialogue.index}",
                                  deadline_seconds=django_settings.CHAT_REPLY_DEADLINE_SECONDS,
                                  allowed=allowed_networks(),
                                  settings=_call_settings(run.bot_settings.get(side), dialogue.personas.get(side, "")))
                stored = _turn_store(dialogue, {"side": side, "speaker": names[side], "text": reply.text,
                                                "seconds": round(reply.seconds, 3), "attempts": reply.attempts})
                if stored is None:  # another worker stored this turn first: go on from its turns
                    dialogue.refresh_from_db()
                    continue
                dialogue = stored
                if on_turn is not None:
                    on_turn(dialogue)
        except BotError as error:
            dialogue.status, dialogue.error_side = SelfChatDialogue.Status.FAILED, side
            dialogue.error_kind, dialogue.error = error.kind, str(error)[:2000]
            dialogue.save(update_fields=["status", "error_side", "error_kind", "error"])
            failures_in_a_row += 1
            if failures_in_a_row >= MAX_FAILURES_IN_A_ROW:
                return _run_end(run, f"{bots[side]['system']}'s endpoint failed on {failures_in_a_row} conversations "
                                     f"in a row ({error.kind}: {str(error)[:300]}); run it again to continue")
            continue
        failures_in_a_row = 0
        _dialogue_finish(run, dialogue, bots)
    failed = run.dialogues.filter(status=SelfChatDialogue.Status.FAILED).count()
    return _run_end(run, f"{failed} conversation(s) failed; run it again to retry them" if failed else "")


@transaction.atomic
def _turn_store(dialogue: SelfChatDialogue, turn: dict[str, Any]) -> SelfChatDialogue | None:
    """Append one turn (row locked), or None where the stored turns moved on meanwhile (two workers on one
    run, e.g. "Run again" while a redelivery runs): a turn is never stored twice."""
    fresh = SelfChatDialogue.objects.select_for_update().get(pk=dialogue.pk)
    if len(fresh.turns) != len(dialogue.turns) or fresh.status == SelfChatDialogue.Status.DONE:
        return None
    fresh.turns = [*fresh.turns, turn]
    fresh.status = SelfChatDialogue.Status.RUNNING
    fresh.save(update_fields=["turns", "status"])
    return fresh


def _cancelled(run: SelfChatRun) -> bool:
    return SelfChatRun.objects.filter(pk=run.pk, status=SelfChatRun.Status.CANCELLED).exists()


def _run_end(run: SelfChatRun, error: str) -> SelfChatRun:
    status = SelfChatRun.Status.FAILED if error else SelfChatRun.Status.DONE
    # a cancel that came after the last call stays: the researcher's word is the last
    SelfChatRun.objects.filter(pk=run.pk).exclude(status=SelfChatRun.Status.CANCELLED).update(
        status=status, error=error, updated_at=timezone.now())
    run.refresh_from_db(fields=["status", "error", "updated_at"])
    return run


@transaction.atomic
def selfchat_rerun(*, run: SelfChatRun) -> SelfChatRun:
    """Queue a stopped or failed run again (it continues from the stored turns)."""
    run = SelfChatRun.objects.select_for_update().get(pk=run.pk)
    if run.status == SelfChatRun.Status.DONE:
        raise ValidationError({"run": "this self-chat is done; nothing is left to make"})
    run.status = SelfChatRun.Status.QUEUED
    run.save(update_fields=["status", "updated_at"])
    jobs.queue_after_commit("studies.tasks.selfchat_run", run.pk, robust=True)
    return run


@transaction.atomic
def selfchat_cancel(*, run: SelfChatRun) -> SelfChatRun:
    """Stop a queued or running run: its worker stops before its next call (the turn it waits for is kept);
    the finished conversations stay in the corpus. "Run again" continues it."""
    run = SelfChatRun.objects.select_for_update().get(pk=run.pk)
    if run.status in (SelfChatRun.Status.DONE, SelfChatRun.Status.CANCELLED):
        raise ValidationError({"run": f"this self-chat is {run.get_status_display().lower()}; nothing is left to "
                                      "stop"})
    run.status = SelfChatRun.Status.CANCELLED
    run.save(update_fields=["status", "updated_at"])
    return run


def selfchat_progress(run: SelfChatRun) -> dict[str, Any]:
    """Conversations done, failed, in progress and not started, and the bot turns stored of all."""
    counts = dict.fromkeys(SelfChatDialogue.Status.values, 0)
    stored = 0
    for status, turns in run.dialogues.values_list("status", "turns"):
        counts[status] += 1
        stored += len(turns or [])
    return {"status": run.status, "error": run.error, "conversations": run.conversations, **counts,
            "turns_stored": stored, "turns_total": run.conversations * run.turns}
