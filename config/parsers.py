"""The API's JSON parser: DRF's, answering with 400 (never 500) what the decoder or the database
cannot take: a body nested too deeply for the decoder (``[[[[...`` a hundred thousand levels:
``RecursionError``), and strings holding a NUL (PostgreSQL refuses it in text and jsonb) or a lone
UTF-16 surrogate (``"\\ud800"`` decodes to a str that cannot be encoded back, so even the error
message naming it could not be rendered)."""
from __future__ import annotations

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser as DRFJSONParser


def _string_problem(value: str) -> str | None:
    if "\x00" in value:
        return "a string holds a NUL character (\\u0000), which cannot be stored"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "a string holds a lone UTF-16 surrogate (\\ud800-\\udfff), which is not valid Unicode"
    return None


def data_problem(data: object) -> str | None:
    """The first reason a decoded JSON value cannot be taken, or None (walks without recursion)."""
    stack = [data]
    while stack:
        current = stack.pop()
        if isinstance(current, str):
            problem = _string_problem(current)
        elif isinstance(current, dict):
            problem = next((p for p in map(_string_problem, current) if p), None)
            stack.extend(current.values())
        elif isinstance(current, list):
            problem = None
            stack.extend(current)
        else:
            problem = None
        if problem:
            return problem
    return None


class JSONParser(DRFJSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - the body is nested too deeply") from None
        if problem := data_problem(data):
            raise ParseError(f"JSON parse error - {problem}")
        return data
