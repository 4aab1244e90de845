"""ParlAI / Mephisto files: ACUTE-Eval pairings, self-chat logs and model-chat logs. Each speaker keeps
the name ParlAI gives it (a turn's ``id``); a turn whose speaker cannot be read is kept with the speaker
its place implies and a warning naming its line (``ParsedHeader.warnings``), never silently renamed.

``parlai-pairings`` (``task_config/pairings.jsonl`` of ``parlai/crowdsourcing/tasks/acute_eval``): one pair
per line, ``{"is_onboarding": false, "speakers_to_eval": [s1, s2], "dialogue_dicts": [d1, d2]}``, each
``d`` ``{"speakers": [...], "id": ..., "dialogue": [{"id": speaker, "text": ...}, ...]}``; an onboarding
line (``"is_onboarding": true``) also has ``"correct_answer"`` (one of ``speakers_to_eval``). The judged
speaker of side i is ``speakers_to_eval[i]``, which is also its system (ParlAI names a model's speaker
after the model). A dialogue that appears in several pairs (same ``id``, or no id and the same turns) is
one conversation. The pairs themselves (``ParsedHeader.pairs``) become the items of a draft ACUTE-Eval
study, the onboarding pairs its check pairs (``studies.corpora.parlai_study``).

``parlai-selfchat`` (``self_chats/<model>.<task>.jsonl`` written by ``parlai self_chat``): one conversation
per line, ``{"dialog": [[turn, turn], ...], "context": [{"id": "context", "text": ...}, ...]}``: the
dialog is a list of exchanges, each a list of turns ``{"id", "text"}``. The system is the file name's
first part (``model2.blended_skill_talk.jsonl`` -> ``model2``) unless the record has ``model``; the
judged speaker is the first speaker (or the import form's). ``context`` (persona lines, seeded
utterances) is kept in the conversation's metadata, one entry per side.

``parlai-modelchat`` (``parlai/crowdsourcing/tasks/model_chat`` results): one JSON object per file (or one
per line), ``{"dialog": [{"id", "text", "agent_idx"}, ...], "personas", "context_dataset",
"additional_context", "bot_persona_strings", "task_description": {"model_nickname"}}``. The system is
``task_description.model_nickname`` (else the bot's speaker name); the judged speaker is the bot (the
turns of ``agent_idx`` 1, else the speaker other than the worker); the personas and context are kept in
the metadata.
"""
from __future__ import annotations

import hashlib
import io
import json
import re
from collections.abc import Iterator
from typing import Any, BinaryIO

from studies.corpora.importing.formats import Record, _json_lines, _json_object_lines, system_key
from studies.corpora.importing.reading import decoded_lines, json_loads, value_problem
from studies.corpora.importing.records import ImportProblem, ParsedConversation, ParsedHeader

PARLAI_FORMATS = {
    "parlai-pairings": "ParlAI ACUTE-Eval pairings (pairings.jsonl)",
    "parlai-selfchat": "ParlAI self-chat log (self_chats/*.jsonl)",
    "parlai-modelchat": "ParlAI/Mephisto model-chat log",
}
# Keys of a model-chat record that tell it from a self-chat line (both have "dialog").
MODELCHAT_KEYS = ('"agent_idx"', '"context_dataset"', '"bot_persona_strings"', '"task_description"',
                  '"personas"', '"person1_seed_utterance"')
CONTEXT_KEYS = ("personas", "context_dataset", "additional_context", "bot_persona_strings",
                "person1_seed_utterance", "person2_seed_utterance", "context_info", "workers")


def _speaker_of(turn: dict) -> str | None:
    for key in ("id", "speaker"):
        value = turn.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
            return str(value).strip()
    return None


def parlai_turns(value: Any, line: int, field: str, header: ParsedHeader) -> list[dict[str, str]] | ImportProblem:
    """ParlAI turns (``{"id": speaker, "text": ...}``) as Concord's ``{"speaker", "text"}``. A turn without
    a readable speaker takes the speaker of the turn two places before or after it (ParlAI's dialogues
    alternate), else ``unknown``, with a warning naming the line and turn."""
    if not isinstance(value, list) or not value:
        return ImportProblem(line, field, "must be a non-empty list of turns {\"id\": speaker, \"text\": ...}")
    names: list[str | None] = []
    texts: list[str] = []
    for i, turn in enumerate(value):
        if not isinstance(turn, dict):
            return ImportProblem(line, f"{field}[{i}]", "must be an object {\"id\": speaker, \"text\": ...}")
        text = turn.get("text")
        if not isinstance(text, str):
            return ImportProblem(line, f"{field}[{i}].text", f"must be text, got {type(text).__name__}")
        names.append(_speaker_of(turn))
        texts.append(text.strip())
    if not any(texts):
        return ImportProblem(line, field, "holds no turn with text")
    turns = []
    for i, (name, text) in enumerate(zip(names, texts, strict=True)):
        if name is None:
            guess = next((names[j] for j in (i - 2, i + 2) if 0 <= j < len(names) and names[j]), None)
            name = guess or "unknown"
            how = f"taken as {name!r}, the speaker two turns away" if guess else f"kept as {name!r}"
            header.warnings.append(ImportProblem(line, f"{field}[{i}].id", f"the turn names no speaker; {how}"))
        turns.append({"speaker": name, "text": text})
    return turns


def _digest(turns: list[dict[str, str]]) -> str:
    return hashlib.blake2b(json.dumps(turns, sort_keys=True).encode("utf-8", "surrogatepass"),
                           digest_size=8).hexdigest()


def _judged(turns: list[dict[str, str]], preferred: str, header: ParsedHeader) -> str:
    """The import form's speaker where the conversation has it, else ``preferred``."""
    names = {t["speaker"] for t in turns}
    return header.judged_speaker if header.judged_speaker in names else preferred


# --- ACUTE-Eval pairings ------------------------------------------------------------------------------

def parse_parlai_pairings(stream: BinaryIO, header: ParsedHeader) -> Iterator[Record]:
    header.unit = "dialogue"
    kept: dict[str, tuple[str, int]] = {}  # dialogue key -> (digest of its turns, line first read)
    for entry in _json_object_lines(stream, "each line must be a JSON object (one pair of dialogues)"):
        if isinstance(entry, ImportProblem):
            yield entry
            continue
        line, record = entry
        onboarding = record.get("is_onboarding", False)
        speakers = record.get("speakers_to_eval")
        dialogues = record.get("dialogue_dicts")
        problems = []
        if not isinstance(onboarding, bool):
            problems.append(ImportProblem(line, "is_onboarding", f"must be true or false, got {onboarding!r}"))
        if not (isinstance(speakers, list) and len(speakers) == 2
                and all(isinstance(s, str) and s.strip() for s in speakers)):
            problems.append(ImportProblem(line, "speakers_to_eval", "must list the two speakers to judge, one per dialogue"))
        if not (isinstance(dialogues, list) and len(dialogues) == 2 and all(isinstance(d, dict) for d in dialogues)):
            problems.append(ImportProblem(line, "dialogue_dicts", "must hold the two dialogues of the pair (objects)"))
        if problems:
            yield from problems
            continue
        speakers = [s.strip() for s in speakers]
        sides = []
        for i, dialogue in enumerate(dialogues):
            turns = parlai_turns(dialogue.get("dialogue"), line, f"dialogue_dicts[{i}].dialogue", header)
            if isinstance(turns, ImportProblem):
                problems.append(turns)
                continue
            spoken = list(dict.fromkeys(t["speaker"] for t in turns))
            if speakers[i] not in spoken:
                problems.append(ImportProblem(line, f"speakers_to_eval[{i}]", (
                    f"{speakers[i]!r} does not speak in dialogue_dicts[{i}] (its speakers: {', '.join(spoken)})")))
            sides.append((dialogue, turns))
        if problems:
            yield from problems
            continue
        # The import form's speaker where a side has it, else the file's speakers_to_eval (one rule for the
        # conversation's metadata and the pair's item).
        judged = [_judged(turns, speakers[i], header) for i, (_, turns) in enumerate(sides)]
        if onboarding:
            correct = record.get("correct_answer")
            if correct not in speakers:
                yield ImportProblem(line, "correct_answer", (
                    f"an onboarding pair names the better speaker, one of {', '.join(map(repr, speakers))}; "
                    f"got {correct!r}"))
                continue
            # its known answer is about speakers_to_eval: those stay judged whatever the import form says
            header.pairs.append({"line": line, "onboarding": True, "dialogues": [t for _, t in sides],
                                 "speakers": speakers, "correct": speakers.index(correct)})
            continue
        keys = []
        for i, (dialogue, turns) in enumerate(sides):
            given = dialogue.get("id", dialogue.get("conversation_id"))
            ids = record.get("dialogue_ids")
            if given in (None, "") and isinstance(ids, list) and len(ids) == 2:
                given = ids[i]
            digest = _digest(turns)
            key = str(given).strip() if isinstance(given, (str, int)) and not isinstance(given, bool) and str(given).strip() \
                else f"parlai-{digest}"
            first = kept.get(key)
            if first is not None:
                if first[0] != digest:
                    problems.append(ImportProblem(line, f"dialogue_dicts[{i}].id", (
                        f"dialogue {key!r} was read on line {first[1]} with other turns")))
                keys.append(key)
                continue
            kept[key] = (digest, line)
            keys.append(key)
            # ParlAI's other fields of the dialogue (evaluator_id_hashed, ...) and the pair's tags, kept as given
            extra = {k: v for k, v in dialogue.items() if k not in ("dialogue", "speakers", "id", "conversation_id")}
            metadata = {"system": system_key(speakers[i]), "judged_speaker": judged[i],
                        "speakers": [t for t in dialogue.get("speakers", []) if isinstance(t, str)]
                        if isinstance(dialogue.get("speakers"), list) else [], "source": "parlai-pairings",
                        **({"parlai": extra} if extra else {}),
                        **({"tags": record["tags"]} if isinstance(record.get("tags"), list) else {})}
            yield ParsedConversation(key, turns, [], line, metadata)
        if problems:
            yield from problems
            continue
        header.pairs.append({"line": line, "conversations": keys, "speakers": judged})


# --- self-chat logs -----------------------------------------------------------------------------------

def _file_system(header: ParsedHeader) -> str:
    """ParlAI names a self-chat log ``<model>.<task>.jsonl``: the model is the part before the first dot."""
    name = header.source.rsplit("/", 1)[-1]
    return system_key(name.split(".", 1)[0]) if name else "unknown"


def _context_texts(value: Any) -> list[str]:
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        return []
    return [str(c.get("text", "")) if isinstance(c, dict) else str(c) for c in value]


def parse_parlai_selfchat(stream: BinaryIO, header: ParsedHeader) -> Iterator[Record]:
    header.unit = "dialogue"
    number = 0
    for entry in _json_object_lines(stream, "each line must be a JSON object with a \"dialog\""):
        if isinstance(entry, ImportProblem):
            yield entry
            continue
        line, record = entry
        dialog = record.get("dialog")
        if not isinstance(dialog, list) or not dialog:
            yield ImportProblem(line, "dialog", "must be a non-empty list of exchanges (lists of turns)")
            continue
        flat, problem = [], None
        for i, exchange in enumerate(dialog):
            if isinstance(exchange, dict):  # a log written one turn per entry
                flat.append(exchange)
            elif isinstance(exchange, list):
                flat += exchange
            else:
                problem = ImportProblem(line, f"dialog[{i}]", "must be a list of turns {\"id\", \"text\"}")
                break
        if problem:
            yield problem
            continue
        turns = parlai_turns(flat, line, "dialog", header)
        if isinstance(turns, ImportProblem):
            yield turns
            continue
        number += 1
        model = record.get("model")
        system = system_key(model) if isinstance(model, str) and model.strip() else _file_system(header)
        first = turns[0]["speaker"]
        metadata = {"system": system, "judged_speaker": _judged(turns, first, header),
                    "context": _context_texts(record.get("context")), "source": "parlai-selfchat"}
        external = record.get("id")
        key = str(external) if isinstance(external, (str, int)) and str(external).strip() else f"{system}-{number}"
        yield ParsedConversation(key, turns, [], line, metadata)


# --- model-chat logs ------------------------------------------------------------------------------------

def _modelchat_records(stream: BinaryIO) -> Iterator[tuple[int, Any] | ImportProblem]:
    """One JSON object for the whole file (model_chat writes one per conversation, indented), else JSON lines.
    The file is read whole: the import's size limit bounds it."""
    data = stream.read()
    text = "\n".join(t for _, t in decoded_lines(io.BytesIO(data)))  # refuses non-UTF-8 by line
    try:
        whole = json_loads(text)
    except (json.JSONDecodeError, RecursionError):
        yield from _json_lines(io.BytesIO(data))
        return
    for entry in whole if isinstance(whole, list) else [whole]:
        problem = value_problem(entry)
        yield (1, entry) if problem is None else ImportProblem(1, *problem)


def parse_parlai_modelchat(stream: BinaryIO, header: ParsedHeader) -> Iterator[Record]:
    header.unit = "dialogue"
    number = 0
    for entry in _modelchat_records(stream):
        if isinstance(entry, ImportProblem):
            yield entry
            continue
        line, record = entry
        if not isinstance(record, dict):
            yield ImportProblem(line, "", "each record must be a JSON object with a \"dialog\"")
            continue
        turns = parlai_turns(record.get("dialog"), line, "dialog", header)
        if isinstance(turns, ImportProblem):
            yield turns
            continue
        number += 1
        raw = record["dialog"]
        bots = [_speaker_of(t) for t in raw if isinstance(t, dict) and t.get("agent_idx") == 1 and _speaker_of(t)]
        spoken = list(dict.fromkeys(t["speaker"] for t in turns))
        bot = bots[0] if bots else next((s for s in spoken if s.lower() not in ("worker", "human", "human_evaluator")),
                                        spoken[-1])
        described = record.get("task_description")
        nickname = described.get("model_nickname") if isinstance(described, dict) else None
        system = system_key(nickname) if isinstance(nickname, str) and nickname.strip() else system_key(bot)
        metadata = {"system": system, "judged_speaker": _judged(turns, bot, header), "source": "parlai-modelchat",
                    **{k: record[k] for k in CONTEXT_KEYS if record.get(k) not in (None, "", [])}}
        external = record.get("id") or record.get("conversation_id")
        stem = header.source.rsplit("/", 1)[-1].rsplit(".", 1)[0] or system
        key = str(external) if isinstance(external, (str, int)) and str(external).strip() else f"{stem}-{number}"
        yield ParsedConversation(key, turns, [], line, metadata)


def detect_parlai(text: str) -> str | None:
    """The ParlAI format of a JSON file's first bytes (``text``), or None."""
    if '"dialogue_dicts"' in text or '"speakers_to_eval"' in text:
        return "parlai-pairings"
    if '"dialog"' not in text:
        return None
    if any(key in text for key in MODELCHAT_KEYS):
        return "parlai-modelchat"
    squeezed = re.sub(r"\s", "", text.split("\n", 1)[0])
    return "parlai-selfchat" if '"dialog":[[' in squeezed or '"dialog":[{' in squeezed else None
