"""What each study design accepts: its configuration, the values a rating may take, and how the
design is described to raters.

- Likert: ``points`` (P, default 6 as in Santhanam & Shaikh 2019) and optional ``labels`` (P strings);
  a value is an integer 1..P.
- RME: ``reference_value`` (default 100, shown with the reference response) and the range
  ``min``..``max`` (default 0..999); a value is any number in range, decimals included (magnitude
  estimation is a ratio judgement: "a bit better than 12" is 12.5, Bard, Robertson & Sorace 1996).
- BME: the same range; the reference value comes per item from an automatic metric, rescaled onto
  ``anchor_min``..``anchor_max`` (default 50..150, centred on RME's 100; see ``bme_reference_value``).
- BWS: the responses of an item are ranked 1 (best) .. m (worst), no ties; ``tuple_size`` is m.
- BWS tuples (many items, Kiritchenko & Mohammad 2016): single responses shown in tuples of
  ``tuple_size`` (3-5, default 4); about ``factor``·N tuples (default 2), each response in
  factor·tuple_size of them; ``tries`` shuffles kept by the evenness of pair co-occurrence; ``seed``
  makes the tuples reproducible. The rater picks the best and the worst member per criterion.

A new design adds one entry to ``DEFAULT_CONFIG``, ``DESIGN_EXPLANATIONS`` and ``RATER_DESCRIPTIONS``.
- Pairwise (A/B, as ACUTE-Eval and arena-style studies): an item shows two responses; the rater picks
  the better one per criterion. ``allow_tie`` (default true), ``reason`` off|optional|required with
  ``reason_max_length`` characters, ``pairs_per_conversation`` (0 = every pair of systems) and
  ``schedule_seed`` (studies.pairwise_services).
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from django.core.exceptions import ValidationError

from studies.models import Design

DEFAULT_CONFIG: dict[str, dict[str, Any]] = {
    Design.LIKERT: {"points": 6, "labels": []},
    Design.RME: {"reference_value": 100, "min": 0, "max": 999},
    Design.BME: {"min": 0, "max": 999, "anchor_min": 50, "anchor_max": 150},
    Design.BWS: {"tuple_size": 4},
    Design.BWS_TUPLES: {"tuple_size": 4, "factor": 2, "tries": 20, "seed": 0},
    Design.PAIRWISE: {"allow_tie": True, "reason": "optional", "reason_max_length": 300,
                      "pairs_per_conversation": 0, "schedule_seed": 0},
}
MAGNITUDE = (Design.RME, Design.BME)
REASON_MODES = ("off", "optional", "required")

# For researchers choosing a design (the study form); raters get ``design_description`` instead.
DESIGN_EXPLANATIONS: dict[str, str] = {
    Design.LIKERT: "Raters pick one point on a P-point scale (default 6) for each response and criterion.",
    Design.RME: (
        "Magnitude estimation with a fixed anchor: the human reference response is shown with a value "
        "(default 100) and raters give each response a number in a range (default 0 to 999) relative to it."
    ),
    Design.BME: (
        "Magnitude estimation with a metric anchor: like RME, but the reference value shown is an "
        "automatic metric's score of the reference response (rescaled, default 50 to 150), so it differs per item."
    ),
    Design.BWS: (
        "Best-worst scaling: raters rank all responses of an item from best to worst, without ties."
    ),
    Design.BWS_TUPLES: (
        "Best-worst scaling with tuples: each screen shows a few responses (usually 4), each with its own "
        "conversation; raters pick the best and the worst one for each question."
    ),
    Design.PAIRWISE: (
        "Pairwise comparison: raters see two responses to the same conversation and pick the better one "
        "for each question (or say they are equally good, where ties are allowed)."
    ),
}


def number_text(x: float) -> str:
    """A number as raters read it (and as rater.js writes it with String()): 100, 12.5, 1000000."""
    return str(int(x)) if float(x).is_integer() else f"{x:.15g}"


def _likert_description(config: Mapping[str, Any], anchors: tuple[float, float] | None) -> str:
    points, labels = config["points"], config.get("labels") or []
    ends = (f"from 1 ({labels[0]}) to {points} ({labels[-1]})" if labels
            else f"from 1 (lowest) to {points} (highest)")
    return f"For each response you pick one point on a {points}-point scale, {ends}."


def _magnitude_rule(config: Mapping[str, Any]) -> str:
    return (f"Give every response a number from {number_text(config['min'])} to {number_text(config['max'])} "
            "that says how good it is compared with the reference; decimals such as 12.5 are fine.")


def _rme_description(config: Mapping[str, Any], anchors: tuple[float, float] | None) -> str:
    ref = config["reference_value"]
    return (f"Each conversation comes with a reference response worth {number_text(ref)}. {_magnitude_rule(config)} "
            f"A response twice as good as the reference gets {number_text(2 * ref)}; "
            f"one half as good gets {number_text(ref / 2)}.")


def _bme_description(config: Mapping[str, Any], anchors: tuple[float, float] | None) -> str:
    low, high = anchors or (config["anchor_min"], config["anchor_max"])
    worth = (f"worth {number_text(low)}" if low == high else
             f"with its own value (from {number_text(low)} to {number_text(high)}; it changes from one "
             "conversation to the next)")
    return (f"Each conversation comes with a reference response {worth}. {_magnitude_rule(config)} "
            "A response twice as good as the reference gets twice its value; one half as good gets half.")


def _bws_description(config: Mapping[str, Any], anchors: tuple[float, float] | None) -> str:
    return (f"For each conversation you put its {config['tuple_size']} responses in order from best to worst, "
            "without ties.")


def _bws_tuples_description(config: Mapping[str, Any], anchors: tuple[float, float] | None) -> str:
    return (f"Each screen shows a set of {config['tuple_size']} responses, each with its own conversation. "
            "For each question you pick the best and the worst response of the set.")


# design -> f(config, (lowest, highest) reference value actually shown or None) -> the start page's text
RATER_DESCRIPTIONS: dict[str, Callable[[Mapping[str, Any], tuple[float, float] | None], str]] = {
    Design.LIKERT: _likert_description,
    Design.RME: _rme_description,
    Design.BME: _bme_description,
    Design.BWS: _bws_description,
    Design.BWS_TUPLES: _bws_tuples_description,
}


def _dialogue_likert_description(config: Mapping[str, Any], anchors: tuple[float, float] | None) -> str:
    return _likert_description(config, anchors).replace("For each response", "For each dialogue", 1)


def _dialogue_rme_description(config: Mapping[str, Any], anchors: tuple[float, float] | None) -> str:
    ref = config["reference_value"]
    return (f"Each screen comes with a reference dialogue worth {number_text(ref)}. Give every dialogue a number from "
            f"{number_text(config['min'])} to {number_text(config['max'])} that says how good it is compared with the "
            f"reference; decimals such as 12.5 are fine. A dialogue twice as good as the reference gets "
            f"{number_text(2 * ref)}; one half as good gets {number_text(ref / 2)}.")


def _dialogue_bws_description(config: Mapping[str, Any], anchors: tuple[float, float] | None) -> str:
    return (f"Each screen shows {config['tuple_size']} whole dialogues: you put its {config['tuple_size']} dialogues "
            "in order from best to worst, without ties.")


# A dialogue-unit study (Study.unit) judges whole dialogues: the same tasks, said of dialogues.
DIALOGUE_RATER_DESCRIPTIONS: dict[str, Callable[[Mapping[str, Any], tuple[float, float] | None], str]] = {
    Design.LIKERT: _dialogue_likert_description,
    Design.RME: _dialogue_rme_description,
    Design.BWS: _dialogue_bws_description,
}


def design_description(design: str, config: Mapping[str, Any] | None,
                       anchors: tuple[float, float] | None = None, *, unit: str = "response") -> str:
    """What a rater will do, in the study's own terms (its points, labels, reference value, range,
    tuple size; dialogues instead of responses when ``unit`` is "dialogue"). ``anchors``: the lowest
    and highest reference value its items show (BME), when known. A design without an entry falls
    back to its researcher-facing explanation."""
    describe = (DIALOGUE_RATER_DESCRIPTIONS if unit == "dialogue" else RATER_DESCRIPTIONS).get(design)
    if describe is None:
        return DESIGN_EXPLANATIONS.get(design, "")
    return describe({**DEFAULT_CONFIG.get(design, {}), **(config or {})}, anchors)


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
    elif design in MAGNITUDE:
        low = _int_field(merged, "min", errors, low=0, high=10**6)
        high = _int_field(merged, "max", errors, low=1, high=10**6)
        if low is not None and high is not None and low >= high:
            errors["design_config.max"] = f"must be greater than min ({low})"
            low = high = None
        # The anchor must lie inside the raters' range, or "twice as good" and "half as good" make no sense.
        inside = f"inside the range min..max ({low} to {high})" if low is not None and high is not None else ""
        if design == Design.RME:
            ref = merged.get("reference_value")
            if isinstance(ref, bool) or not isinstance(ref, (int, float)) or not math.isfinite(ref) or ref <= 0:
                errors["design_config.reference_value"] = f"must be a positive number, got {ref!r}"
            elif inside and not low < ref < high:
                errors["design_config.reference_value"] = f"must be {inside}, got {number_text(ref)}"
        else:
            a_low = _int_field(merged, "anchor_min", errors, low=1, high=10**6)
            a_high = _int_field(merged, "anchor_max", errors, low=1, high=10**6)
            if a_low is not None and a_high is not None:
                if a_low > a_high:
                    errors["design_config.anchor_max"] = f"must be at least anchor_min ({a_low})"
                elif inside and not (low < a_low and a_high < high):
                    errors["design_config.anchor_min"] = (f"anchor_min..anchor_max ({a_low} to {a_high}) must lie "
                                                          f"{inside}")
    elif design == Design.BWS:
        _int_field(merged, "tuple_size", errors, low=2, high=10)
    elif design == Design.BWS_TUPLES:
        _int_field(merged, "tuple_size", errors, low=3, high=5)
        _int_field(merged, "factor", errors, low=1, high=10)
        _int_field(merged, "tries", errors, low=1, high=200)
        _int_field(merged, "seed", errors, low=0, high=2**31 - 1)
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
    if design in MAGNITUDE:
        return config["min"], config["max"]
    return None


def whole_numbers_only(design: str, *, scale_min: float | None = None) -> bool:
    """Likert points are whole numbers; magnitude estimates and imported scales may be decimals."""
    return scale_min is None and design == Design.LIKERT


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
    if whole_numbers_only(design, scale_min=scale_min) and value != int(value):
        return f"must be a whole number from {number_text(low)} to {number_text(high)}, got {number_text(value)}"
    if not low <= value <= high:
        return f"must be from {number_text(low)} to {number_text(high)}, got {number_text(value)}"
    return None


# What a rater may type as a number (rater.js checks the same grammar with the same messages):
# digits with an optional decimal point, nothing else (no exponent, no thousands separator).
_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)")
_DECIMAL_COMMA = re.compile(r"[+-]?\d*,\d+")
_THOUSANDS_COMMA = re.compile(r"[+-]?\d{1,3},\d{3}")  # 1,000: a thousands separator or a decimal comma
_INTEGER = re.compile(r"[+-]?\d+")


def typed_value_parse(design: str, config: Mapping[str, Any], raw: str, *, scale_min: float | None = None,
                      scale_max: float | None = None) -> tuple[float | None, str | None]:
    """A rater's typed (or picked) value as a number, or the rater-facing reason it is not acceptable.

    One message per kind of problem, so that the message says what is wrong: empty, a decimal comma,
    not a number, a decimal where whole points are asked for, negative, out of range. The range is
    the design's (or the criterion's own ``scale_min``..``scale_max``)."""
    text = (raw or "").strip()
    low, high = value_range(design, config, scale_min=scale_min, scale_max=scale_max) or (-math.inf, math.inf)
    span = f"{number_text(low)} to {number_text(high)}"
    whole = whole_numbers_only(design, scale_min=scale_min)
    if not text:
        return None, "pick a point for this response" if design == Design.LIKERT else "give a value for this response"
    if not whole and _THOUSANDS_COMMA.fullmatch(text):
        return None, f"“{text}” is ambiguous: write {text.replace(',', '')} for a whole number, or use a point for decimals"
    if not whole and _DECIMAL_COMMA.fullmatch(text):
        return None, f"write {text.replace(',', '.')} with a point, not a comma"
    if not (_INTEGER if whole else _DECIMAL).fullmatch(text):
        if whole and _DECIMAL.fullmatch(text):
            return None, f"pick one of the points {span}"
        return None, f"“{text[:12]}” is not a number: type digits, e.g. 40 or 12.5" if not whole \
            else f"“{text[:12]}” is not one of the points {span}"
    value = float(text)
    if value < 0 <= low:
        return None, f"must not be negative: use a number from {span}"
    if not low <= value <= high:
        return None, f"use a number from {span}" if not whole else f"pick one of the points {span}"
    return (int(value) if whole else value), None


def bme_reference_value(score: float, *, lo: float, hi: float, config: Mapping[str, Any]) -> float:
    """A metric's score of a reference response as the BME anchor shown to raters.

    value = a + (b − a) · (s − lo)/(hi − lo), clipped to [a, b] and rounded to a whole number, where
    [a, b] = [``anchor_min``, ``anchor_max``] (default 50..150, centred on RME's fixed 100) and
    [lo, hi] is the metric's declared range, or the range observed over the study's references. A
    metric that gives every reference the same score (hi = lo) puts every anchor at the midpoint.
    Keeping anchors well inside the rating range leaves room for "twice as good" and "half as good"
    (the old map onto 1..199 showed references of 1, whose half is 0). The value stored on the item
    is the one shown, so ``log10(value / reference_value)`` (studies.analysis.normalise) divides by
    exactly what the rater compared against."""
    merged = {**DEFAULT_CONFIG[Design.BME], **config}
    a, b = float(merged["anchor_min"]), float(merged["anchor_max"])
    position = 0.5 if hi == lo or not math.isfinite(hi - lo) else (score - lo) / (hi - lo)
    if not math.isfinite(position):
        position = 0.5
    return float(round(min(b, max(a, a + (b - a) * position))))


def ranks_problem(ranks: Sequence[Any], size: int) -> str | None:
    """Why ``ranks`` is not a complete ranking 1..size without ties, or None if it is."""
    if len(ranks) != size:
        return f"rank all {size} responses (got {len(ranks)})"
    if any(isinstance(r, bool) or not isinstance(r, int) for r in ranks):
        return "ranks must be whole numbers"
    if sorted(ranks) != list(range(1, size + 1)):
        return f"ranks must be 1..{size}, each used once (no ties)"
    return None
