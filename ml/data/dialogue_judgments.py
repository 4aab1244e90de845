"""Dialogue-level human judgments, read straight from the public files (pure Python).

- FED dialogue level (Mehri & Eskenazi, SIGDIAL 2020; DSTC10 layout): a JSON list of
  ``{"dialog": [{"speaker", "text"}...], "annotations": {quality: [scores...]}, "model", "dialogue_id"}``;
  an annotation list may be empty or hold nulls (that quality then has no human score for the dialogue).
- DSTC9 dialogue level (Gunasekara et al. 2020): a JSON list with one record **per rating**,
  ``{"context": "User: …\\nSystem: …", "<quality>": number, …}``; records with the same context are the
  same dialogue, rated several times.

The human score of a dialogue for a quality is the mean of its ratings. Bad input: a ValueError
naming the file and the record."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

SPEAKER_LINE = re.compile(r"^\s*([A-Za-z][\w .'-]{0,30}?)\s*:\s?(.*)$")
DSTC9_NOT_QUALITIES = {"context", "dialogue_id", "dialog_id", "id", "model", "system", "annotator", "worker_id"}


@dataclass
class JudgedDialogue:
    id: str
    turns: list[str]
    speakers: list[str]
    scores: dict[str, list[float]] = field(default_factory=dict)  # quality -> the ratings given

    def human(self, quality: str) -> float | None:
        values = self.scores.get(quality) or []
        return sum(values) / len(values) if values else None


def _load_list(path: str | Path) -> list:
    name = Path(path).name
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{name}: not JSON (line {error.lineno}: {error.msg})") from None
    if not isinstance(data, list):
        raise ValueError(f"{name}: expected a JSON list of records, got {type(data).__name__}")
    return data


def _numbers(values, where: str) -> list[float]:
    if not isinstance(values, list):
        values = [values]
    out = []
    for value in values:
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{where}: {value!r} is not a number")
        out.append(float(value))
    return out


def read_fed_dialogues(path: str | Path) -> list[JudgedDialogue]:
    name = Path(path).name
    out = []
    for index, record in enumerate(_load_list(path)):
        where = f"{name} record {index}"
        if not isinstance(record, dict) or not isinstance(record.get("dialog"), list):
            raise ValueError(f"{where}: needs a 'dialog' list of {{speaker, text}} (a FED dialogue-level file)")
        turns, speakers = [], []
        for k, turn in enumerate(record["dialog"]):
            if not isinstance(turn, dict) or not isinstance(turn.get("text"), str):
                raise ValueError(f"{where} turn {k}: needs 'text'")
            turns.append(turn["text"])
            speakers.append(str(turn.get("speaker", "")))
        if not turns:
            raise ValueError(f"{where}: the dialog is empty")
        annotations = record.get("annotations") or {}
        if not isinstance(annotations, dict):
            raise ValueError(f"{where}: 'annotations' must map a quality to a list of scores")
        scores = {q: _numbers(v, f"{where} annotations[{q!r}]") for q, v in annotations.items()}
        out.append(JudgedDialogue(str(record.get("dialogue_id", index)), turns, speakers, scores))
    return out


def split_context(context: str) -> tuple[list[str], list[str]]:
    """``"User: hi\\nSystem: hello"`` -> (turns, speakers); a line without ``Speaker:`` continues the turn
    before it (or starts one without a speaker)."""
    turns: list[str] = []
    speakers: list[str] = []
    for line in context.splitlines():
        if not line.strip():
            continue
        match = SPEAKER_LINE.match(line)
        if match:
            speakers.append(match.group(1).strip())
            turns.append(match.group(2).strip())
        elif turns:
            turns[-1] = f"{turns[-1]} {line.strip()}"
        else:
            speakers.append("")
            turns.append(line.strip())
    return turns, speakers


def read_dstc9(path: str | Path) -> list[JudgedDialogue]:
    name = Path(path).name
    by_context: dict[str, JudgedDialogue] = {}
    for index, record in enumerate(_load_list(path)):
        where = f"{name} record {index}"
        if not isinstance(record, dict) or not isinstance(record.get("context"), str):
            raise ValueError(f"{where}: needs a 'context' string (a DSTC9 dialogue-level file)")
        dialogue = by_context.get(record["context"])
        if dialogue is None:
            turns, speakers = split_context(record["context"])
            if not turns:
                raise ValueError(f"{where}: the context is empty")
            key = record.get("dialogue_id", record.get("dialog_id", len(by_context)))
            dialogue = by_context[record["context"]] = JudgedDialogue(str(key), turns, speakers)
        for quality, value in record.items():
            if quality in DSTC9_NOT_QUALITIES or isinstance(value, str) or value is None:
                continue
            dialogue.scores.setdefault(quality, []).extend(_numbers(value, f"{where} {quality!r}"))
    return list(by_context.values())


def detect_format(path: str | Path) -> str:
    """``fed-dialogue`` (records with ``dialog``), ``fed-turn`` (``context`` + ``response``) or ``dstc9``
    (``context`` without ``response``), from the first record."""
    data = _load_list(path)
    first = data[0] if data else {}
    if isinstance(first, dict) and "dialog" in first:
        return "fed-dialogue"
    if isinstance(first, dict) and "context" in first:
        return "fed-turn" if "response" in first else "dstc9"
    raise ValueError(f"{Path(path).name}: not a FED or DSTC9 file (first record has neither 'dialog' nor 'context')")
