"""URL converters (``<int:...>`` takes any number of digits, and one beyond a 64-bit integer made the
database fail: a 500). ``id``: a row id; ``position``: an item's position. ``token``: an assignment's token (``secrets.token_urlsafe``: letters, digits, ``-``
and ``_``). Anything else (a NUL, a slash-free oddity) is a 404 from the resolver and never reaches a
query: PostgreSQL refuses NUL in text, which made ``GET /r/a/%00/`` a 500."""
from django.urls import register_converter


class TokenConverter:
    regex = "[-A-Za-z0-9_]{1,64}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


class PositionConverter:
    """An item's position in an assignment: at most six digits (``<int:...>`` let 99999999999999999999
    reach the database, beyond a 64-bit integer: a 500)."""

    regex = "[0-9]{1,6}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


class IdConverter(PositionConverter):
    """A row id: at most 18 digits, so it always fits a 64-bit integer column."""

    regex = "[0-9]{1,18}"


register_converter(TokenConverter, "token")
register_converter(IdConverter, "id")
register_converter(PositionConverter, "position")
