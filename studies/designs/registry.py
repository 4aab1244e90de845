"""The registry of study designs: ``Design`` value -> its design object, one line per design.

A new design is a module with a ``StudyDesign`` subclass and its instance, and one line here."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import QuerySet

from studies.designs.acute import ACUTE
from studies.designs.base import StudyDesign
from studies.designs.bws import BWS_DESIGN
from studies.designs.bws_tuples import BWS_TUPLES
from studies.designs.likert import LIKERT
from studies.designs.magnitude import BME_DESIGN, RME_DESIGN
from studies.designs.pairwise import PAIRWISE

DESIGNS: dict[str, StudyDesign] = {
    LIKERT.key: LIKERT,
    RME_DESIGN.key: RME_DESIGN,
    BME_DESIGN.key: BME_DESIGN,
    BWS_DESIGN.key: BWS_DESIGN,
    BWS_TUPLES.key: BWS_TUPLES,
    PAIRWISE.key: PAIRWISE,
    ACUTE.key: ACUTE,
}


def design_for(study_or_key: Any) -> StudyDesign:
    """The design object of a study (or of a ``Design`` value); ValidationError naming ``design``
    for an unknown one."""
    key = study_or_key if isinstance(study_or_key, str) else study_or_key.design
    design = DESIGNS.get(key)
    if design is None:
        raise ValidationError({"design": f"unknown design {key!r}; choose one of {', '.join(DESIGNS)}"})
    return design


def designs_of(studies: QuerySet | Iterable[Any]) -> list[StudyDesign]:
    """The designs these studies (or ``Design`` values) use, in registry order (one query for a queryset)."""
    if isinstance(studies, QuerySet):
        keys = set(studies.order_by().values_list("design", flat=True).distinct())
    else:
        keys = {s if isinstance(s, str) else s.design for s in studies}
    return [design for key, design in DESIGNS.items() if key in keys]
