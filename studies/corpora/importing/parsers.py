"""Which parser reads a file: one per format name, and a guess of the format from the file's name and first bytes."""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import BinaryIO

from studies.corpora.importing.formats import Record, parse_csv, parse_jsonl
from studies.corpora.importing.judgment_formats import parse_ddpp, parse_dstc9, parse_fed, parse_grade
from studies.corpora.importing.label_studio_format import parse_label_studio
from studies.corpora.importing.parlai_formats import (
    PARLAI_FORMATS,
    detect_parlai,
    parse_parlai_modelchat,
    parse_parlai_pairings,
    parse_parlai_selfchat,
)
from studies.corpora.importing.potato_format import parse_potato
from studies.corpora.importing.records import (
    ParsedHeader,
)

PARSERS: dict[str, Callable[[BinaryIO, ParsedHeader], Iterator[Record]]] = {
    "jsonl": parse_jsonl, "csv": parse_csv, "ddpp": parse_ddpp, "grade": parse_grade, "fed": parse_fed,
    "dstc9": parse_dstc9, "parlai-pairings": parse_parlai_pairings, "parlai-selfchat": parse_parlai_selfchat,
    "parlai-modelchat": parse_parlai_modelchat, "label-studio": parse_label_studio, "potato": parse_potato,
}
# Each format in words, for the import page and the command ("Detected format: ...").
FORMAT_NAMES = {
    "jsonl": "Concord JSON lines", "csv": "Concord CSV", "ddpp": "DailyDialog++", "grade": "GRADE",
    "fed": "FED / DSTC10", "dstc9": "DSTC9 interactive evaluation", **PARLAI_FORMATS,
    "label-studio": "Label Studio task export", "potato": "Potato data file",
}
# A DSTC9 record: a quality key with a bare number at the top level (FED keeps them in "annotations").
DSTC9_QUALITY = re.compile(r'"(coherent|consistent|diverse|likeable|understanding|flexible|informative|inquisitive|'
                           r'error recovery|topic depth|human \(overall\))"\s*:\s*(-?\d|null)', re.IGNORECASE)
# A Label Studio task: its "data" object (FED, GRADE and DSTC9 records have none); checked before FED, whose
# "annotations" key a Label Studio task also has.
LABEL_STUDIO_TASK = re.compile(r'"data"\s*:\s*\{')
# A Potato instance: a "conversation" list, or a "text" list (a dialogue or the texts to compare).
POTATO_INSTANCE = re.compile(r'"(conversation|text)"\s*:\s*\[')


def detect_format(name: str, head: bytes) -> str | None:
    """Guess the format from the file name and its first bytes; None when it cannot tell."""
    lowered = name.lower()
    if lowered.endswith(".csv"):
        return "csv"
    text = head.decode("utf-8", errors="ignore").lstrip("\ufeff \t\r\n")
    if text.startswith("["):
        if '"HumanScores"' in text or '"DialogModel"' in text:
            return "grade"
        if LABEL_STUDIO_TASK.search(text):
            return "label-studio"
        if '"annotations"' in text or '"dialog"' in text:
            return "fed"
        if DSTC9_QUALITY.search(text) or ('"context"' in text and '"response"' not in text):
            return "dstc9"
        return None
    if text.startswith("{"):
        if parlai := detect_parlai(text):
            return parlai
        first = text.split("\n", 1)[0]
        if '"positive_responses"' in first:
            return "ddpp"
        if POTATO_INSTANCE.search(first) and '"turns"' not in first and '"responses"' not in first:
            return "potato"
        return "jsonl"
    return None
