"""What the study builder pre-fills and explains, per design and unit of judgement.

- ``default_rows(design, unit)``: the questions a new study of that design and unit gets when the
  researcher names none, worded as ``services.study_create`` words them (the design's own, e.g.
  ACUTE-Eval's four questions of Li, Weston and Roller 2019, else the unit's, else the seed study's),
  so the builder shows the very questions raters will read.
- ``builder_defaults()``: every allowed ``"<design>:<unit>"`` pair's rows (the page's JavaScript swaps
  untouched rows for the chosen design's), and ``DESIGN_UNITS``: the unit a design switches to when the
  current one cannot carry it (ACUTE-Eval compares whole dialogues).
- ``design_explanations()``: one line per design, from each design's ``explanation``.
"""
from __future__ import annotations

from typing import Any

from studies.authoring.criteria_rows import rows_of_criteria
from studies.authoring.services import DEFAULT_CRITERIA
from studies.designs import DESIGNS, UNITS
from studies.models import Design

DEFAULT_DESIGN, DEFAULT_UNIT = "likert", "response"
# A design's unit when the chosen one cannot carry it: the first it accepts, in this order.
UNIT_ORDER = ("response", "dialogue", "chat")


def default_rows(design: str, unit: str) -> list[dict[str, str]]:
    """The builder rows of a new study of ``design`` and ``unit`` whose researcher names no criterion."""
    chosen, judged = DESIGNS[design], UNITS[unit]
    specs = chosen.default_criteria(judged) or list(DEFAULT_CRITERIA)
    known = {c["name"]: c for c in [*DEFAULT_CRITERIA, *specs]}
    filled = [{**spec, "question": spec.get("question") or judged.default_question(spec["name"])
               or known[spec["name"]].get("question", ""),
               "help_text": spec.get("help_text") or ("" if spec.get("question") else
                                                      known[spec["name"]].get("help_text", ""))}
              for spec in specs]
    return rows_of_criteria(filled)


def design_units() -> dict[str, list[str]]:
    """The units each design can judge (``unit_problem`` is None), in ``UNIT_ORDER``."""
    return {key: [u for u in UNIT_ORDER if u in UNITS and design.unit_problem(UNITS[u]) is None]
            for key, design in DESIGNS.items()}


def builder_defaults() -> dict[str, Any]:
    """For the builder's script: the rows of every allowed design and unit, and the units per design."""
    units = design_units()
    return {"rows": {f"{d}:{u}": [{k: row[k] for k in ("name", "question", "help")} for row in default_rows(d, u)]
                     for d, allowed in units.items() for u in allowed},
            "units": units}


def design_explanations() -> list[tuple[str, str, str]]:
    """(key, label, one line) for every design, in the registry's order."""
    return [(key, Design(key).label, design.explanation) for key, design in DESIGNS.items()]
