"""The chat tests talk to the local bot server (studies.chat.local_bot) over real HTTP: the fixtures
``local_bot`` and ``loopback_allowed`` are in tests/conftest.py (the browser, integration and design
contract tests use them too)."""
from studies.chat.addresses import networks_parse

LOOPBACK = networks_parse(["127.0.0.1/32"])
