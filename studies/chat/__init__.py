"""Chat-then-rate studies: a rater chats with a dialogue system over its endpoint, then rates
the whole conversation with a dialogue-level design.

- ``addresses``: which URLs and addresses a researcher-entered endpoint may reach (SSRF guard).
- ``client``: one bot reply over Concord's JSON protocol or OpenAI's chat completions, with a deadline,
  retries, redirects checked hop by hop, and a connection to the very address that was checked.
- ``keys``: endpoint keys from the environment or stored encrypted (Fernet), never shown again.
- ``local_bot``: a small rule-based bot server (and slow, erroring and garbage ones) on loopback, for the
  tests and the demo.
- ``models``, ``services`` (writes), ``selectors`` (reads), ``views``: endpoints, chats and their turns.
"""
