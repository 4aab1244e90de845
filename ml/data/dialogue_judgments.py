"""Speaker-prefixed dialogue text (FED's and DSTC9's ``"User: …\nSystem: …"``) as turns, for the
Django-free GPU benchmark (``benchmarks/self_eval_gpu.py``). Human-judgment *files* are read by the
import parsers (``studies.corpora.importing``, through ``metrics.benchmarking.judgments``), one reader for import and benchmark."""
from __future__ import annotations

import re

SPEAKER_LINE = re.compile(r"^\s*([A-Za-z][\w .'-]{0,30}?)\s*:\s?(.*)$")


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
