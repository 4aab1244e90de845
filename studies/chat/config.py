"""A chat study's settings live with the chat unit (``studies.designs.units.chat_config``), which cleans
them when a study is created; the chat's services, selectors and views read them from here."""
from studies.designs.units.chat_config import DEFAULT_UNIT_CONFIG, LIMITS, chat_config, chat_config_clean

__all__ = ["DEFAULT_UNIT_CONFIG", "LIMITS", "chat_config", "chat_config_clean"]
