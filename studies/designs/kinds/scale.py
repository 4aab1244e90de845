"""The default judgement kind: the design's own scale (a Likert point, a magnitude estimate, a rank).

Every method hands back to the design, which knows its scale (``RatingsDesign.value_parse``,
``answer_problems``, ``rating_value``)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from studies.designs.kinds.base import JudgementKind, RatingsDesign

if TYPE_CHECKING:
    from studies.designs.common import Errors
    from studies.models import Criterion


class ScaleKind(JudgementKind):
    key = "scale"
    label = "The design's scale"

    def criterion_parse(self, design: RatingsDesign, config: Mapping[str, Any], criterion: Criterion,
                        post: Mapping[str, Any], order: Sequence[int]) -> tuple[dict[int, Any], Errors]:
        return design.scale_parse(config, criterion, post, order)

    def criterion_problems(self, design: RatingsDesign, config: Mapping[str, Any], criterion: Criterion,
                           answers: Mapping[int, Any], order: Sequence[int]) -> Errors:
        return design.scale_problems(config, criterion, answers, order)

    def rating_fields(self, design: RatingsDesign, answer: Any) -> dict[str, Any]:
        return design.scale_fields(answer)

    def form_value(self, design: RatingsDesign, stored: Mapping[str, Any]) -> str:
        return design.scale_form_value(stored)

    def check_value(self, design: RatingsDesign, stored: Mapping[str, Any]) -> Any:
        return design.scale_check_value(stored)


SCALE = ScaleKind()
