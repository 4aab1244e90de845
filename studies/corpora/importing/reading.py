"""Streaming readers: the input is never read whole into memory, and every problem names its line.

``decoded_lines`` yields (line number, text) from a binary file, refusing non-UTF-8 with the line.
``json_array_records`` yields (line number, object) from a top-level JSON array (GRADE, FED files)
by decoding one element at a time from a growing buffer (``json.JSONDecoder.raw_decode``).

What JSON lets through but the database cannot hold is refused here, by line and field path
(``value_problem``): ``NaN``/``Infinity`` literals (Python's json accepts them; ``parse_constant``
marks them) and numbers too large for a float, NUL characters (PostgreSQL refuses them in text and
jsonb), lone UTF-16 surrogates (``"\ud800"`` decodes to a str that is not encodable Unicode), and
nesting deeper than ``MAX_NESTING`` (deeper input makes the decoder raise RecursionError).
"""
from __future__ import annotations

import codecs
import json
import math
from collections.abc import Iterator
from typing import Any, BinaryIO

from studies.corpora.importing.records import ImportFailed, ImportProblem

CHUNK = 1 << 16
MAX_RECORD_CHARS = 16 * 1024 * 1024
MAX_NESTING = 64  # levels of [ and { in one record; real dialogue files use fewer than 6


class NonFinite(float):
    """A ``NaN``/``Infinity``/``-Infinity`` literal, kept as the float it would be but marked so that
    the checks below can say which literal was found."""

    literal = "NaN"


def _constant(name: str) -> NonFinite:
    value = NonFinite(name)
    value.literal = name
    return value


def _integer(text: str) -> int | float:
    """A JSON integer; one with more digits than any float holds (beyond 1e308) is infinity, which
    ``number_problem`` refuses as "too large". Python refuses to convert more than 4,300 digits at all
    (``ValueError``, CVE-2020-10735), which escaped the readers as a 500."""
    if len(text.lstrip("-")) > 308:
        return -math.inf if text.startswith("-") else math.inf
    return int(text)


def json_loads(text: str) -> Any:
    """``json.loads`` that marks non-finite literals (see ``value_problem``) and reads over-long
    integers as infinity (``_integer``)."""
    return json.loads(text, parse_constant=_constant, parse_int=_integer)


def text_problem(value: str) -> str | None:
    """Why a string cannot be stored as text, or None."""
    if "\x00" in value:
        return "contains a NUL character (\\u0000), which cannot be stored"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "contains a lone UTF-16 surrogate (\\ud800-\\udfff), which is not valid Unicode text"
    return None


def number_problem(value: float) -> str | None:
    if isinstance(value, float) and not math.isfinite(value):
        literal = getattr(value, "literal", None)
        if literal is None:
            return "is a number too large for a float (not finite)" if value == value else "is NaN (not a number)"
        return f"is {literal}, not a finite number"
    return None


def value_problem(value: Any, path: str = "") -> tuple[str, str] | None:
    """The first (field path, message) in a decoded JSON value that cannot be stored, or None.

    Walks iteratively (no recursion), so it is safe on any depth the decoder produced."""
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack:
        current, where, depth = stack.pop()
        if isinstance(current, str):
            message = text_problem(current)
        elif isinstance(current, float):
            message = number_problem(current)
        elif isinstance(current, (dict, list)):
            if depth >= MAX_NESTING:
                return where, f"is nested more than {MAX_NESTING} levels deep"
            if isinstance(current, dict):
                for key in current:
                    if (message := text_problem(key)) is not None:
                        return where or "(key)", f"a key {message}"
                stack.extend((item, f"{where}.{key}" if where else str(key), depth + 1)
                             for key, item in reversed(current.items()))  # reversed: report in file order
            else:
                stack.extend((item, f"{where}[{i}]", depth + 1) for i, item in reversed(list(enumerate(current))))
            continue
        else:
            message = None
        if message is not None:
            return where, message
    return None


def deep_field(text: str, start: int = 0) -> str:
    """The top-level key of the object at ``text[start]`` under which nesting passes ``MAX_NESTING``
    (only called after the decoder gave up with RecursionError, so the scan stops early)."""
    depth, key, in_string, escaped, token = 0, "", False, False, []
    for char in text[start:start + 4 * MAX_RECORD_CHARS]:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
                if depth == 1:
                    key = "".join(token)
            elif depth == 1 and len(token) < 200:
                token.append(char)
            continue
        if char == '"':
            in_string, token = True, []
        elif char in "[{":
            depth += 1
            if depth > MAX_NESTING:
                return key
        elif char in "]}":
            depth -= 1
    return key


def too_deep(line: int, text: str, start: int = 0) -> ImportProblem:
    return ImportProblem(line, deep_field(text, start), f"is nested more than {MAX_NESTING} levels deep")


def _not_utf8(line: int) -> ImportFailed:
    return ImportFailed([ImportProblem(line, "", "the file is not UTF-8 text (save it as UTF-8 and retry)")])


def decoded_lines(stream: BinaryIO) -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, line without its newline), decoding UTF-8 strictly."""
    for number, raw in enumerate(stream, start=1):
        try:
            text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError:
            raise _not_utf8(number) from None
        yield number, text.rstrip("\r\n")


def _decoded_chunks(stream: BinaryIO) -> Iterator[str]:
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    lines_seen = 0
    while True:
        raw = stream.read(CHUNK)
        try:
            text = decoder.decode(raw, final=not raw)
        except UnicodeDecodeError as error:
            raise _not_utf8(lines_seen + raw.count(b"\n", 0, max(error.start, 0)) + 1) from None
        lines_seen += raw.count(b"\n")
        if text:
            yield text
        if not raw:
            return


def json_array_records(stream: BinaryIO) -> Iterator[tuple[int, object]]:
    """Yield (line where the element starts, element) for each element of a top-level JSON array."""
    decoder = json.JSONDecoder(parse_constant=_constant, parse_int=_integer)
    chunks = _decoded_chunks(stream)
    buf, pos, line_offset, at_eof = "", 0, 0, False

    def line_of(index: int) -> int:
        return line_offset + buf.count("\n", 0, index) + 1

    def fill(wanted: int) -> bool:
        nonlocal buf, pos, line_offset, at_eof
        if at_eof:
            return False
        line_offset += buf.count("\n", 0, pos)
        buf, pos = buf[pos:], 0
        while len(buf) < wanted:
            chunk = next(chunks, None)
            if chunk is None:
                at_eof = True
                break
            buf += chunk
        return True

    def skip_space() -> bool:
        nonlocal pos
        while True:
            while pos < len(buf) and buf[pos].isspace():
                pos += 1
            if pos < len(buf) or not fill(CHUNK):
                return pos < len(buf)

    if not skip_space() or buf[pos] != "[":
        raise ImportFailed([ImportProblem(line_of(pos), "", "expected a JSON array ([ ... ]) of records")])
    pos += 1
    expecting_value, empty = True, True
    while True:
        if not skip_space():
            raise ImportFailed([ImportProblem(line_of(pos), "", "the JSON array is not closed (missing ']')")])
        if buf[pos] == "]" and (not expecting_value or empty):
            return
        if not expecting_value:
            if buf[pos] != ",":
                raise ImportFailed([ImportProblem(line_of(pos), "", f"expected ',' or ']' but found {buf[pos]!r}")])
            pos += 1
            expecting_value = True
            continue
        while True:
            try:
                value, end = decoder.raw_decode(buf, pos)
                break
            except RecursionError:
                raise ImportFailed([too_deep(line_of(pos), buf, pos)]) from None
            except json.JSONDecodeError as error:
                # An element cut by the buffer's end: read more (doubling) and decode again.
                if len(buf) - pos < MAX_RECORD_CHARS and fill(2 * (len(buf) - pos) + CHUNK):
                    continue
                raise ImportFailed([ImportProblem(line_of(error.pos), "", f"malformed JSON: {error.msg}")]) from None
        yield line_of(pos), value
        pos, expecting_value, empty = end, False, False
