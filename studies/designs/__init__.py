"""Study designs, units of judgement and judgement kinds, each one module behind one protocol
(``base.StudyDesign``, ``units.base.StudyUnit``, ``kinds.base.JudgementKind``), found through their
registries: ``design_for(study)``, ``unit_for(study)``, ``kind_for(criterion)``.
"""
from __future__ import annotations

from studies.designs.kinds import KINDS, NUMERIC_KINDS, kind_for
from studies.designs.registry import DESIGNS, design_for, designs_of
from studies.designs.units import UNITS, unit_for

__all__ = ["DESIGNS", "KINDS", "NUMERIC_KINDS", "UNITS", "design_for", "designs_of", "kind_for", "unit_for"]
