"""Transitional: the old ``studies.designs`` functions, answered by the design objects, until the
callers ask ``design_for`` themselves (removed once they do)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from studies.designs.bws import ranks_problem
from studies.designs.common import number_text
from studies.designs.magnitude import bme_reference_value
from studies.designs.ratings import RatingsDesign
from studies.designs.registry import DESIGNS, design_for
from studies.designs.units import unit_for

DEFAULT_CONFIG = {key: dict(design.defaults) for key, design in DESIGNS.items()}
DESIGN_EXPLANATIONS = {key: design.explanation for key, design in DESIGNS.items()}


def design_config_clean(design: str, config: Mapping[str, Any] | None) -> dict[str, Any]:
    return design_for(design).config_clean(config)


def design_description(design: str, config: Mapping[str, Any] | None, anchors: tuple[float, float] | None = None,
                       *, unit: str = "response") -> str:
    chosen = DESIGNS.get(design)
    if chosen is None:
        return ""
    return chosen.describe({**chosen.defaults, **(config or {})}, anchors=anchors, unit=unit_for(unit))


def value_problem(design: str, config: Mapping[str, Any], value: Any, *, scale_min: float | None = None,
                  scale_max: float | None = None) -> str | None:
    return design_for(design).value_problem(config, value, scale_min=scale_min, scale_max=scale_max)


def typed_value_parse(design: str, config: Mapping[str, Any], raw: str, *, scale_min: float | None = None,
                      scale_max: float | None = None) -> tuple[float | None, str | None]:
    chosen = design_for(design)
    assert isinstance(chosen, RatingsDesign)
    return chosen.typed_value_parse(config, raw, scale_min=scale_min, scale_max=scale_max)


__all__ = ["DEFAULT_CONFIG", "DESIGN_EXPLANATIONS", "bme_reference_value", "design_config_clean", "design_description",
           "number_text", "ranks_problem", "typed_value_parse", "value_problem"]
