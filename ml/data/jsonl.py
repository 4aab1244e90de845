"""Reading JSON-lines data files (DailyDialog++, exported corpora, augmented sets) line by line."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def json_lines(path: str | Path) -> Iterator[tuple[int, Any]]:
    """(line number, decoded value) for every non-blank line; a line that is not JSON raises
    ValueError naming the file and the line."""
    with Path(path).open(encoding="utf-8") as stream:
        for number, line in enumerate(stream, start=1):
            if not line.strip():
                continue
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{Path(path).name} line {number}: not JSON ({error.msg})") from None
