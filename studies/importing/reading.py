"""Streaming readers: the input is never read whole into memory, and every problem names its line.

``decoded_lines`` yields (line number, text) from a binary file, refusing non-UTF-8 with the line.
``json_array_records`` yields (line number, object) from a top-level JSON array (GRADE, FED files)
by decoding one element at a time from a growing buffer (``json.JSONDecoder.raw_decode``).
"""
from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from typing import BinaryIO

from studies.importing.records import ImportFailed, ImportProblem

CHUNK = 1 << 16
MAX_RECORD_CHARS = 16 * 1024 * 1024


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
    decoder = json.JSONDecoder()
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
            except json.JSONDecodeError as error:
                # An element cut by the buffer's end: read more (doubling) and decode again.
                if len(buf) - pos < MAX_RECORD_CHARS and fill(2 * (len(buf) - pos) + CHUNK):
                    continue
                raise ImportFailed([ImportProblem(line_of(error.pos), "", f"malformed JSON: {error.msg}")]) from None
        yield line_of(pos), value
        pos, expecting_value, empty = end, False, False
