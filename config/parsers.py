"""The API's JSON parser: DRF's, with a body nested too deeply for the decoder (``[[[[...`` a
hundred thousand levels: ``RecursionError``) answered as a 400 like any other malformed JSON."""
from __future__ import annotations

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class JSONParser(JSONParser):  # noqa: F811 - the same name, so DRF's error messages and media type stay
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - the body is nested too deeply") from None
