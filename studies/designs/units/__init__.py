"""The registry of units of judgement: ``Unit`` value -> its object (one line per unit)."""
from __future__ import annotations

from typing import Any

from studies.designs.units.base import StudyUnit
from studies.designs.units.dialogue import DIALOGUE
from studies.designs.units.response import RESPONSE

UNITS: dict[str, StudyUnit] = {
    RESPONSE.key: RESPONSE,
    DIALOGUE.key: DIALOGUE,
}


def unit_for(study_or_key: Any) -> StudyUnit:
    """The unit object of a study (or of a ``Unit`` value); KeyError for an unknown one."""
    key = study_or_key if isinstance(study_or_key, str) else study_or_key.unit
    return UNITS[key]


def unit_problem(key: Any) -> str | None:
    """Why ``key`` is not a unit, or None."""
    if key not in UNITS:
        return f"unknown unit {key!r}; choose one of {', '.join(UNITS)}"
    return None
