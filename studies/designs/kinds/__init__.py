"""The registry of judgement kinds: kind key -> its object (one line per kind)."""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from django.core.exceptions import ValidationError

from studies.designs.kinds.base import JudgementKind
from studies.designs.kinds.categorical import CATEGORICAL
from studies.designs.kinds.free_text import FREE_TEXT
from studies.designs.kinds.multilabel import MULTILABEL
from studies.designs.kinds.per_turn import PER_TURN
from studies.designs.kinds.rationale import rationale_clean
from studies.designs.kinds.scale import SCALE
from studies.designs.kinds.spans import SPANS

KINDS: dict[str, JudgementKind] = {
    SCALE.key: SCALE,
    CATEGORICAL.key: CATEGORICAL,
    MULTILABEL.key: MULTILABEL,
    FREE_TEXT.key: FREE_TEXT,
    PER_TURN.key: PER_TURN,
    SPANS.key: SPANS,
}
DEFAULT_KIND = SCALE.key
_TURN_SUFFIX = re.compile(r"\.t\d{1,4}$")
NUMERIC_KINDS = tuple(key for key, kind in KINDS.items() if kind.numeric)  # what the scale analyses read


def kind_for(criterion: Any) -> JudgementKind:
    """The kind of a criterion (``Criterion.kind`` where the model has it; the design's scale otherwise)."""
    return KINDS[getattr(criterion, "kind", None) or DEFAULT_KIND]


def criterion_kind_clean(spec: Any, *, takes_kinds: bool, prefix: str,
                         level: str | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """A criterion spec's ``kind``, ``options`` and ``rationale``, cleaned by its kind, and the problems
    keyed ``<prefix>.kind`` / ``<prefix>.options.<key>`` / ``<prefix>.rationale``. ``takes_kinds``: the
    study's design answers other kinds than its scale (``StudyDesign.takes_kinds``)."""
    errors: dict[str, str] = {}
    key = spec.get("kind") or DEFAULT_KIND
    if key not in KINDS:
        errors[f"{prefix}.kind"] = f"unknown kind {key!r}: use one of {', '.join(KINDS)}"
        return {}, errors
    if key != DEFAULT_KIND and not takes_kinds:
        errors[f"{prefix}.kind"] = "this design answers every criterion on its own scale: choose a rating design " \
                                   "(Likert, magnitude, BWS ranking) for labels or free text"
    elif level is not None and level not in KINDS[key].levels:
        errors[f"{prefix}.kind"] = f"{KINDS[key].label.lower()} needs whole dialogues: choose the dialogue or chat unit"
    options: dict[str, Any] = {}
    try:
        options = KINDS[key].options_clean(spec.get("options") or {})
    except ValidationError as error:
        errors.update({f"{prefix}.{k}": "; ".join(v) for k, v in error.message_dict.items()})
    rationale, problem = rationale_clean(spec.get("rationale"))
    if problem:
        errors[f"{prefix}.rationale"] = problem
    return {"kind": key, "options": options, "rationale": rationale}, errors


def repeated_fields(post: Any, prefixes: tuple[str, ...], criteria: Iterable[Any]) -> dict[str, str]:
    """Answer fields posted more than once that hold one value (a categorical answer posted
    twice was stored as the last one, silently): field -> problem. Only a kind with ``many_values``
    (multi-label's ticked boxes, ``r<letter>-<criterion>``) may repeat; its reason may not."""
    if not hasattr(post, "lists"):
        return {}
    many = {c.name for c in criteria if kind_for(c).many_values}
    return {name: f"{name} was sent {len(values)} times: it takes one answer (reload the page and answer again)"
            for name, values in post.lists()
            if len(values) > 1 and name.startswith(prefixes) and _criterion_of(name) not in many}


def _criterion_of(name: str) -> str:
    """The criterion a posted field answers: ``r<letter>-<criterion>``, a per-turn field's ``.t<index>`` cut."""
    criterion = name.partition("-")[2]
    return criterion[:-len(found[0])] if (found := _TURN_SUFFIX.search(criterion)) else criterion
