"""Checking a rater's questionnaire answers against the study's questionnaire (Study.questionnaire:
a list of {name, question, kind: yes_no | choice | text, required, choices})."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.utils.translation import gettext

from studies.text_checks import text_problem

YES, NO = "yes", "no"


def questionnaire_clean(spec: Sequence[Mapping[str, Any]], raw: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """(answers typed for storage, errors by question name). yes/no become True/False; empty
    optional answers are left out."""
    answers: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for question in spec:
        name, kind = question["name"], question.get("kind", "text")
        if hasattr(raw, "getlist") and len(raw.getlist(name)) > 1:  # one answer, posted once
            errors[name] = f"{name} was sent {len(raw.getlist(name))} times: it takes one answer"
            continue
        value = (raw.get(name) or "").strip()
        if not value:
            if question.get("required"):
                errors[name] = gettext("please answer this question")
            continue
        if kind == "yes_no":
            if value not in (YES, NO):
                errors[name] = gettext("answer yes or no")
                continue
            answers[name] = value == YES
        elif kind == "choice":
            if value not in question.get("choices", []):
                errors[name] = gettext("choose one of the options")
                continue
            answers[name] = value
        elif problem := text_problem(value):
            errors[name] = gettext("this answer %(problem)s") % {"problem": problem}
        else:
            answers[name] = value[:500]
    return answers, errors
