"""A chat study's settings (``Study.unit_config``): how long the chat is, how long a message may be, how
fast a rater may send, and whether the rater talks to one system or to two side by side.

- ``systems_per_chat``: 1, or 2 for a side-by-side chat comparison (each message goes to both systems,
  each continuing its own conversation, as in Chatbot Arena; the rater then rates or ranks both);
- ``min_turns``..``max_turns``: exchanges (a rater message and the system's reply) before the rater may
  end the chat, and after which it ends by itself (defaults 3..10);
- ``message_max_chars``: the longest rater message (default 500 characters);
- ``messages_per_minute``: per assignment, over the last 60 seconds (default 12);
- ``persona``: a persona or task context in the rater's words (e.g. "You are planning a trip to Rome
  together with the bot, who is a chef"), shown to the rater above the chat;
- ``bot_persona``: the same setting phrased for the bot ("You are a chef planning a trip to Rome with the
  user"), sent to it (Concord's ``context``; within an OpenAI endpoint's system message). Where it is
  blank the bot gets the rater's persona introduced as what the user was told (``persona_for_bot``),
  never the rater's wording as if addressed to the bot;
- for OpenAI-compatible endpoints: ``system_prompt``, ``temperature``, ``top_p``, ``max_tokens`` (None:
  the endpoint's own default). All are recorded with each transcript (``metadata.settings``) and exported.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError

DEFAULT_UNIT_CONFIG: dict[str, int] = {
    "systems_per_chat": 1, "min_turns": 3, "max_turns": 10, "message_max_chars": 500, "messages_per_minute": 12,
}
LIMITS = {"systems_per_chat": (1, 2), "min_turns": (1, 50), "max_turns": (1, 50), "message_max_chars": (20, 4000),
          "messages_per_minute": (1, 120)}


# The chat's setting for the bot: text (longest) and sampling (low, high, kind); blank / None: not sent.
TEXT_SETTINGS = {"persona": 2000, "bot_persona": 2000, "system_prompt": 4000}
SAMPLING_SETTINGS: dict[str, tuple[float, float, type]] = {
    "temperature": (0.0, 2.0, float), "top_p": (0.0, 1.0, float), "max_tokens": (1, 32000, int)}
BOT_DEFAULTS: dict[str, Any] = {**dict.fromkeys(TEXT_SETTINGS, ""), **dict.fromkeys(SAMPLING_SETTINGS)}


def _bot_settings_problems(merged: dict[str, Any], errors: dict[str, str]) -> None:
    for key, longest in TEXT_SETTINGS.items():
        value = merged.get(key)
        if not isinstance(value, str) or len(value) > longest:
            errors[f"unit_config.{key}"] = f"must be text of at most {longest} characters"
        else:
            merged[key] = value.strip()
    for key, (low, high, kind) in SAMPLING_SETTINGS.items():
        value = merged.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and value != int(value)):
            errors[f"unit_config.{key}"] = f"must be a {'whole ' if kind is int else ''}number from {low:g} to {high:g}"
        elif not low <= value <= high:
            errors[f"unit_config.{key}"] = f"must be from {low:g} to {high:g}, got {value!r}"
        else:
            merged[key] = kind(value)


def bot_settings(recorded: Mapping[str, Any] | None, protocol: str) -> dict[str, Any]:
    """What a call sends (``client.request_body``'s ``settings``) from a transcript's recorded settings:
    to an OpenAI-compatible endpoint the system prompt and the persona as its system message and the
    sampling settings; to a Concord endpoint the persona as its context."""
    recorded = recorded or {}
    persona = persona_for_bot(recorded)
    if protocol != "openai":
        return {"system_prompt": persona} if persona else {}
    prompt = "\n\n".join(p for p in (recorded.get("system_prompt") or "", persona) if p)
    sampling = {k: recorded[k] for k in SAMPLING_SETTINGS if recorded.get(k) is not None}
    return {**({"system_prompt": prompt} if prompt else {}), **sampling}


# How a persona written for the rater reaches the bot when the researcher wrote none for it: "you" in
# the rater's text is the user, so the bot reads it as what the user was told, not as its own role.
USER_PERSONA_FRAME = "The user you are chatting with was given this setting: {persona}"


def persona_for_bot(recorded: Mapping[str, Any]) -> str:
    """The persona the bot gets: the researcher's ``bot_persona``, else the rater's ``persona`` framed as
    the user's setting (``USER_PERSONA_FRAME``), else nothing."""
    if own := (recorded.get("bot_persona") or "").strip():
        return own
    persona = (recorded.get("persona") or "").strip()
    return USER_PERSONA_FRAME.format(persona=persona) if persona else ""


def recorded_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """The study's settings for the bot, as each transcript records them: every one where any is set,
    else none (a transcript without ``settings`` was made with none)."""
    given = {key: config.get(key, default) for key, default in BOT_DEFAULTS.items()}
    return given if any(v not in ("", None) for v in given.values()) else {}


def chat_config_clean(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The settings with defaults filled in, or ValidationError naming each bad field (``unit_config.<key>``)."""
    if config is not None and not isinstance(config, Mapping):
        raise ValidationError({"unit_config": "must be an object"})
    merged = {**DEFAULT_UNIT_CONFIG, **BOT_DEFAULTS, **(config or {})}
    errors: dict[str, str] = {}
    _bot_settings_problems(merged, errors)
    unknown = sorted(set(merged) - set(DEFAULT_UNIT_CONFIG) - set(BOT_DEFAULTS))
    if unknown:
        errors["unit_config"] = f"unknown setting(s) for chats: {', '.join(unknown)}"
    for key, (low, high) in LIMITS.items():
        value = merged.get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            errors[f"unit_config.{key}"] = f"must be a whole number from {low} to {high}, got {value!r}"
        elif not low <= value <= high:
            errors[f"unit_config.{key}"] = f"must be from {low} to {high}, got {value}"
    if not errors and merged["max_turns"] < merged["min_turns"]:
        errors["unit_config.max_turns"] = f"must be at least min_turns ({merged['min_turns']})"
    if errors:
        raise ValidationError(errors)
    # The bot settings are stored only when set (a study without them keeps the settings it always had).
    return {**{key: merged[key] for key in DEFAULT_UNIT_CONFIG},
            **{key: merged[key] for key in BOT_DEFAULTS if merged[key] not in ("", None)}}


def chat_config(study) -> dict[str, Any]:
    """A stored study's chat settings (cleaned when the study was created), defaults filled in."""
    return {**DEFAULT_UNIT_CONFIG, **BOT_DEFAULTS, **(study.unit_config or {})}
