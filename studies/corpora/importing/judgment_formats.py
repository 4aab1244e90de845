"""The human-judgment formats (``ddpp``, ``grade``, ``fed``, ``dstc9``; see ``formats`` for each): parsers that read
conversations with their human scores per quality, a missing score (DSTC9's "N/A", FED's empty list) counted, never a number."""
from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterator
from typing import Any, BinaryIO

from django.utils.text import slugify

from studies.corpora.importing.formats import (
    DDPP_LEVELS,
    FED_SCALES,
    GRADE_SCALE,
    TURN_SEPARATOR,
    Record,
    _id,
    _json_object_lines,
    _json_objects,
    _text,
    _turns,
    system_key,
)
from studies.corpora.importing.reading import (
    json_loads,
    number_problem,
)
from studies.corpora.importing.records import (
    ImportProblem,
    ParsedConversation,
    ParsedHeader,
    ParsedResponse,
)


def parse_ddpp(stream: BinaryIO, header: ParsedHeader) -> Iterator[Record]:
    header.systems.update({name: description for _, name, description in DDPP_LEVELS})
    for entry in _json_object_lines(stream, "each line must be a JSON object"):
        if isinstance(entry, ImportProblem):
            yield entry
            continue
        line, record = entry
        external_id = _id(record, ("id", "dialog_id"), line)
        turns = _turns(record.get("context"), line, "context")
        problems = [p for p in (external_id, turns) if isinstance(p, ImportProblem)]
        responses: list[ParsedResponse] = []
        for key, name, _ in DDPP_LEVELS:
            texts = record.get(key)
            if texts is None and key != "positive_responses":
                continue
            if not isinstance(texts, list) or not texts:
                problems.append(ImportProblem(line, key, "must be a non-empty list of responses"))
                continue
            for position, text in enumerate(texts):
                checked = _text(text, line, f"{key}[{position}]")
                if isinstance(checked, ImportProblem):
                    problems.append(checked)
                else:
                    responses.append(ParsedResponse(name, checked, position, metadata={"level": key}))
        if problems:
            yield from problems
            continue
        yield ParsedConversation(external_id, turns, responses, line)


# --- GRADE ---------------------------------------------------------------------------------------

def parse_grade(stream: BinaryIO, header: ParsedHeader) -> Iterator[Record]:
    header.benchmark = True
    header.scales["coherence"] = GRADE_SCALE
    for entry in _json_objects(stream):
        if isinstance(entry, ImportProblem):
            yield entry
            continue
        _, line, record = entry
        problems: list[ImportProblem] = []
        external_id = _id(record, ("ID",), line)
        context = record.get("Context")
        turns = (
            _turns(context.split(TURN_SEPARATOR), line, "Context")
            if isinstance(context, str) else ImportProblem(line, "Context", "is missing or not text")
        )
        response = _text(record.get("Response"), line, "Response")
        model = record.get("DialogModel")
        if not isinstance(model, str) or not model.strip():
            problems.append(ImportProblem(line, "DialogModel", "is missing"))
        scores = _scores(record.get("HumanScores"), line, "HumanScores")
        problems += [p for p in (external_id, turns, response, scores) if isinstance(p, ImportProblem)]
        if problems:
            yield from problems
            continue
        bad = [s for s in scores if s is not None and not GRADE_SCALE[0] <= s <= GRADE_SCALE[1]]
        if bad:
            yield ImportProblem(line, "HumanScores", f"scores must be from 1 to 5, got {bad[0]:g}")
            continue
        name = system_key(model)
        header.systems.setdefault(name, f"GRADE generator {model}")
        yield ParsedConversation(
            external_id, turns,
            [ParsedResponse(name, response, human_scores={"coherence": scores})],
            line, metadata={"dataset": record.get("Dataset", "")},
        )


def _as_float(value: int | float) -> float:
    """``float(value)``, infinity for an integer too large for a float (``number_problem`` says so)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _scores(value: Any, line: int, field: str, *, allow_empty: bool = False) -> list[float | None] | ImportProblem:
    """One score per annotator position (None where one gave none). A bare number is one rating (files
    with one rating per record); ``allow_empty``: an empty list is a missing value, not a problem."""
    if isinstance(value, str):
        try:
            value = json_loads(value)
        except (json.JSONDecodeError, RecursionError):
            return ImportProblem(line, field, "must be a list of numbers (or a string holding one)")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = [value]
    if isinstance(value, list) and not value and allow_empty:
        return []
    if not isinstance(value, list) or not value:
        return ImportProblem(line, field, "must be a non-empty list of numbers")
    for i, v in enumerate(value):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            return ImportProblem(line, f"{field}[{i}]", f"must be a number, got {type(v).__name__}")
        if v is not None and (message := number_problem(_as_float(v))):
            return ImportProblem(line, f"{field}[{i}]", message)
    if all(v is None for v in value):
        return ImportProblem(line, field, "holds no score (only null); leave the quality out or give a number")
    return [None if v is None else _as_float(v) for v in value]


# --- FED / DSTC10 --------------------------------------------------------------------------------

SPEAKER_PREFIX = re.compile(r"^(User|System|Human|Bot|A|B|Speaker \d+)\s*:\s*", re.IGNORECASE)


def _prefixed_turns(block: str) -> list[dict[str, str]]:
    turns: list[dict[str, str]] = []
    for raw in block.split("\n"):
        if not raw.strip():
            continue
        match = SPEAKER_PREFIX.match(raw)
        if match:
            turns.append({"speaker": match.group(1), "text": raw[match.end():].strip()})
        elif turns:
            turns[-1]["text"] += " " + raw.strip()
        else:
            turns.append({"speaker": "A", "text": raw.strip()})
    return turns


def _quality_scores(values: Any, line: int, field: str, quality: str, header: ParsedHeader,
                    observed: dict[str, tuple[float, float]], scores: dict[str, list[float | None]],
                    problems: list[ImportProblem], *, one_rating: bool = False) -> None:
    """One quality of one record into ``scores``: a list (one score per annotator), a bare number (one
    rating), or an empty list / null: a missing value, counted in ``header.missing_scores`` and not a
    problem (the real FED dialogue-level file has a dialogue with an empty "Error recovery" list).
    ``one_rating`` (a record is one annotator's, as in DSTC9): a null keeps that annotator's position."""
    name = slugify(quality)
    if not name:
        problems.append(ImportProblem(line, field, "needs a name with letters or digits"))
        return
    if values is None:
        checked: list[float | None] | ImportProblem = []
    else:
        checked = _scores(values, line, field, allow_empty=True)
    if isinstance(checked, ImportProblem):
        problems.append(checked)
        return
    if not checked:  # nobody rated this quality here
        header.missing_scores[name] = header.missing_scores.get(name, 0) + 1
        if one_rating:
            scores[name] = [None]
        return
    scores[name] = checked
    present = [v for v in checked if v is not None]
    low, high = observed.get(name, (min(present), max(present)))
    observed[name] = (min(low, *present), max(high, *present))


def _set_scales(header: ParsedHeader, observed: dict[str, tuple[float, float]], known: dict[str, tuple[float, float]]):
    """Each quality's scale: the known one widened to what was observed (and to what earlier files of
    the same import declared)."""
    for name, (low, high) in observed.items():
        for scale in (known.get(name), header.scales.get(name)):
            if scale:
                low, high = min(scale[0], low), max(scale[1], high)
        header.scales[name] = (low, high)


def _unit(header: ParsedHeader, unit: str, line: int, seen: list[int]) -> ImportProblem | None:
    """The first record fixes the file's unit of judgement; a file mixing turn-level and dialogue-level
    records is refused (the two cannot share one benchmark study)."""
    if not seen:
        header.unit = unit
        seen.append(line)
        return None
    if header.unit != unit:
        first = "dialogue-level" if header.unit == "dialogue" else "turn-level"
        return ImportProblem(line, "dialog" if unit == "dialogue" else "context", (
            f"is a {'dialogue' if unit == 'dialogue' else 'turn'}-level record, but the file started with "
            f"{first} records (line {seen[0]}); import the two levels as separate files"))
    return None


def _system_name(record: dict, line: int, problems: list[ImportProblem], *keys: str) -> str:
    for key in keys:
        value = record.get(key)
        if value is None or value == "":
            continue
        if not isinstance(value, str):
            problems.append(ImportProblem(line, key, f"must be a system name, got {type(value).__name__}"))
            return "unknown"
        return value
    return "unknown"


def parse_fed(stream: BinaryIO, header: ParsedHeader) -> Iterator[Record]:
    """FED in the DSTC10 format. Turn level: the context and the judged response. Dialogue level
    (``dialog``): the whole dialogue is the judged unit (``header.unit = "dialogue"``), its scores are
    the conversation's, and the system that took part is kept in the conversation's metadata."""
    header.benchmark = True
    observed: dict[str, tuple[float, float]] = {}
    first_line: list[int] = []
    for entry in _json_objects(stream):
        if isinstance(entry, ImportProblem):
            yield entry
            continue
        index, line, record = entry
        level = "dialogue" if "dialog" in record else "turn"
        problems: list[ImportProblem] = []
        if (mixed := _unit(header, "dialogue" if level == "dialogue" else "response", line, first_line)) is not None:
            yield mixed
            continue
        external_id = _id(record, ("dialogue_id", "dialog_id", "id"), line)
        id_generated = isinstance(external_id, ImportProblem)
        if id_generated:
            if external_id.message != "is missing":
                problems.append(external_id)
            external_id = f"{index + 1}"
        if level == "turn":
            context, response = record.get("context"), record.get("response")
            turns = _prefixed_turns(context) if isinstance(context, str) else []
            if not turns:
                problems.append(ImportProblem(line, "context", "is missing or empty"))
            reply = _prefixed_turns(response) if isinstance(response, str) else []
            if not reply or not reply[0]["text"]:
                problems.append(ImportProblem(line, "response", "is missing or empty"))
        else:
            turns = _turns(record.get("dialog"), line, "dialog", keep_empty=True)
            if isinstance(turns, ImportProblem):
                problems.append(turns)
        annotations = record.get("annotations")
        scores: dict[str, list[float | None]] = {}
        if not isinstance(annotations, dict) or not annotations:
            problems.append(ImportProblem(line, "annotations", "must be an object quality -> list of scores"))
        else:
            for quality, values in annotations.items():
                _quality_scores(values, line, f"annotations.{quality}", quality, header, observed, scores, problems)
        model = _system_name(record, line, problems, "model", "system")
        if problems:
            yield from problems
            continue
        name = system_key(model)
        header.systems.setdefault(name, f"FED system {model}")
        if model.lower() == "human":
            header.human_systems.add(name)
        if level == "dialogue":
            yield ParsedConversation(external_id, turns, [], line, metadata={"level": level, "system": name},
                                     id_generated=id_generated, human_scores=scores)
            continue
        yield ParsedConversation(
            external_id, turns,
            [ParsedResponse(name, reply[0]["text"], metadata={"level": level, "speaker": reply[0]["speaker"]},
                            human_scores=scores)],
            line, metadata={"level": level}, id_generated=id_generated,
        )
    _set_scales(header, observed, FED_SCALES)


# --- DSTC9 interactive evaluation -------------------------------------------------------------------

DSTC9_TEXT_KEYS = ("context", "dialog", "dialogue")
DSTC9_ID_KEYS = ("dialogue_id", "dialog_id", "id")
DSTC9_SYSTEM_KEYS = ("model", "system", "bot")
# "human (overall)" is DSTC9's 1-5 overall score; the other qualities' scales are not FED's (a coherent
# of 3 occurs), so they take the observed range.
DSTC9_SCALES = {"human-overall": (1, 5)}
DSTC9_KNOWN = {"coherent", "error-recovery", "consistent", "diverse", "topic-depth", "likeable", "understanding",
               "flexible", "informative", "inquisitive", "human-overall"}
NUMBER_TEXT = re.compile(r"^\s*-?\d+(\.\d+)?\s*$")
# what DSTC9's files write where an annotator could not judge a quality (about one record in ten, mostly
# "error recovery"): "N/A", or an empty string; like null and an empty list, a missing value
MISSING_TEXT = re.compile(r"^\s*(n/?a)?\s*$", re.IGNORECASE)


def parse_dstc9(stream: BinaryIO, header: ParsedHeader) -> Iterator[Record]:
    """DSTC9 interactive evaluation as redistributed with FlowScore/DialoFlow: a JSON array with one
    record per rating, ``{"context": "User: ...\nSystem: ...", "coherent": 3, ..., "human (overall)": 4}``.

    The whole dialogue (``context``, turns by their ``User:``/``System:`` prefixes) is the judged unit;
    every other key with a number (or a list of numbers, a number written as text, or a missing value:
    null, an empty list, "N/A" or an empty string — counted per quality in ``header.missing_scores``) is a
    quality; other text (an annotator's name, a source) is kept in the metadata,
    except under a known quality name, where text is an error.
    The same dialogue appears once per annotator: the k-th record with the same text is annotator k
    (``studies.corpora.services`` merges them by content, also across several files of one evaluation). Text
    keys other than the dialogue (a model or an id) are kept: ``model``/``system`` names the system,
    else the name of the file where the dialogue first occurs does (the redistribution has one file per
    chatbot, without a model key)."""
    header.benchmark = True
    header.unit = "dialogue"
    observed: dict[str, tuple[float, float]] = {}
    seen_qualities: set[str] = set()
    for entry in _json_objects(stream):
        if isinstance(entry, ImportProblem):
            yield entry
            continue
        _, line, record = entry
        yield from _dstc9_record(record, line, header, observed, seen_qualities)
    _set_scales(header, observed, DSTC9_SCALES)


def _dstc9_record(record: dict, line: int, header: ParsedHeader, observed: dict[str, tuple[float, float]],
                  seen_qualities: set[str]) -> Iterator[Record]:
    """One DSTC9 rating: its problems, or the dialogue with its scores, system and id (a digest of the text
    where the record has none, so that its k ratings meet)."""
    problems: list[ImportProblem] = []
    text_key, turns = _dstc9_turns(record, line, problems)
    scores, extra, qualities = _dstc9_scores(record, text_key, line, header, observed, seen_qualities, problems)
    seen_qualities.update(name for name, given in scores.items() if any(v is not None for v in given))
    if not qualities:
        problems.append(ImportProblem(line, "", "has no quality score (expected keys such as \"coherent\": 3)"))
    given_id = next((k for k in DSTC9_ID_KEYS if record.get(k) not in (None, "")), None)
    external_id = _id(record, (given_id,), line) if given_id else None
    if isinstance(external_id, ImportProblem):
        problems.append(external_id)
    model = _system_name(record, line, problems, *DSTC9_SYSTEM_KEYS)
    if problems:
        yield from problems
        return
    if model == "unknown" and header.source:  # one file per chatbot, named after it ("chatbot3.json")
        model = header.source.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    if external_id is None:  # no id: the dialogue's text names it, so its k ratings (any file) meet
        digest = hashlib.blake2b(repr(turns).encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()
        external_id = f"dstc9-{digest}"
    metadata = {"level": "dialogue", "system": system_key(model), **({"fields": extra} if extra else {})}
    yield ParsedConversation(external_id, turns, [], line, metadata=metadata,
                             id_generated=given_id is None, human_scores=scores)


def _dstc9_turns(record: dict, line: int, problems: list[ImportProblem]) -> tuple[str, list]:
    """The key holding the dialogue and its turns (a list of turns, or text with ``User:``/``System:``
    prefixes); a problem is added where there is no dialogue with text."""
    text_key = next((k for k in DSTC9_TEXT_KEYS if k in record), "context")
    text = record.get(text_key)
    if isinstance(text, list):
        turns = _turns(text, line, text_key, keep_empty=True)
    elif isinstance(text, str):
        turns = _prefixed_turns(text)
    else:
        given = "is missing" if text is None else f"must be text, got {type(text).__name__}"
        turns = ImportProblem(line, text_key, f"{given}; it holds the dialogue (\"User: ...\\nSystem: ...\")")
    if isinstance(turns, ImportProblem):
        problems.append(turns)
        return text_key, []
    if not any(t["text"] for t in turns):
        problems.append(ImportProblem(line, text_key, "holds no turn with text"))
    return text_key, turns


def _dstc9_scores(record: dict, text_key: str, line: int, header: ParsedHeader,
                  observed: dict[str, tuple[float, float]], seen_qualities: set[str],
                  problems: list[ImportProblem]) -> tuple[dict[str, list[float | None]], dict[str, str], int]:
    """Every key besides the dialogue, an id and a system: a quality score (a number, one written as text, or
    a missing value), or other text kept as a field; text under a known quality is a problem. Returns the
    scores, the text fields and how many qualities the record has."""
    scores: dict[str, list[float | None]] = {}
    extra: dict[str, str] = {}
    qualities = 0
    for key, value in record.items():
        if key in (text_key, *DSTC9_ID_KEYS, *DSTC9_SYSTEM_KEYS):
            continue
        if isinstance(value, str) and MISSING_TEXT.match(value):
            if not value.strip() and slugify(key) not in DSTC9_KNOWN | seen_qualities:
                continue  # an empty text field that is no quality
            value = None  # "N/A": the annotator could not judge this quality: a missing value
        if isinstance(value, str):
            if NUMBER_TEXT.match(value):
                value = float(value)  # a score written as text ("3")
            elif slugify(key) in DSTC9_KNOWN | seen_qualities:
                problems.append(ImportProblem(line, key, f"must be a number (a quality score), got text {value[:20]!r}"))
                continue
            else:  # another text field (an annotator's or a source's name): kept, not a quality
                extra[key] = value
                continue
        if isinstance(value, dict):
            problems.append(ImportProblem(line, key, (
                "must be a number (a quality score), got an object; every key besides the dialogue, an id "
                f"({', '.join(DSTC9_ID_KEYS)}), a system ({', '.join(DSTC9_SYSTEM_KEYS)}) and other text is a quality")))
            continue
        qualities += 1
        _quality_scores(value, line, key, key, header, observed, scores, problems, one_rating=True)
    return scores, extra, qualities
