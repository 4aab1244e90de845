"""The one exception every platform call raises, naming the call that failed."""
from __future__ import annotations


class PlatformError(Exception):
    """A platform call failed. ``call`` names it (``CreateHITWithHITType``, ``POST /studies/``),
    ``code`` is the platform's error code or HTTP status, ``message`` its explanation."""

    def __init__(self, call: str, message: str, *, code: str = "", hint: str = ""):
        self.call, self.message, self.code, self.hint = call, message, code, hint
        text = f"{call} failed" + (f" ({code})" if code else "") + f": {message}"
        super().__init__(text + (f" — {hint}" if hint else ""))


class PublishRefused(Exception):
    """A study that cannot be published as asked; the message says why. Nothing was sent."""
