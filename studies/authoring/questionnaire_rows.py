"""The study form's questionnaire as builder rows: one row of fields per question
(``q-<i>-name``, ``kind``: yes_no / choice / text, ``required``: a ticked box, ``question``, ``choices``
one per line), instead of ``name | kind | required | question | choices`` lines. ``MARKER`` says the rows
were posted, so removing every row means "no questionnaire"; a post without it may still send the text.
Problems name the row and the field."""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from django.utils.text import slugify

MARKER = "questionnaire_rows"
FIELDS = ("name", "kind", "required", "question", "choices")
KINDS = (("yes_no", "Yes or no"), ("choice", "One of several choices"), ("text", "A short text"))
ROW_FIELD = re.compile(r"^q-(\d{1,3})-(?:" + "|".join(FIELDS) + r")$")


def rows_posted(data: Mapping[str, Any]) -> bool:
    return MARKER in data


def rows_read(data: Mapping[str, Any]) -> list[dict[str, str]]:
    """The posted rows as the page shows them, in row order."""
    numbers = sorted({int(m.group(1)) for key in data if (m := ROW_FIELD.match(key))})
    rows = []
    for n in numbers:
        row = {}
        for field in FIELDS:
            value = data.get(f"q-{n}-{field}", "")
            row[field] = value.strip() if isinstance(value, str) else ""
        rows.append(row)
    return rows


def rows_parse(rows: Sequence[Mapping[str, str]]) -> tuple[list[dict[str, Any]], list[str]]:
    """The questionnaire (``Study.questionnaire``) from the rows and the problems, each naming its row
    and field; rows with nothing typed are skipped."""
    questions, problems = [], []
    kinds = [key for key, _ in KINDS]
    for number, row in enumerate(rows, start=1):
        if not (row.get("name") or row.get("question")):
            continue
        name = slugify(row.get("name") or row.get("question"))[:60].replace("-", "_").strip("_")
        who = f"question {number}" + (f" ({row['name']})" if row.get("name") else "")
        if not name:
            problems.append(f"{who}, short name: give a short name (letters, digits, underscores)")
            continue
        if not row.get("question"):
            problems.append(f"{who}, question: write the question raters read")
            continue
        kind = row.get("kind") or "text"
        if kind not in kinds:
            problems.append(f"{who}, answered by: choose one of {', '.join(kinds)}")
            continue
        entry: dict[str, Any] = {"name": name, "kind": kind, "required": row.get("required") in ("on", "1", "yes"),
                                 "question": row["question"]}
        if kind == "choice":
            entry["choices"] = [c.strip() for c in row.get("choices", "").splitlines() if c.strip()]
            if len(entry["choices"]) < 2:
                problems.append(f"{who}, choices: give at least two, one per line")
                continue
        questions.append(entry)
    names = [q["name"] for q in questions]
    problems += [f"short name {n}: each question once" for n in sorted({n for n in names if names.count(n) > 1})]
    return (questions if not problems else []), problems


def rows_of_questions(questions: Sequence[Mapping[str, Any]] | None) -> list[dict[str, str]]:
    return [{"name": q.get("name", ""), "kind": q.get("kind", "text"), "required": "on" if q.get("required") else "",
             "question": q.get("question", ""), "choices": "\n".join(q.get("choices", []))} for q in questions or []]
