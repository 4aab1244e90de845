"""Potato's data files (``potato``; https://github.com/davidjurgens/potato): JSON lines, one instance
per line, ``{"id": ..., "conversation": [...]}`` or ``{"id": ..., "text": [...]}``.

- A dialogue: ``conversation`` (or a ``text`` list whose every entry starts with a speaker) as strings
  "Speaker: text" or objects ``{"speaker", "text"}``; the speaker is taken from the prefix and the prefix
  taken out of the text. The whole dialogue is what is judged.
- A pairwise instance: a ``text`` list of texts without speakers, shown as A, B, ... (Potato's
  ``list_as_text`` with the alphabet prefix): each becomes a response of the systems ``potato-a``,
  ``potato-b``, ...; ``context`` (text, one turn per line) is the conversation they answer, if given.

Other fields of an instance (Potato's own ``context`` description of a dialogue, ``label``...) are kept
in the conversation's metadata.
"""
from __future__ import annotations

import string
from collections.abc import Iterator
from typing import Any, BinaryIO

from studies.corpora.importing.formats import Record, _id, _json_object_lines
from studies.corpora.importing.label_studio_format import PREFIX, split_prefix
from studies.corpora.importing.records import ImportProblem, ParsedConversation, ParsedHeader, ParsedResponse

MAX_PAIRWISE = 26


def _prefixed(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(
        isinstance(v, dict) or (isinstance(v, str) and PREFIX.match(v) is not None) for v in value)


def _dialogue(value: list, line: int, field: str) -> list[dict[str, str]] | ImportProblem:
    turns = []
    for i, turn in enumerate(value):
        if isinstance(turn, str) and turn.strip():
            turns.append(split_prefix(turn, i))
        elif isinstance(turn, dict) and isinstance(turn.get("text"), str) and turn["text"].strip():
            speaker = turn.get("speaker", turn.get("author", "AB"[i % 2]))
            if isinstance(speaker, bool) or not isinstance(speaker, (str, int)) or not str(speaker).strip():
                return ImportProblem(line, f"{field}[{i}].speaker", "must be text")
            turns.append({"speaker": str(speaker).strip(), "text": turn["text"].strip()})
        else:
            return ImportProblem(line, f"{field}[{i}]", 'must be "Speaker: text" or {"speaker": ..., "text": ...}')
    return turns


def parse_potato(stream: BinaryIO, header: ParsedHeader) -> Iterator[Record]:
    units: set[str] = set()
    for entry in _json_object_lines(stream, "each line must be a JSON object (a Potato instance)"):
        if isinstance(entry, ImportProblem):
            yield entry
            continue
        line, record = entry
        external_id = _id(record, ("id", "instance_id"), line)
        if isinstance(external_id, ImportProblem):
            yield external_id
            continue
        field = "conversation" if "conversation" in record else "text"
        value = record.get(field)
        if not isinstance(value, list) or not value:
            yield ImportProblem(line, field, "must be a non-empty list (the dialogue's turns, or the texts to compare)")
            continue
        metadata = {k: v for k, v in record.items() if k not in ("id", "instance_id", field)}
        metadata["source"] = "potato"
        if field == "conversation" or _prefixed(value):
            turns = _dialogue(value, line, field)
            if isinstance(turns, ImportProblem):
                yield turns
                continue
            unit, responses = "dialogue", []
        else:
            if len(value) > MAX_PAIRWISE or not all(isinstance(v, str) and v.strip() for v in value):
                yield ImportProblem(line, "text", f"a pairwise instance lists 2 to {MAX_PAIRWISE} non-empty texts")
                continue
            context = metadata.pop("context", "")
            lines = context.splitlines() if isinstance(context, str) else []
            turns = [split_prefix(t, i) for i, t in enumerate(x for x in lines if x.strip())]
            responses = []
            for i, text in enumerate(value):
                name = f"potato-{string.ascii_lowercase[i]}"
                header.systems.setdefault(name, f"Potato pairwise text {string.ascii_uppercase[i]}")
                responses.append(ParsedResponse(name, text.strip()))
            unit = "response"
        units.add(unit)
        if len(units) > 1:
            yield ImportProblem(line, field, "a file holds dialogues or pairwise texts, not both")
            continue
        yield ParsedConversation(external_id, turns, responses, line, metadata)
    if units == {"dialogue"}:
        header.unit = "dialogue"
