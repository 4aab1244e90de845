"""The local bot server (studies.chat.local_bot) that the chat tests start and talk to over real HTTP."""
import pytest

from studies.chat.addresses import networks_parse
from studies.chat.local_bot import LocalBot

LOOPBACK = networks_parse(["127.0.0.1/32"])


@pytest.fixture
def local_bot():
    """A fresh bot server on 127.0.0.1 (a free port) for one test; its slow bot takes 3 s."""
    with LocalBot(slow_seconds=3.0) as bot:
        yield bot


@pytest.fixture
def loopback_allowed(settings):
    """The deployment setting the demo and the tests turn on for their loopback bot."""
    settings.CHAT_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    return settings
