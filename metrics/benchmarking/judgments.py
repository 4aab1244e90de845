"""Public human-judgment files read for benchmarks and model cards, through the same parsers that import
them into studies (``studies.corpora.importing``): one reader per format, so a file ``import_dialogues`` accepts is
read the same way here, missing values included (DSTC9's "N/A", null, empty strings and lists: counted per
quality, left out of that quality only).

A file becomes a ``JudgmentSet``:

- ``grade`` / ``fed-turn``: turn level, one item per response (its context turns, the response, the mean
  human score per quality);
- ``ddpp``: DailyDialog++ responses with their level (1 random, 2 adversarial, 3 relevant) and context;
- ``fed-dialogue`` / ``dstc9``: dialogue level, one item per dialogue (a DSTC9 dialogue rated by several
  annotators, one record each, is one item: the mean of its ratings per quality).

Human qualities are named ``human:<quality>`` (``human:coherence`` is GRADE's human score, never the
``coherence`` metric). ``--format auto`` reads the format off the file's name and first bytes."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from studies.corpora.importing.files import DETECT_BYTES
from studies.corpora.importing.parsers import PARSERS, detect_format
from studies.corpora.importing.records import ImportProblem, ParsedConversation, ParsedHeader

FORMATS = ("auto", "grade", "fed", "ddpp", "dstc9")
HUMAN = "human:"
DDPP_LEVELS = {"ddpp-random": 1, "ddpp-adversarial": 2, "ddpp-relevant": 3}
SUFFIXES = (".json", ".jsonl", ".csv")


@dataclass
class JudgedItem:
    turns: list[str]  # turn level: the context; dialogue level: the whole dialogue
    response: str | None = None
    human: dict[str, float] = field(default_factory=dict)  # "human:<quality>" -> mean score
    speakers: list[str] | None = None
    group: str = ""  # the context (DailyDialog++) or dialogue id
    level: int = 0  # DailyDialog++ quality level
    system: str = ""


@dataclass
class JudgmentSet:
    name: str
    kind: str  # grade, fed-turn, ddpp, fed-dialogue, dstc9; study / study-dialogue (metrics.benchmarking.model_cards)
    items: list[JudgedItem]
    missing: dict[str, int] = field(default_factory=dict)  # quality -> missing values (records)
    dataset: str = ""  # GRADE's Dataset field (dailydialog, convai2, ...)

    @property
    def level(self) -> str:
        return "dialogue" if self.kind in ("fed-dialogue", "dstc9", "study-dialogue") else "turn"

    @property
    def qualities(self) -> list[str]:
        return sorted({q for item in self.items for q in item.human})


def expand(paths: Iterable[str | Path]) -> list[Path]:
    """Files as given; a folder gives its judgment files (.json, .jsonl, .csv), sorted by name."""
    out: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in SUFFIXES)
            if not found:
                raise ValueError(f"{path}: a folder without .json, .jsonl or .csv files")
            out += found
        elif path.is_file():
            out.append(path)
        else:
            raise ValueError(f"{path}: no such file or folder")
    return out


def file_kind(path: Path, wanted: str = "auto") -> str:
    if wanted != "auto":
        return wanted
    with path.open("rb") as stream:
        found = detect_format(path.name, stream.read(DETECT_BYTES))
    if found is None or found not in PARSERS:
        raise ValueError(f"cannot tell the format; give --format ({', '.join(FORMATS[1:])})")
    return found


def _mean(values: Sequence[float | None]) -> float | None:
    given = [v for v in values if v is not None]
    return float(np.mean(given)) if given else None


def _human(scores: dict[str, list[float | None]]) -> dict[str, float]:
    out = {}
    for quality, values in scores.items():
        value = _mean(values)
        if value is not None:
            out[HUMAN + quality] = value
    return out


def read_set(path: Path, wanted: str = "auto") -> JudgmentSet:
    """One file through its import parser; a bad record raises ValueError naming its line and field."""
    fmt = file_kind(path, wanted)
    header = ParsedHeader(source=path.name)
    with path.open("rb") as stream:
        parsed = list(PARSERS[fmt](stream, header))
    problems = [r for r in parsed if isinstance(r, ImportProblem)]
    if problems:
        raise ValueError("; ".join(str(p) for p in problems[:5]))
    records = [r for r in parsed if isinstance(r, ParsedConversation)]
    kind = fmt
    if fmt == "fed":
        kind = "fed-dialogue" if header.unit == "dialogue" else "fed-turn"
    items: list[JudgedItem] = []
    if kind in ("fed-dialogue", "dstc9"):
        merged: dict[str, tuple[ParsedConversation, dict[str, list[float | None]]]] = {}
        for record in records:  # DSTC9: one record per rating; the same dialogue is one item
            _, scores = merged.setdefault(record.external_id, (record, {}))
            for quality, values in record.human_scores.items():
                scores.setdefault(quality, []).extend(values)
        for external_id, (record, scores) in merged.items():
            items.append(JudgedItem([t["text"] for t in record.turns], None, _human(scores),
                                    [t.get("speaker", "") for t in record.turns], external_id,
                                    system=record.metadata.get("system", "")))
    else:
        for record in records:
            turns = [t["text"] for t in record.turns]
            for response in record.responses:
                items.append(JudgedItem(turns, response.text, _human(response.human_scores), group=record.external_id,
                                        level=DDPP_LEVELS.get(response.system, 0), system=response.system))
    dataset = next((r.metadata.get("dataset", "") for r in records if r.metadata.get("dataset")), "")
    return JudgmentSet(path.name, kind, items, dict(header.missing_scores), dataset)


def select(judgments: JudgmentSet, *, offset: int = 0, limit: int | None = None) -> JudgmentSet:
    """Skip the first ``offset`` records (DailyDialog++: contexts) and keep ``limit``."""
    if judgments.kind == "ddpp":
        groups = list(dict.fromkeys(item.group for item in judgments.items))[offset:]
        keep = set(groups[:limit] if limit else groups)
        items = [item for item in judgments.items if item.group in keep]
    else:
        items = judgments.items[offset:]
        items = items[:limit] if limit else items
    return JudgmentSet(judgments.name, judgments.kind, items, judgments.missing, judgments.dataset)
