"""Magnitude estimation (designs ``rme`` and ``bme``): a ratio judgement against a reference.

- RME: ``reference_value`` (default 100, shown with the reference response) and the range
  ``min``..``max`` (default 0..999); a value is any number in range, decimals included (magnitude
  estimation is a ratio judgement: "a bit better than 12" is 12.5, Bard, Robertson & Sorace 1996).
- BME: the same range; the reference value comes per item from an automatic metric, rescaled onto
  ``anchor_min``..``anchor_max`` (default 50..150, centred on RME's 100; ``bme_reference_value``).

Reports normalise a value as log10(max(value, 1) / reference value) (Bard et al. 1996). Rater form:
templates/raters/designs/rme.html and bme.html (a number per target, the reference shown above)."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from django import forms
from django.db.models import F, Max, Min, Q, Value
from django.db.models.functions import Greatest, Log
from django.utils.translation import gettext

from studies.designs.common import Errors, int_field, number_text
from studies.designs.ratings import RatingsDesign
from studies.designs.units.base import StudyUnit

if TYPE_CHECKING:
    from django.db.models import Expression

    from studies.models import AssignmentItem, Criterion, Study, StudyItem

RANGE = {"min": 0, "max": 999}
ME_MAX = forms.IntegerField(label="Largest value a rater may give (RME, BME)", min_value=1, initial=999,
                            required=False, help_text="The smallest is 0.")


def _magnitude_rule(config: Mapping[str, Any]) -> str:
    return gettext("Give every response a number from %(low)s to %(high)s that says how good it is compared with "
                   "the reference; decimals such as 12.5 are fine.") % {
        "low": number_text(config["min"]), "high": number_text(config["max"])}


class Magnitude(RatingsDesign):
    """What RME and BME share: the range, the anchor, the log-ratio normalisation."""

    anchored = True
    normalisation = "log10(max(value,1)/reference)"
    # Magnitude estimates become log10 ratios to each item's anchor (negative below it): interval, not
    # ratio; raw magnitudes scale with the anchor and would measure agreement about the anchors.
    alpha_level = "interval"
    alpha_values = "log10(max(value,1)/reference)"
    form_fields: ClassVar[Mapping[str, forms.Field]] = {"me_max": ME_MAX}

    def _range_problems(self, config: dict[str, Any], errors: Errors) -> str:
        """Check min and max; returns "inside the range min..max (…)" for the anchor's message ("" if bad)."""
        low = int_field(config, "min", errors, low=0, high=10**6)
        high = int_field(config, "max", errors, low=1, high=10**6)
        if low is not None and high is not None and low >= high:
            errors["design_config.max"] = f"must be greater than min ({low})"
            return ""
        # The anchor must lie inside the raters' range, or "twice as good" and "half as good" make no sense.
        return f"inside the range min..max ({low} to {high})" if low is not None and high is not None else ""

    def value_range(self, config: Mapping[str, Any], *, scale_min: float | None = None,
                    scale_max: float | None = None) -> tuple[float, float] | None:
        if scale_min is not None and scale_max is not None:
            return scale_min, scale_max
        return config["min"], config["max"]

    def settings_summary(self, config: Mapping[str, Any]) -> str:
        return f"values {config['min']} to {config['max']}"

    def criterion_context(self, config: Mapping[str, Any], criterion: Criterion) -> dict[str, Any]:
        low, high = (criterion.scale_min, criterion.scale_max) if criterion.scale_min is not None \
            and criterion.scale_max is not None else (config.get("min", 0), config.get("max", 999))
        return {"min": number_text(low), "max": number_text(high)}

    def page_context(self, study: Study, item: StudyItem, config: Mapping[str, Any]) -> dict[str, Any]:
        value = item.reference_value
        return {"reference": item.reference_response, "reference_value": number_text(value) if value else None,
                "example_double": number_text(2 * value) if value else None,
                "example_half": number_text(value / 2) if value else None,
                "me_min": number_text(config.get("min", 0)), "me_max": number_text(config.get("max", 999))}

    def normalised_value(self, shown: Any) -> tuple[Q, Expression] | None:
        return (Q(item__reference_value__isnull=False),
                Log(Value(10.0), Greatest(F("value"), Value(1.0))) - Log(Value(10.0), F("item__reference_value")))

    def scale_simulate(self, *, study: Study, slot: AssignmentItem, quality: Mapping[tuple[int, str], float],
                       reference_quality: Mapping[str, float], rng: Any,
                       criteria: Sequence[Criterion]) -> dict[str, Any]:
        """The anchor times 2^(1.5·(quality − the reference's quality)), clipped to the range."""
        config = self.config(study)
        anchor = slot.item.reference_value or self.fixed_reference_value(config) or 100
        return {c.name: {r: int(np.clip(round(anchor * 2.0 ** (1.5 * (quality[(r, c.name)]
                                                                     - reference_quality.get(c.name, 0.0)))),
                                        config["min"], config["max"])) for r in slot.response_order}
                for c in criteria}


class RME(Magnitude):
    key = "rme"
    explanation = ("Magnitude estimation with a fixed anchor: the human reference response is shown with a value "
                   "(default 100) and raters give each response a number in a range (default 0 to 999) relative to it.")
    defaults = {"reference_value": 100, **RANGE}
    template = "raters/designs/rme.html"
    form_fields = {
        "me_reference_value": forms.IntegerField(label="Reference value (RME)", min_value=1, initial=100,
                                                 required=False, help_text="The number shown with the reference response."),
        "me_max": ME_MAX,
    }

    def config_problems(self, config: dict[str, Any], errors: Errors) -> None:
        inside = self._range_problems(config, errors)
        low, high = config.get("min"), config.get("max")
        ref = config.get("reference_value")
        if isinstance(ref, bool) or not isinstance(ref, (int, float)) or not math.isfinite(ref) or ref <= 0:
            errors["design_config.reference_value"] = f"must be a positive number, got {ref!r}"
        elif inside and not low < ref < high:  # type: ignore[operator]
            errors["design_config.reference_value"] = f"must be {inside}, got {number_text(ref)}"

    def describe(self, config: Mapping[str, Any], *, anchors: tuple[float, float] | None = None,
                 unit: StudyUnit | None = None) -> str:
        ref = config["reference_value"]
        if unit and unit.level == "dialogue":
            return gettext("Each screen comes with a reference dialogue worth %(ref)s. Give every dialogue a number "
                           "from %(low)s to %(high)s that says how good it is compared with the reference; decimals "
                           "such as 12.5 are fine. A dialogue twice as good as the reference gets %(double)s; one half "
                           "as good gets %(half)s.") % {
                "ref": number_text(ref), "low": number_text(config["min"]), "high": number_text(config["max"]),
                "double": number_text(2 * ref), "half": number_text(ref / 2)}
        return gettext("Each conversation comes with a reference response worth %(ref)s. %(rule)s A response twice as "
                       "good as the reference gets %(double)s; one half as good gets %(half)s.") % {
            "ref": number_text(ref), "rule": _magnitude_rule(config), "double": number_text(2 * ref),
            "half": number_text(ref / 2)}

    def settings_summary(self, config: Mapping[str, Any]) -> str:
        return f"reference shown as {config['reference_value']}; {super().settings_summary(config)}"

    def config_from_form(self, data: Mapping[str, Any]) -> dict[str, Any]:
        return {"reference_value": data.get("me_reference_value") or 100, "min": 0, "max": data.get("me_max") or 999}

    def form_initial(self, config: Mapping[str, Any]) -> dict[str, Any]:
        return {"me_reference_value": config.get("reference_value"), "me_max": config.get("max")}

    def fixed_reference_value(self, config: Mapping[str, Any]) -> float | None:
        return config.get("reference_value")

    def check_reference_value(self, config: Mapping[str, Any], given: Any) -> tuple[float | None, str | None]:
        return float(config.get("reference_value", 100)), None


class BME(Magnitude):
    key = "bme"
    explanation = ("Magnitude estimation with a metric anchor: like RME, but the reference value shown is an "
                   "automatic metric's score of the reference response (rescaled, default 50 to 150), so it differs "
                   "per item.")
    defaults = {**RANGE, "anchor_min": 50, "anchor_max": 150}
    template = "raters/designs/bme.html"
    anchor_from_metric = True
    unit_refusals = {
        "dialogue": "BME is not offered for dialogue units: it needs an automatic metric's value for an anchor "
        "dialogue on every item, which Concord does not compute yet; use RME (a fixed anchor dialogue), "
        "Likert or BWS",
    }

    def config_problems(self, config: dict[str, Any], errors: Errors) -> None:
        inside = self._range_problems(config, errors)
        low, high = config.get("min"), config.get("max")
        a_low = int_field(config, "anchor_min", errors, low=1, high=10**6)
        a_high = int_field(config, "anchor_max", errors, low=1, high=10**6)
        if a_low is not None and a_high is not None:
            if a_low > a_high:
                errors["design_config.anchor_max"] = f"must be at least anchor_min ({a_low})"
            elif inside and not (low < a_low and a_high < high):  # type: ignore[operator]
                errors["design_config.anchor_min"] = f"anchor_min..anchor_max ({a_low} to {a_high}) must lie {inside}"

    def describe(self, config: Mapping[str, Any], *, anchors: tuple[float, float] | None = None,
                 unit: StudyUnit | None = None) -> str:
        low, high = anchors or (config["anchor_min"], config["anchor_max"])
        if low == high:
            first = gettext("Each conversation comes with a reference response worth %(ref)s.") % {
                "ref": number_text(low)}
        else:
            first = gettext("Each conversation comes with a reference response with its own value (from %(low)s to "
                            "%(high)s; it changes from one conversation to the next).") % {
                "low": number_text(low), "high": number_text(high)}
        return " ".join([first, _magnitude_rule(config), gettext(
            "A response twice as good as the reference gets twice its value; one half as good gets half.")])

    def anchors_shown(self, study: Study) -> tuple[float, float] | None:
        """The lowest and highest reference value the study's items show (one aggregate)."""
        shown = study.items.filter(reference_value__isnull=False).aggregate(low=Min("reference_value"),
                                                                            high=Max("reference_value"))
        return (shown["low"], shown["high"]) if shown["low"] is not None else None

    def settings_summary(self, config: Mapping[str, Any]) -> str:
        return f"reference value from a metric; {super().settings_summary(config)}"

    def config_from_form(self, data: Mapping[str, Any]) -> dict[str, Any]:
        return {"min": 0, "max": data.get("me_max") or 999}

    def form_initial(self, config: Mapping[str, Any]) -> dict[str, Any]:
        return {"me_reference_value": config.get("reference_value"), "me_max": config.get("max")}

    def check_reference_value(self, config: Mapping[str, Any], given: Any) -> tuple[float | None, str | None]:
        number = isinstance(given, (int, float)) and not isinstance(given, bool) and math.isfinite(given)
        if not number or given <= 0:
            return None, "a BME check item needs a positive reference value"
        return float(given), None


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
    merged = {**BME.defaults, **config}
    a, b = float(merged["anchor_min"]), float(merged["anchor_max"])
    position = 0.5 if hi == lo or not math.isfinite(hi - lo) else (score - lo) / (hi - lo)
    if not math.isfinite(position):
        position = 0.5
    return float(round(min(b, max(a, a + (b - a) * position))))


RME_DESIGN = RME()
BME_DESIGN = BME()
