"""A chat study's settings (``Study.unit_config``): how long the chat is, how long a message may be, how
fast a rater may send, and whether the rater talks to one system or to two side by side.

- ``systems_per_chat``: 1, or 2 for a side-by-side chat comparison (each message goes to both systems,
  each continuing its own conversation, as in Chatbot Arena; the rater then rates or ranks both);
- ``min_turns``..``max_turns``: exchanges (a rater message and the system's reply) before the rater may
  end the chat, and after which it ends by itself (defaults 3..10);
- ``message_max_chars``: the longest rater message (default 500 characters);
- ``messages_per_minute``: per assignment, over the last 60 seconds (default 12).
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


def chat_config_clean(config: Mapping[str, Any] | None) -> dict[str, int]:
    """The settings with defaults filled in, or ValidationError naming each bad field (``unit_config.<key>``)."""
    if config is not None and not isinstance(config, Mapping):
        raise ValidationError({"unit_config": "must be an object"})
    merged = {**DEFAULT_UNIT_CONFIG, **(config or {})}
    errors: dict[str, str] = {}
    unknown = sorted(set(merged) - set(DEFAULT_UNIT_CONFIG))
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
    return {key: merged[key] for key in DEFAULT_UNIT_CONFIG}


def chat_config(study) -> dict[str, int]:
    """A stored study's chat settings (cleaned when the study was created), defaults filled in."""
    return {**DEFAULT_UNIT_CONFIG, **(study.unit_config or {})}
