"""What each study design accepts: its configuration and the values a rating may take.

- Likert: ``points`` (P, default 6 as in Santhanam & Shaikh 2019) and optional ``labels`` (P strings);
  a value is an integer 1..P.
- RME: ``reference_value`` (default 100, shown with the reference response) and the range
  ``min``..``max`` (default 0..999); a value is an integer in range.
- BME: the same range; the reference value comes per item from an automatic metric.
- BWS: the responses of an item are ranked 1 (best) .. m (worst), no ties; ``tuple_size`` is m.
- Pairwise (A/B, as ACUTE-Eval and arena-style studies): an item shows two responses; the rater picks
  the better one per criterion. ``allow_tie`` (default true), ``reason`` off|optional|required with
  ``reason_max_length`` characters, ``pairs_per_conversation`` (0 = every pair of systems) and
  ``schedule_seed`` (studies.pairwise_services).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from django.core.exceptions import ValidationError

from studies.models import Design

DEFAULT_CONFIG: dict[str, dict[str, Any]] = {
    Design.LIKERT: {"points": 6, "labels": []},
    Design.RME: {"reference_value": 100, "min": 0, "max": 999},
    Design.BME: {"min": 0, "max": 999},
    Design.BWS: {"tuple_size": 4},
    Design.PAIRWISE: {"allow_tie": True, "reason": "optional", "reason_max_length": 300,
                      "pairs_per_conversation": 0, "schedule_seed": 0},
}
REASON_MODES = ("off", "optional", "required")

DESIGN_EXPLANATIONS: dict[str, str] = {
    Design.LIKERT: "Raters pick one point on a P-point scale (default 6) for each response and criterion.",
    Design.RME: (
        "Magnitude estimation with a fixed anchor: the human reference response is shown with the "
        "value 100 and raters give each response a number from 0 to 999 relative to it."
    ),
    Design.BME: (
        "Magnitude estimation with a metric anchor: like RME, but the reference value shown is an "
        "automatic metric's score of the reference response, so it differs per item."
    ),
    Design.BWS: (
        "Best-worst scaling: raters rank all responses of an item from best to worst, without ties."
    ),
    Design.PAIRWISE: (
        "Pairwise comparison: raters see two responses to the same conversation and pick the better one "
        "for each question (or say they are equally good, where ties are allowed)."
    ),
}


def _int_field(config: Mapping[str, Any], key: str, errors: dict[str, str], *, low: int, high: int) -> int | None:
    value = config.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        errors[f"design_config.{key}"] = f"must be a whole number from {low} to {high}, got {value!r}"
        return None
    if not low <= value <= high:
        errors[f"design_config.{key}"] = f"must be from {low} to {high}, got {value}"
        return None
    return value


def design_config_clean(design: str, config: Mapping[str, Any] | None) -> dict[str, Any]:
    """Return the design's configuration with defaults filled in, or raise ValidationError naming
    each bad field (``design_config.<key>``)."""
    if design not in DEFAULT_CONFIG:
        raise ValidationError({"design": f"unknown design {design!r}; choose one of {', '.join(DEFAULT_CONFIG)}"})
    if config is not None and not isinstance(config, Mapping):
        raise ValidationError({"design_config": "must be an object"})
    merged = {**DEFAULT_CONFIG[design], **(config or {})}
    unknown = sorted(set(merged) - set(DEFAULT_CONFIG[design]))
    errors: dict[str, str] = {}
    if unknown:
        errors["design_config"] = f"unknown setting(s) for {design}: {', '.join(unknown)}"
    if design == Design.LIKERT:
        points = _int_field(merged, "points", errors, low=2, high=11)
        labels = merged.get("labels")
        if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
            errors["design_config.labels"] = "must be a list of strings"
        elif labels and points is not None and len(labels) != points:
            errors["design_config.labels"] = f"needs one label per point ({points}), got {len(labels)}"
    elif design in (Design.RME, Design.BME):
        low = _int_field(merged, "min", errors, low=0, high=10**6)
        high = _int_field(merged, "max", errors, low=1, high=10**6)
        if low is not None and high is not None and low >= high:
            errors["design_config.max"] = f"must be greater than min ({low})"
        if design == Design.RME:
            ref = merged.get("reference_value")
            if isinstance(ref, bool) or not isinstance(ref, (int, float)) or ref <= 0:
                errors["design_config.reference_value"] = f"must be a positive number, got {ref!r}"
    elif design == Design.BWS:
        _int_field(merged, "tuple_size", errors, low=2, high=10)
    elif design == Design.PAIRWISE:
        if not isinstance(merged.get("allow_tie"), bool):
            errors["design_config.allow_tie"] = f"must be true or false, got {merged.get('allow_tie')!r}"
        if merged.get("reason") not in REASON_MODES:
            errors["design_config.reason"] = f"must be one of {', '.join(REASON_MODES)}, got {merged.get('reason')!r}"
        _int_field(merged, "reason_max_length", errors, low=1, high=2000)
        _int_field(merged, "pairs_per_conversation", errors, low=0, high=45)
        _int_field(merged, "schedule_seed", errors, low=0, high=2**31 - 1)
    if errors:
        raise ValidationError(errors)
    return merged


def value_range(design: str, config: Mapping[str, Any], *, scale_min: float | None = None,
                scale_max: float | None = None) -> tuple[float, float] | None:
    """The inclusive range of a rating value under a design (None for BWS, which stores ranks, and for
    pairwise, which stores choices)."""
    if scale_min is not None and scale_max is not None:
        return scale_min, scale_max
    if design == Design.LIKERT:
        return 1, config["points"]
    if design in (Design.RME, Design.BME):
        return config["min"], config["max"]
    return None


def value_problem(design: str, config: Mapping[str, Any], value: Any, *, scale_min: float | None = None,
                  scale_max: float | None = None) -> str | None:
    """Why ``value`` is not an acceptable rating value under the design, or None if it is."""
    bounds = value_range(design, config, scale_min=scale_min, scale_max=scale_max)
    if bounds is None:
        return "this design takes ranks, not values"
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or (isinstance(value, float) and not math.isfinite(value)):
        return f"must be a finite number, got {value!r}"
    low, high = bounds
    whole_numbers = scale_min is None and design in (Design.LIKERT, Design.RME, Design.BME)
    if whole_numbers and value != int(value):
        return f"must be a whole number from {low:g} to {high:g}, got {value}"
    if not low <= value <= high:
        return f"must be from {low:g} to {high:g}, got {value:g}"
    return None


def ranks_problem(ranks: Sequence[Any], size: int) -> str | None:
    """Why ``ranks`` is not a complete ranking 1..size without ties, or None if it is."""
    if len(ranks) != size:
        return f"rank all {size} responses (got {len(ranks)})"
    if any(isinstance(r, bool) or not isinstance(r, int) for r in ranks):
        return "ranks must be whole numbers"
    if sorted(ranks) != list(range(1, size + 1)):
        return f"ranks must be 1..{size}, each used once (no ties)"
    return None
