"""One parser per input format. Each takes a binary stream and yields ParsedConversation records
or ImportProblem values (so that one pass reports many problems); a ParsedHeader says what the
file declares (systems, and for human-judgment sets, the criteria and their scales).

Formats
-------
``jsonl`` (Concord's own): one JSON object per line. An optional first line is a header::

    {"concord": "dialogues/1", "systems": {"seq2seq": "LSTM encoder-decoder", "human": "reference"},
     "human_systems": ["human"], "reference": "human"}

then one conversation per line::

    {"id": "c1", "turns": [{"speaker": "A", "text": "Hi!"}, "plain strings alternate A/B"],
     "responses": {"seq2seq": "Hello.", "human": "Hey, how are you?"}, "reference": "human",
     "metadata": {...}}

A response value may be a list of strings (several responses of one system).

ParlAI's ACUTE-Eval pairings, self-chat and model-chat logs: ``parlai_formats``.

``csv``: one response per row; columns ``conversation_id, context, system, response`` and optionally
``is_reference`` (true/false/1/0) and ``speakers``. ``context`` holds the turns separated by ``|||``
(speakers, if given, likewise). Rows of one conversation are adjacent and repeat its context.

``ddpp``: DailyDialog++ JSON lines (``id`` or ``dialog_id``, ``context``, ``positive_responses`` and
optionally ``adversarial_negative_responses`` / ``random_negative_responses``). The three quality
levels become the systems ``ddpp-relevant``, ``ddpp-adversarial`` and ``ddpp-random``.

``grade``: a JSON array of ``{"ID", "Dataset", "DialogModel", "Context": "t1|||t2", "Response",
"HumanScores": "[3, 5, ...]"}``; the scores are coherence on 1-5, one per annotator position.

``fed``: a JSON array in the DSTC10 format, turn level ``{"context": "User: ...\\nSystem: ...",
"response": "System: ...", "model", "annotations": {quality: [scores]}}`` or dialogue level
``{"dialog": [{"speaker", "text"}], "annotations": {...}, "model", "dialogue_id"}`` (the whole dialogue
is the judged unit; an empty score list is a missing value, counted and reported).

``dstc9``: DSTC9 interactive evaluation (FlowScore/DialoFlow redistribution): a JSON array with one
record per rating, ``{"context": "User: ...\\nSystem: ...", "coherent": 3, ..., "human (overall)": 4}``.
"""
from __future__ import annotations

import csv
import json
import re
import unicodedata
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

from studies.corpora.importing.reading import (
    decoded_lines,
    json_array_records,
    json_loads,
    too_deep,
    value_problem,
)
from studies.corpora.importing.records import (
    ImportFailed,
    ImportProblem,
    ParsedConversation,
    ParsedHeader,
    ParsedResponse,
)

FORMATS = ("jsonl", "csv", "ddpp", "grade", "fed", "dstc9", "parlai-pairings", "parlai-selfchat", "parlai-modelchat",
           "label-studio", "potato")
TURN_SEPARATOR = "|||"
DDPP_LEVELS = (
    ("positive_responses", "ddpp-relevant", "DailyDialog++ relevant responses (level 3)"),
    ("adversarial_negative_responses", "ddpp-adversarial", "DailyDialog++ adversarial irrelevant responses (level 2)"),
    ("random_negative_responses", "ddpp-random", "DailyDialog++ random responses (level 1)"),
)
# Scales of the FED qualities (Mehri & Eskenazi 2020); other qualities take the observed range.
FED_SCALES = {
    "interesting": (0, 2), "engaging": (0, 2), "specific": (0, 2), "relevant": (0, 2), "correct": (0, 2),
    "semantically-appropriate": (0, 2), "understandable": (0, 1), "fluent": (0, 2), "overall": (0, 4),
    "coherent": (0, 2), "error-recovery": (0, 2), "consistent": (0, 1), "diverse": (0, 2), "depth": (0, 2),
    "likeable": (0, 2), "flexible": (0, 2), "informative": (0, 2), "inquisitive": (0, 2), "understanding": (0, 2),
}
GRADE_SCALE = (1, 5)

Record = ParsedConversation | ImportProblem


def alternate_speakers(texts: list[str]) -> list[dict[str, str]]:
    """Turns given as plain strings alternate between speakers A and B."""
    return [{"speaker": "AB"[i % 2], "text": t} for i, t in enumerate(texts)]


def system_key(name: str) -> str:
    """A system's stored name: its slug with the case it was given (``botA`` stays ``botA``: a researcher
    finds the name they wrote on every page and in every export)."""
    text = unicodedata.normalize("NFKD", str(name)).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", text)).strip("-_")
    return text or "unknown"


# --- helpers -------------------------------------------------------------------------------------

def _text(value: Any, line: int, field: str) -> str | ImportProblem:
    if not isinstance(value, str):
        return ImportProblem(line, field, f"must be text, got {type(value).__name__}")
    if not value.strip():
        return ImportProblem(line, field, "is empty")
    return value.strip()


def _turns(value: Any, line: int, field: str, *, keep_empty: bool = False) -> list[dict[str, str]] | ImportProblem:
    """A list of turns ({speaker, text} objects, or plain strings with speakers A/B alternating).
    ``keep_empty`` (a judged dialogue, e.g. FED's "human"/"model" turns): a turn with empty text is kept
    as it is, since it is part of what the annotators read, as long as one turn has text; otherwise
    every turn needs text."""
    if not isinstance(value, list) or not value:
        return ImportProblem(line, field, "must be a non-empty list of turns")
    turns = []
    for i, turn in enumerate(value):
        if isinstance(turn, str):
            text, speaker = turn, "AB"[i % 2]
        elif isinstance(turn, dict):
            # ParlAI names a turn's speaker "id": kept as the speaker rather than replaced by A/B
            text, speaker = turn.get("text"), turn.get("speaker", turn.get("id", "AB"[i % 2]))
        else:
            return ImportProblem(line, f"{field}[{i}]", "must be a string or {speaker, text}")
        where = f"{field}[{i}].text" if isinstance(turn, dict) else f"{field}[{i}]"
        if keep_empty:
            if not isinstance(text, str):
                return ImportProblem(line, where, f"must be text, got {type(text).__name__}")
            checked = text.strip()
        elif isinstance(checked := _text(text, line, where), ImportProblem):
            return checked
        if not isinstance(speaker, (str, int)) or isinstance(speaker, bool):
            return ImportProblem(line, f"{field}[{i}].speaker", f"must be text, got {type(speaker).__name__}")
        turns.append({"speaker": str(speaker), "text": checked})
    if keep_empty and not any(t["text"] for t in turns):
        return ImportProblem(line, field, "holds no turn with text")
    return turns


def _json_objects(stream: BinaryIO) -> Iterator[tuple[int, int, dict] | ImportProblem]:
    """A JSON array's elements as (index, line, object); anything that is not an object is a problem."""
    for index, entry in enumerate(_checked(json_array_records(stream))):
        if isinstance(entry, ImportProblem):
            yield entry
        elif not isinstance(entry[1], dict):
            yield ImportProblem(entry[0], "", "each array element must be an object")
        else:
            yield index, *entry


def _checked(entries: Iterable[tuple[int, Any]]) -> Iterator[tuple[int, Any] | ImportProblem]:
    """Decoded records, or the first thing in one that cannot be stored (see ``value_problem``)."""
    for line, value in entries:
        problem = value_problem(value)
        yield (line, value) if problem is None else ImportProblem(line, *problem)


def _json_lines(stream: BinaryIO) -> Iterator[tuple[int, Any] | ImportProblem]:
    for line, text in decoded_lines(stream):
        if not text.strip():
            continue
        try:
            value = json_loads(text)
        except RecursionError:
            yield too_deep(line, text)
        except json.JSONDecodeError as error:
            yield ImportProblem(line, "", f"malformed JSON: {error.msg} (column {error.colno})")
        else:
            yield from _checked([(line, value)])


def _json_object_lines(stream: BinaryIO, must_be: str) -> Iterator[tuple[int, dict] | ImportProblem]:
    """``_json_lines`` whose lines hold JSON objects: a line holding anything else is a problem saying what
    it ``must_be`` (each format names its own object)."""
    for entry in _json_lines(stream):
        if isinstance(entry, ImportProblem) or isinstance(entry[1], dict):
            yield entry
        else:
            yield ImportProblem(entry[0], "", must_be)


def _id(record: dict, keys: tuple[str, ...], line: int) -> str | ImportProblem:
    for key in keys:
        value = record.get(key)
        if value in (None, ""):
            continue
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            return ImportProblem(line, key, f"must be text or a whole number, got {type(value).__name__}")
        return str(value).strip() or ImportProblem(line, key, "is blank")
    return ImportProblem(line, keys[0], "is missing")


def _names(value: Any, line: int, field: str) -> list[str] | ImportProblem:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        return ImportProblem(line, field, f"must be a list of system names, got {type(value).__name__}")
    return value


def _header(record: dict, line: int, header: ParsedHeader) -> list[ImportProblem]:
    """Read a Concord header line into ``header``; problems name the header field."""
    systems = record.get("systems", {})
    if isinstance(systems, list) and all(isinstance(v, str) for v in systems):
        systems = dict.fromkeys(systems, "")
    if not isinstance(systems, dict) or not all(isinstance(v, (str, type(None))) for v in systems.values()):
        return [ImportProblem(line, "systems", "must be a list of names or an object name -> description")]
    human = _names(record.get("human_systems", []), line, "human_systems")
    reference = record.get("reference")
    problems = [human] if isinstance(human, ImportProblem) else []
    if reference is not None and not (isinstance(reference, str) and reference.strip()):
        problems.append(ImportProblem(line, "reference", f"must be a system name, got {type(reference).__name__}"))
    if problems:
        return problems
    header.systems.update({system_key(k): str(v or "") for k, v in systems.items()})
    header.human_systems.update(system_key(s) for s in human)
    if reference:
        header.human_systems.add(system_key(reference))
    return []


# --- Concord JSON lines ---------------------------------------------------------------------------

def parse_jsonl(stream: BinaryIO, header: ParsedHeader) -> Iterator[Record]:
    default_reference = None
    first = True
    for entry in _json_lines(stream):
        if isinstance(entry, ImportProblem):
            first = False
            yield entry
            continue
        line, record = entry
        if not isinstance(record, dict):
            yield ImportProblem(line, "", "each line must be a JSON object")
            continue
        if first and "concord" in record:
            first = False
            problems = _header(record, line, header)
            yield from problems
            if not problems:
                default_reference = record.get("reference")
            continue
        first = False
        external_id = _id(record, ("id",), line)
        turns = _turns(record.get("turns"), line, "turns")
        responses = record.get("responses")
        problems = [p for p in (external_id, turns) if isinstance(p, ImportProblem)]
        if not isinstance(responses, dict) or not responses:
            problems.append(ImportProblem(line, "responses", "must be a non-empty object system -> text"))
        if problems:
            yield from problems
            continue
        reference = record.get("reference", default_reference)
        if reference is not None and not isinstance(reference, str):
            yield ImportProblem(line, "reference", f"must be a system name, got {type(reference).__name__}")
            continue
        parsed: list[ParsedResponse] = []
        for name, value in responses.items():
            texts = value if isinstance(value, list) else [value]
            for position, text in enumerate(texts):
                checked = _text(text, line, f"responses.{name}")
                if isinstance(checked, ImportProblem):
                    problems.append(checked)
                    continue
                parsed.append(ParsedResponse(
                    system=system_key(name), text=checked, position=position,
                    is_reference=reference is not None and system_key(name) == system_key(reference),
                ))
        if "reference" in record and system_key(reference) not in {system_key(n) for n in responses}:
            problems.append(ImportProblem(line, "reference", f"names {reference!r}, which has no response here"))
        if problems:
            yield from problems
            continue
        metadata = record.get("metadata", {})
        yield ParsedConversation(external_id, turns, parsed, line, metadata if isinstance(metadata, dict) else {})


# --- CSV -----------------------------------------------------------------------------------------

CSV_REQUIRED = ("conversation_id", "context", "system", "response")
TRUE_WORDS, FALSE_WORDS = {"1", "true", "yes", "y", "t"}, {"", "0", "false", "no", "n", "f"}


def parse_csv(stream: BinaryIO, header: ParsedHeader) -> Iterator[Record]:
    lines = decoded_lines(stream)
    line_numbers: list[int] = []

    def texts() -> Iterator[str]:
        for number, text in lines:
            line_numbers.append(number)
            yield text + "\n"

    reader = csv.DictReader(texts())
    try:
        columns = reader.fieldnames or []
    except csv.Error as error:  # the header row itself is malformed (e.g. a field over csv's limit)
        raise ImportFailed([ImportProblem(1, "", f"malformed CSV header row: {error}")]) from None
    missing = [c for c in CSV_REQUIRED if c not in columns]
    if missing:
        raise ImportFailed([ImportProblem(1, c, "column is missing from the header row") for c in missing])
    current: ParsedConversation | None = None
    seen: dict[str, int] = {}
    try:
        for row in reader:
            line = line_numbers[-1]
            if None in row:
                yield ImportProblem(line, "", f"has more fields than the header ({len(columns)})")
                continue
            conversation_id = (row["conversation_id"] or "").strip()
            context = [t.strip() for t in (row["context"] or "").split(TURN_SEPARATOR)]
            problems = []
            if not conversation_id:
                problems.append(ImportProblem(line, "conversation_id", "is empty"))
            if not all(context):
                problems.append(ImportProblem(line, "context", f"has an empty turn (turns are separated by {TURN_SEPARATOR})"))
            response = _text(row["response"] or "", line, "response")
            if isinstance(response, ImportProblem):
                problems.append(response)
            system = (row["system"] or "").strip()
            if not system:
                problems.append(ImportProblem(line, "system", "is empty"))
            flag = (row.get("is_reference") or "").strip().lower()
            if flag not in TRUE_WORDS | FALSE_WORDS:
                problems.append(ImportProblem(line, "is_reference", f"must be true or false, got {flag!r}"))
            if problems:
                yield from problems
                continue
            speakers = [s.strip() for s in (row.get("speakers") or "").split(TURN_SEPARATOR)] if row.get("speakers") else []
            if speakers and len(speakers) != len(context):
                yield ImportProblem(line, "speakers", f"has {len(speakers)} entries for {len(context)} turns")
                continue
            turns = [{"speaker": s, "text": t} for s, t in zip(speakers, context, strict=True)] if speakers else alternate_speakers(context)
            if current is None or current.external_id != conversation_id:
                if conversation_id in seen:
                    yield ImportProblem(line, "conversation_id", (
                        f"{conversation_id!r} already appeared (line {seen[conversation_id]}); "
                        "rows of one conversation must be adjacent"))
                    continue
                if current is not None:
                    yield current
                seen[conversation_id] = line
                current = ParsedConversation(conversation_id, turns, [], line)
            elif turns != current.turns:
                yield ImportProblem(line, "context", f"differs from the context of {conversation_id!r} on line {current.line}")
                continue
            name = system_key(system)
            position = sum(1 for r in current.responses if r.system == name)
            current.responses.append(ParsedResponse(name, response, position, flag in TRUE_WORDS))
    except csv.Error as error:
        yield ImportProblem(line_numbers[-1] if line_numbers else 1, "", f"malformed CSV: {error}")
    if current is not None:
        yield current


# --- DailyDialog++ -------------------------------------------------------------------------------
