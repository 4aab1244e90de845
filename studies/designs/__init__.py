"""Study designs, units of judgement and judgement kinds, each one module behind one protocol
(``base.StudyDesign``, ``units.base.StudyUnit``, ``kinds.base.JudgementKind``), found through their
registries: ``design_for(study)``, ``unit_for(study)``, ``kind_for(criterion)``.
"""
from __future__ import annotations

from studies.designs.registry import DESIGNS, design_for, designs_of
from studies.designs.units import UNITS, unit_for

__all__ = ["DESIGNS", "UNITS", "design_for", "designs_of", "unit_for"]
from studies.designs.legacy import (  # noqa: E402  transitional, until the callers ask design_for
    DEFAULT_CONFIG,
    DESIGN_EXPLANATIONS,
    bme_reference_value,
    design_config_clean,
    design_description,
    number_text,
    ranks_problem,
    typed_value_parse,
    value_problem,
)

__all__ += ["DEFAULT_CONFIG", "DESIGN_EXPLANATIONS", "bme_reference_value", "design_config_clean",
            "design_description", "number_text", "ranks_problem", "typed_value_parse", "value_problem"]
