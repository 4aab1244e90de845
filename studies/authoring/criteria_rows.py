"""The study builder's criteria rows: one row of structured fields per criterion, as the study form
posts them (``c-<i>-<field>``), and back.

A row's fields: ``name`` (a short name; blank: made from the question), ``kind`` (``scale``,
``categorical``, ``multilabel``, ``free_text``: ``studies.designs.kinds``), ``question``, ``help``,
``labels`` (one label per line, for the label and per-turn kinds), ``mode`` / ``definitions`` ("label: what
it means" per line) / ``speaker`` (per turn), ``none_option`` (a ticked box: multi-label's
"None of these"), ``min_length`` / ``max_length`` (free text), ``rationale`` ("", "optional",
"required"). Rows are read in the order of their numbers ``i`` (the builder renumbers them after a
move); a row with nothing typed is skipped. Every problem names its row (1-based, as the page numbers
them) and field, and the form then saves nothing. The API keeps taking criteria as it always has.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from django.utils.text import slugify

from studies.designs.kinds import DEFAULT_KIND, KINDS, criterion_kind_clean

FIELDS = ("name", "kind", "question", "help", "labels", "none_option", "min_length", "max_length", "rationale",
          "mode", "definitions", "speaker")
ROW_FIELD = re.compile(r"^c-(\d{1,3})-(?:" + "|".join(FIELDS) + r")$")
TEXT_FIELDS = ("name", "question", "help", "labels", "min_length", "max_length", "definitions", "speaker")
MAX_ROWS = 50
FIELD_LABELS = {"name": "short name", "kind": "answered by", "question": "question", "help": "help text",
                "labels": "options", "none_option": "“None of these”", "min_length": "shortest answer",
                "max_length": "longest answer", "rationale": "ask why", "mode": "each turn gets",
                "definitions": "what the labels mean", "speaker": "judged speaker"}


def rows_posted(data: Mapping[str, Any]) -> bool:
    """Whether the data carries builder rows (else a form may fall back to the API's text)."""
    return any(ROW_FIELD.match(key) for key in data)


def _value(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key, "")
    return value.strip() if isinstance(value, str) else ""


def rows_read(data: Mapping[str, Any]) -> list[dict[str, str]]:
    """The posted rows as the page shows them (every field a text; ``none_option`` "on" or ""), in
    row order, blank rows included (a refused form shows them again as typed)."""
    numbers = sorted({int(m.group(1)) for key in data if (m := ROW_FIELD.match(key))})
    return [{field: _value(data, f"c-{n}-{field}") for field in FIELDS} for n in numbers]


def _blank(row: Mapping[str, str]) -> bool:
    return not any(row.get(field) for field in ("name", "question", "help", "labels"))


def _problem_text(number: int, row: Mapping[str, str], field: str, message: str) -> str:
    who = f"row {number}" + (f" ({row['name']})" if row.get("name") else "")
    return f"{who}, {FIELD_LABELS.get(field, field)}: {message}"


def _lengths(row: Mapping[str, str], number: int, problems: list[str]) -> dict[str, int]:
    lengths = {}
    for field in ("min_length", "max_length"):
        given = row.get(field, "")
        if not given:
            continue
        if not given.isdigit():
            problems.append(_problem_text(number, row, field, f"a whole number of characters, not “{given[:20]}”"))
        else:
            lengths[field] = int(given)
    return lengths


def rows_parse(rows: Sequence[Mapping[str, str]]) -> tuple[list[dict[str, Any]], list[str]]:
    """Criterion specs (as ``studies.authoring.services.study_create`` takes them) from the rows, and
    the problems, each naming its row and field. Any problem: no specs (the form saves nothing)."""
    specs, problems = rows_specs(rows)
    return (specs if not problems else []), problems


def rows_specs(rows: Sequence[Mapping[str, str]]) -> tuple[list[dict[str, Any]], list[str]]:
    """The specs of the rows without problems (the preview shows them while others are being typed)
    and every problem, each naming its row and field."""
    problems: list[str] = []
    specs: list[dict[str, Any]] = []
    numbers: list[int] = []  # each spec's row
    filled = [(number, row) for number, row in enumerate(rows, start=1) if not _blank(row)]
    if len(filled) > MAX_ROWS:
        return [], [f"at most {MAX_ROWS} criteria (got {len(filled)})"]
    for number, row in filled:
        name = slugify(row.get("name") or row.get("question") or "")[:60].strip("-")
        if not name:
            problems.append(_problem_text(number, row, "name", "give a short name (letters, digits, hyphens)"))
            continue
        kind = row.get("kind") or DEFAULT_KIND
        if kind not in KINDS:
            problems.append(_problem_text(number, row, "kind", f"choose one of {', '.join(KINDS)}"))
            continue
        spec: dict[str, Any] = {"name": name, "question": row.get("question", ""), "help_text": row.get("help", ""),
                                "kind": kind, "rationale": row.get("rationale", "")}
        if kind in ("categorical", "multilabel", "spans"):  # span labels are written as the label kinds' are
            spec["options"] = {"labels": [line.strip() for line in row.get("labels", "").splitlines() if line.strip()]}
            if kind == "multilabel":
                spec["options"]["none_option"] = row.get("none_option") in ("on", "1", "true", "yes")
        elif kind == "free_text":
            spec["options"] = _lengths(row, number, problems)
        elif kind == "per_turn":  # labels per turn, "label: definition" lines, whose turns (kinds.per_turn)
            spec["options"] = {"labels": [line.strip() for line in row.get("labels", "").splitlines() if line.strip()],
                               "mode": row.get("mode") or "binary", "definitions": row.get("definitions", ""),
                               "speaker": row.get("speaker", "")}
        _, found = criterion_kind_clean(spec, takes_kinds=True, prefix="row")
        for key, message in found.items():
            problems.append(_problem_text(number, row, key.rsplit(".", 1)[-1], message))
        if not found:
            specs.append(spec)
            numbers.append(number)
    names = [spec["name"] for spec in specs]
    for twice in sorted({n for n in names if names.count(n) > 1}):
        rows_with = [number for number, spec in zip(numbers, specs, strict=True) if spec["name"] == twice]
        problems.append(f"rows {', '.join(map(str, rows_with))}, short name: each criterion once ({twice} is given "
                        f"{len(rows_with)} times)")
    if not specs and not problems:
        problems.append("add at least one criterion (a question raters answer)")
    return specs, problems


def rows_of_criteria(criteria: Sequence[Any]) -> list[dict[str, str]]:
    """The rows the builder shows for saved criteria (``Criterion`` rows or specs)."""
    rows = []
    for c in criteria:
        get = (lambda key, c=c: c.get(key)) if isinstance(c, Mapping) else (lambda key, c=c: getattr(c, key, None))
        if isinstance(c, str):
            rows.append({**dict.fromkeys(FIELDS, ""), "name": c, "kind": DEFAULT_KIND, "none_option": "on"})
            continue
        options = get("options") or {}
        rows.append({
            "name": get("name") or "", "kind": get("kind") or DEFAULT_KIND, "question": get("question") or "",
            "help": get("help_text") or "", "labels": "\n".join(options.get("labels") or []),
            "none_option": "on" if options.get("none_option", True) else "",
            "min_length": str(options.get("min_length", "")), "max_length": str(options.get("max_length", "")),
            "rationale": get("rationale") or "", "mode": options.get("mode", ""),
            "definitions": "\n".join(f"{label}: {text}" for label, text in (options.get("definitions") or {}).items()),
            "speaker": options.get("speaker", ""),
        })
    return rows


def kind_choices() -> list[tuple[str, str]]:
    """(key, what the researcher reads) for the builder's "answered by" menu."""
    return [(key, kind.label) for key, kind in KINDS.items()]
