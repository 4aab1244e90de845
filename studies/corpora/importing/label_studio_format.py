"""Label Studio's task export (``label-studio``): a JSON array of tasks, each ``{"id", "data": {...},
"annotations": [{"completed_by", "was_cancelled", "result": [...]}], "predictions": [...]}``
(https://labelstud.io/guide/task_format).

What a dialogue task holds in ``data``: the dialogue as a list of turns under one of ``TURN_KEYS``
(Label Studio's ``<Paragraphs>`` objects ``{"author", "text"}``, or ``{"speaker"|"role"|"name", "text"}``,
or plain strings "Speaker: text"), or a text with one turn per line; optionally the ``response`` judged
and its ``system`` (or ``model``). A task without a response judges the whole dialogue. Tasks naming
the same conversation (``conversation_id``, ``dialogue_id``, else the task ``id``) with the same turns
are one conversation with several responses.

Each annotation's ``result`` entries become answers of the rater ``completed_by`` (a user id, an
e-mail, or Label Studio's user object) on the criterion ``from_name``: ``rating`` (stars) and
``number`` as values, ``choices`` as labels (a label set when several are ticked; numbers as values),
``textarea`` as free text (no choice ticked: an empty label set), ``labels`` on a task's response (a text
field) as marked spans: ``{"start", "end", "labels", "text"}`` character offsets into ``data.response``, one
span per label, every region of one annotator and control one answer (``text``, when given, must be those
characters). Cancelled annotations and predictions are not answers; other result types (regions of images or
paragraphs) are named in the warnings and left out.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, BinaryIO

from studies.corpora.importing.formats import Record, _json_objects, system_key
from studies.corpora.importing.reading import number_problem
from studies.corpora.importing.records import ImportProblem, ParsedConversation, ParsedHeader, ParsedResponse

TURN_KEYS = ("dialogue", "dialog", "conversation", "messages", "turns", "chat", "context", "text")
SPEAKER_KEYS = ("author", "speaker", "role", "name", "id")
ID_KEYS = ("conversation_id", "dialogue_id", "dialog_id")
RESULT_TYPES = ("rating", "number", "choices", "textarea", "labels")
PREFIX = re.compile(r"^\s*([^:\n]{1,40}?)\s*:\s+(.*)$", re.DOTALL)


def split_prefix(text: str, index: int) -> dict[str, str]:
    """"Alice: hi" -> {"speaker": "Alice", "text": "hi"}; a turn without a prefix alternates A/B."""
    found = PREFIX.match(text)
    if found and found.group(2).strip():
        return {"speaker": found.group(1).strip(), "text": found.group(2).strip()}
    return {"speaker": "AB"[index % 2], "text": text.strip()}


def data_turns(data: dict, line: int) -> tuple[str, list[dict[str, str]]] | ImportProblem:
    """(the data key, the turns) of a task's dialogue; a problem names the key and turn."""
    key = next((k for k in TURN_KEYS if data.get(k) not in (None, "", [])), None)
    if key is None:
        return ImportProblem(line, "data", f"holds no dialogue: give one of {', '.join(TURN_KEYS)}")
    value = data[key]
    if isinstance(value, str):
        value = [part for part in value.splitlines() if part.strip()]
    if not isinstance(value, list):
        return ImportProblem(line, f"data.{key}", "must be a list of turns or a text with one turn per line")
    turns = []
    for i, turn in enumerate(value):
        if isinstance(turn, str) and turn.strip():
            turns.append(split_prefix(turn, i))
            continue
        if not isinstance(turn, dict) or not isinstance(turn.get("text"), str) or not turn["text"].strip():
            return ImportProblem(line, f"data.{key}[{i}]", 'must be {"author": ..., "text": ...} or "Speaker: text"')
        speaker = next((turn[k] for k in SPEAKER_KEYS if isinstance(turn.get(k), (str, int))
                        and not isinstance(turn.get(k), bool) and str(turn[k]).strip()), None)
        turns.append({"speaker": str(speaker).strip() if speaker is not None else "AB"[i % 2],
                      "text": turn["text"].strip()})
    return key, turns


def rater_of(annotation: dict, index: int) -> str:
    """Who made an annotation: ``completed_by`` as an id, an e-mail or Label Studio's user object."""
    who = annotation.get("completed_by")
    if isinstance(who, dict):
        who = who.get("email") or who.get("id")
    if isinstance(who, bool) or not isinstance(who, (str, int)) or not str(who).strip():
        return f"annotator-{index + 1}"
    return str(who).strip()[:80]


def span_value(value: dict, text: str, line: int, where: str) -> list[dict] | ImportProblem:
    """A ``labels`` region as spans (one per label) on the response ``text``, or the problem naming its field."""
    start, end = value.get("start"), value.get("end")
    for key, given in (("start", start), ("end", end)):
        if isinstance(given, bool) or not isinstance(given, int):
            return ImportProblem(line, f"{where}.value.{key}", f"must be a whole number of characters, got {given!r}")
    assert isinstance(start, int) and isinstance(end, int)
    if not 0 <= start < end <= len(text):
        return ImportProblem(line, f"{where}.value", f"[{start}, {end}) is outside the response (it has {len(text)} "
                                                     "characters; 0 ≤ start < end ≤ its length)")
    marked = value.get("text")
    if marked is not None and marked != text[start:end]:
        return ImportProblem(line, f"{where}.value.text", f"{str(marked)[:40]!r} is not the response's characters "
                                                          f"{start} to {end} ({text[start:end][:40]!r})")
    labels = value.get("labels")
    if isinstance(labels, str):
        labels = [labels]
    if not isinstance(labels, list) or not labels or not all(isinstance(x, str) and 0 < len(x.strip()) <= 60
                                                             for x in labels):
        return ImportProblem(line, f"{where}.value.labels", "must be a list of labels of 1 to 60 characters")
    # offsets into the response as stored (its surrounding spaces stripped)
    lead, kept = len(text) - len(text.lstrip()), len(text.strip())
    start, end = max(0, start - lead), min(kept, end - lead)
    if start >= end:
        return ImportProblem(line, f"{where}.value", "marks only the spaces around the response")
    return [{"start": start, "end": end, "label": label.strip()} for label in labels]


def result_answer(result: Any, line: int, where: str, text: str | None = None) -> dict | ImportProblem | str:
    """One result entry as {"criterion", "type", "value"}; a str is the name of a type left out. ``text``: the
    task's response, which span labels mark (None: the task judges the whole dialogue)."""
    if not isinstance(result, dict):
        return ImportProblem(line, where, "each result is an object")
    kind, name, value = result.get("type"), result.get("from_name"), result.get("value")
    if kind not in RESULT_TYPES:
        return str(kind)
    if not isinstance(name, str) or not name.strip():
        return ImportProblem(line, f"{where}.from_name", "is missing")
    if not isinstance(value, dict):
        return ImportProblem(line, f"{where}.value", "must be an object")
    if kind == "labels":
        if text is None:  # no response to mark: a region of the dialogue, left out
            return "labels (on a whole dialogue)"
        spans = span_value(value, text, line, where)
        if isinstance(spans, ImportProblem):
            return spans
        return {"criterion": system_key(name).lower()[:60], "type": kind, "value": spans}
    given = value.get({"rating": "rating", "number": "number", "choices": "choices", "textarea": "text"}[kind])
    if kind in ("rating", "number"):
        if isinstance(given, bool) or not isinstance(given, (int, float)) or number_problem(float(given)):
            return ImportProblem(line, f"{where}.value.{kind}", "must be a finite number")
        given = float(given)
    else:
        if isinstance(given, str):
            given = [given]
        if not isinstance(given, list) or not all(isinstance(g, str) for g in given):
            return ImportProblem(line, f"{where}.value", f"{kind} must be a list of texts")
        if kind == "choices" and any(len(g) > 60 or not g.strip() for g in given):
            return ImportProblem(line, f"{where}.value.choices", "each label has 1 to 60 characters")
    return {"criterion": system_key(name).lower()[:60], "type": kind, "value": given}


def parse_label_studio(stream: BinaryIO, header: ParsedHeader) -> Iterator[Record]:
    header.annotated = True
    merged: dict[str, ParsedConversation] = {}
    units: set[bool] = set()
    skipped: dict[str, int] = {}
    for entry in _json_objects(stream):
        if isinstance(entry, ImportProblem):
            yield entry
            continue
        _, line, task = entry
        data = task.get("data")
        if not isinstance(data, dict):
            yield ImportProblem(line, "data", "must be an object (a Label Studio task)")
            continue
        found = data_turns(data, line)
        if isinstance(found, ImportProblem):
            yield found
            continue
        _, turns = found
        external = next((data[k] for k in ID_KEYS if isinstance(data.get(k), (str, int)) and str(data[k]).strip()),
                        task.get("id", line))
        external_id = str(external).strip()
        response_text = data.get("response")
        system = None
        if response_text is not None:
            if not isinstance(response_text, str) or not response_text.strip():
                yield ImportProblem(line, "data.response", "must be non-empty text")
                continue
            named = data.get("system", data.get("model"))
            system = system_key(str(named)) if isinstance(named, (str, int)) and str(named).strip() else "label-studio"
        units.add(system is None)
        if len(units) > 1:
            yield ImportProblem(line, "data.response", "every task of a file judges a response, or none does "
                                                      "(the whole dialogue)")
            continue
        answers: list[dict] = []
        problem = None
        annotations = task.get("annotations", [])
        if not isinstance(annotations, list):
            yield ImportProblem(line, "annotations", "must be a list of annotations")
            continue
        for a, annotation in enumerate(annotations):
            if not isinstance(annotation, dict) or annotation.get("was_cancelled"):
                continue
            results = annotation.get("result", [])
            if not isinstance(results, list):
                problem = ImportProblem(line, f"annotations[{a}].result", "must be a list")
                break
            rater = rater_of(annotation, a)
            regions: dict[str, dict] = {}  # one span answer per control: Label Studio keeps a result per region
            for r, result in enumerate(results):
                answer = result_answer(result, line, f"annotations[{a}].result[{r}]",
                                       response_text if system is not None else None)
                if isinstance(answer, ImportProblem):
                    problem = answer
                    break
                if isinstance(answer, str):
                    skipped[answer] = skipped.get(answer, 0) + 1
                    continue
                if answer["type"] == "labels" and answer["criterion"] in regions:
                    regions[answer["criterion"]]["value"] += answer["value"]
                    continue
                answers.append({**answer, "rater": rater, "system": system})
                if answer["type"] == "labels":
                    regions[answer["criterion"]] = answers[-1]
            if problem:
                break
        if problem:
            yield problem
            continue
        conversation = merged.get(external_id)
        if conversation is None:
            metadata = {"source": "label-studio", "task": task.get("id")}
            if isinstance(data.get("system"), str) and system is None:
                metadata["system"] = system_key(data["system"])
            conversation = merged[external_id] = ParsedConversation(external_id, turns, [], line, metadata)
        elif conversation.turns != turns:
            yield ImportProblem(line, "data", f"conversation {external_id!r} was given other turns on line "
                                              f"{conversation.line}")
            continue
        if system is not None:
            if any(r.system == system for r in conversation.responses):
                yield ImportProblem(line, "data.system", f"conversation {external_id!r} already has a response "
                                                         f"of {system!r}")
                continue
            header.systems.setdefault(system, "imported from Label Studio")
            conversation.responses.append(ParsedResponse(system, str(response_text).strip(),
                                                         position=0, metadata={"task": task.get("id")}))
        conversation.annotations += answers
    if units == {True}:
        header.unit = "dialogue"
    for kind, n in sorted(skipped.items()):
        header.warnings.append(ImportProblem(None, "result", f"{n} result(s) of type {kind!r} are not imported "
                                                             "(ratings, numbers, choices, text areas and span labels are)"))
    yield from merged.values()
