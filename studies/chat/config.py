"""A chat study's settings live with the chat unit (``studies.designs.units.chat_config``), which cleans
them when a study is created; the chat's services, selectors and views read them from here."""
from studies.designs.units.chat_config import (
    BOT_DEFAULTS,
    DEFAULT_UNIT_CONFIG,
    LIMITS,
    SAMPLING_SETTINGS,
    TEXT_SETTINGS,
    bot_settings,
    chat_config,
    chat_config_clean,
    recorded_settings,
)

__all__ = ["BOT_DEFAULTS", "DEFAULT_UNIT_CONFIG", "LIMITS", "SAMPLING_SETTINGS", "TEXT_SETTINGS", "bot_settings",
           "chat_config", "chat_config_clean", "recorded_settings"]
