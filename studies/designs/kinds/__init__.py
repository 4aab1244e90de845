"""The registry of judgement kinds: kind key -> its object (one line per kind)."""
from __future__ import annotations

from typing import Any

from studies.designs.kinds.base import JudgementKind
from studies.designs.kinds.scale import SCALE

KINDS: dict[str, JudgementKind] = {
    SCALE.key: SCALE,
}
DEFAULT_KIND = SCALE.key


def kind_for(criterion: Any) -> JudgementKind:
    """The kind of a criterion (``Criterion.kind`` where the model has it; the design's scale otherwise)."""
    return KINDS[getattr(criterion, "kind", None) or DEFAULT_KIND]
