"""Likert (design ``likert``): raters pick one point on a P-point scale per target and criterion.

Configuration: ``points`` (P, 2..11, default 6 as in Santhanam & Shaikh 2019) and optional ``labels``
(P strings, shown under the points, or two: the lowest and the highest point's, the end labels); a value is an integer 1..P (a criterion's own imported scale may
allow decimals). Rater form: templates/raters/designs/likert.html (radio points, keyboard digits)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from django import forms
from django.utils.translation import gettext, gettext_noop

from studies.designs.common import Errors, int_field
from studies.designs.ratings import RatingsDesign
from studies.designs.units.base import StudyUnit

if TYPE_CHECKING:
    from studies.models import AssignmentItem, Criterion, Study, StudyItem


class Likert(RatingsDesign):
    key = "likert"
    explanation = "Raters pick one point on a P-point scale (default 6) for each response and criterion."
    defaults = {"points": 6, "labels": []}
    template = "raters/designs/likert.html"
    form_fields = {
        "likert_points": forms.IntegerField(label="Points on the scale (Likert)", min_value=2, max_value=11, initial=6,
                                            required=False, help_text="The seed study used 6."),
        "likert_labels": forms.CharField(label="Point labels (Likert, optional)", required=False,
                                         widget=forms.Textarea(attrs={"rows": 3}),
                                         help_text="One label per line, from the lowest point to the highest: "
                                                   "one per point, or two (the end labels), e.g. Very bad, then "
                                                   "Very good."),
    }
    empty_message = gettext_noop("pick a point for this response")
    alpha_level = "ordinal"
    alpha_values = "Likert value"

    def config_problems(self, config: dict[str, Any], errors: Errors) -> None:
        points = int_field(config, "points", errors, low=2, high=11)
        labels = config.get("labels")
        if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
            errors["design_config.labels"] = "must be a list of strings"
        elif labels and points is not None and len(labels) not in (2, points):
            errors["design_config.labels"] = (f"needs one label per point ({points}) or two end labels, "
                                              f"got {len(labels)}")

    def describe(self, config: Mapping[str, Any], *, anchors: tuple[float, float] | None = None,
                 unit: StudyUnit | None = None) -> str:
        points, labels = config["points"], config.get("labels") or []
        low, high = (labels[0], labels[-1]) if labels else (gettext("lowest"), gettext("highest"))
        if unit and unit.level == "dialogue":
            text = gettext("For each dialogue you pick one point on a %(points)s-point scale, from 1 (%(low)s) to "
                           "%(points)s (%(high)s).")
        else:
            text = gettext("For each response you pick one point on a %(points)s-point scale, from 1 (%(low)s) to "
                           "%(points)s (%(high)s).")
        return text % {"points": points, "low": low, "high": high}

    def settings_summary(self, config: Mapping[str, Any]) -> str:
        labels = config.get("labels") or []
        return f"{config['points']}-point scale" + (f": {' · '.join(labels)}" if labels else "")

    def config_from_form(self, data: Mapping[str, Any]) -> dict[str, Any]:
        text = data.get("likert_labels") or ""
        # one label per line (the form); "a | b | c" on one line is still read (older scripts)
        labels = [s.strip() for s in (text.splitlines() if "\n" in text.strip() else text.split("|")) if s.strip()]
        return {"points": data.get("likert_points") or 6, "labels": labels}

    def form_initial(self, config: Mapping[str, Any]) -> dict[str, Any]:
        return {"likert_points": config.get("points"), "likert_labels": "\n".join(config.get("labels") or [])}

    def value_range(self, config: Mapping[str, Any], *, scale_min: float | None = None,
                    scale_max: float | None = None) -> tuple[float, float] | None:
        if scale_min is not None and scale_max is not None:
            return scale_min, scale_max
        return 1, config["points"]

    def whole_numbers(self, *, scale_min: float | None = None) -> bool:
        return scale_min is None

    def page_context(self, study: Study, item: StudyItem, config: Mapping[str, Any]) -> dict[str, Any]:
        labels, top = config.get("labels") or [], config.get("points", 6)
        if len(labels) != top:  # the end labels only (or none): the points between have none
            ends = {1: labels[0], top: labels[-1]} if labels else {}
            return {"points": [{"value": p, "label": ends.get(p, "")} for p in range(1, top + 1)]}
        return {"points": [{"value": p, "label": labels[p - 1]} for p in range(1, top + 1)]}

    def scale_simulate(self, *, study: Study, slot: AssignmentItem, quality: Mapping[tuple[int, str], float],
                       reference_quality: Mapping[str, float], rng: Any, criteria: Sequence[Criterion]) -> dict[str, Any]:
        """A point around the scale's middle, 1.4 points per unit of quality (the demo's raters)."""
        top = self.config(study)["points"]
        middle = (1 + top) / 2
        return {c.name: {r: int(np.clip(round(middle + 1.4 * quality[(r, c.name)]), 1, top))
                         for r in slot.response_order} for c in criteria}


LIKERT = Likert()
