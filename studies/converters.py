"""URL converters. ``token``: an assignment's token (``secrets.token_urlsafe``: letters, digits, ``-``
and ``_``). Anything else (a NUL, a slash-free oddity) is a 404 from the resolver and never reaches a
query: PostgreSQL refuses NUL in text, which made ``GET /r/a/%00/`` a 500."""
from django.urls import register_converter


class TokenConverter:
    regex = "[-A-Za-z0-9_]{1,64}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(TokenConverter, "token")
