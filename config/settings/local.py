"""Developer and demo settings: embedded defaults, debug pages."""
from config.settings.base import *  # noqa: F403
from config.settings.base import env

DEBUG = env.bool("DEBUG", default=True)

# The demo's rule-based bot answers on loopback (studies.chat.local_bot, started by demo_serve).
CHAT_ALLOWED_NETWORKS = env.list("CONCORD_CHAT_ALLOWED_NETWORKS", default=["127.0.0.1/32"])
