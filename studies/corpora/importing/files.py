"""Reading one import from several files of one format (e.g. the DSTC9 interactive evaluation comes as
several JSON files of one evaluation): the records of each in turn, problems named by file, line and field."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import BinaryIO

from studies.corpora.importing.parsers import PARSERS, detect_format
from studies.corpora.importing.records import ImportFailed, ImportProblem, ParsedConversation, ParsedHeader

DETECT_BYTES = 1 << 16  # a DSTC9 dialogue can be longer than 4 KiB before its first quality key


def file_format(name: str, stream: BinaryIO, wanted: str) -> str | None:
    """``wanted`` unless it is ``auto``: then the format detected from the file's name and first bytes."""
    if wanted != "auto":
        return wanted
    head = stream.read(DETECT_BYTES)
    stream.seek(0)
    return detect_format(name, head)


def formats_problems(
    files: Sequence[tuple[str, BinaryIO]], source_format: str
) -> tuple[str | None, list[ImportProblem]]:
    """The one format of all the files, or the problems: unknown, undetectable, or files of different formats."""
    found: list[tuple[str, str | None]] = [(name, file_format(name, stream, source_format)) for name, stream in files]
    named = {f for _, f in found}
    several = len(files) > 1
    problems = [
        ImportProblem(
            None,
            "format",
            f"cannot tell the file's format; name it explicitly ({', '.join(PARSERS)})",
            source=name if several else "",
        )
        for name, f in found
        if f is None
    ]
    problems += [
        ImportProblem(None, "format", f"unknown format {f!r}; use one of {', '.join(PARSERS)}")
        for f in sorted(x for x in named if x is not None and x not in PARSERS)
    ]
    if problems:
        return None, problems
    if len(named) > 1:
        listed = ", ".join(f"{name}: {f}" for name, f in found)
        return None, [ImportProblem(None, "format", f"the files of one import must have one format; got {listed}")]
    return found[0][1], []


def parsed_records(
    files: Sequence[tuple[str, BinaryIO]], source_format: str, header: ParsedHeader
) -> Iterator[ParsedConversation | ImportProblem]:
    """Every file's records in turn into one ``header``; with several files each problem names its file."""
    several = len(files) > 1
    for name, stream in files:
        header.source = name
        try:
            for record in PARSERS[source_format](stream, header):
                if several and isinstance(record, ImportProblem):
                    record = dataclasses.replace(record, source=name)
                yield record
        except ImportFailed as failure:
            if not several:
                raise
            raise ImportFailed([dataclasses.replace(p, source=name) for p in failure.problems]) from None
