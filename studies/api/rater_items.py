"""What the rater API shows of one item and how it reads an answer.

An item is described from the same form context its page is rendered from (``StudyDesign.form_context``),
so a bot sees what a person sees: the conversation, the targets lettered in this rater's order (never a
database id, which would tell check items apart), a reference where the design shows one, and one entry per form field to answer
(``item_fields``: its name, criterion, question, the target it concerns, its kind and the values it takes).
An answer is a JSON object of those fields; ``answers_as_post`` turns it into the form the page posts, and
``studies.rating.item_answers`` parses, checks and stores it exactly as it does the page's."""
from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from django.http import QueryDict
from django.urls import reverse

from studies.designs import design_for, unit_for
from studies.designs.common import number_text
from studies.designs.kinds.multilabel import NONE_VALUE
from studies.designs.rater_reads import study_criteria
from studies.designs.units.sides import context_sides
from studies.models import AssignmentItem, Study

MAX_FIELDS = 200  # as many as a draft may hold (answers.DRAFT_MAX_FIELDS)
MAX_WHOLE = int(sys.float_info.max)  # the largest JSON integer a float (as the page's numbers are) can hold


def _turns(turns: Sequence[Mapping[str, Any]] | None) -> list[dict[str, str]]:
    return [{"speaker": str(t.get("speaker", "")), "text": str(t.get("text", ""))} for t in turns or []]


def _field(name: str, criterion: Any, kind: str, *, target: str | None = None, required: bool = True,
           choices: Sequence[Any] = (), low: float | None = None, high: float | None = None,
           many: bool = False, none_allowed: bool = False, aliases: Mapping[str, str] | None = None) -> dict[str, Any]:
    # ``aliases``: values the form posts under another name (a pairwise A/B is the form's left/right); kept
    # off the API's answer (the serializer shows its declared fields only)
    return {"name": name, "criterion": criterion["name"], "question": criterion.get("question") or "",
            "target": target, "kind": kind, "required": required, "choices": [str(c) for c in choices],
            "min": low, "max": high, "many": many, "none_allowed": none_allowed, "aliases": dict(aliases or {})}


TEXT_KINDS = ("free_text", "rationale", "reason")  # answered by text only: a number is a mistake, not text


def _rating_fields(study: Study, context: Mapping[str, Any], by_name: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A rating design's rows: one field per target and criterion, and its "Why?" box where asked."""
    design = design_for(study)
    config = study.design_config
    fields = []
    for row in context["criteria"]:
        criterion = by_name[row["name"]]
        kind = row["kind"]
        if kind == "per_turn":  # one field per judged turn of each shown dialogue (kinds.per_turn)
            fields += _turn_fields(row)
            continue
        for target in row["rows"]:
            spec: dict[str, Any] = {}
            if kind == "scale" and design.ranks:
                kind_name, spec = "rank", {"choices": row["ranks"]}
            elif kind == "scale":
                kind_name = "scale"
                low, high = design.value_range(config, scale_min=criterion.scale_min, scale_max=criterion.scale_max) \
                    or (None, None)
                whole = getattr(design, "whole_numbers", lambda **_: False)(scale_min=criterion.scale_min)
                spec = {"low": low, "high": high}
                if whole and low is not None and high is not None:
                    spec["choices"] = [number_text(p) for p in range(int(low), int(high) + 1)]
            elif kind == "categorical":
                kind_name, spec = kind, {"choices": row.get("labels") or []}
            elif kind == "multilabel":
                # "none of these" is an empty list in the API (the page's box posts NONE_VALUE for it)
                kind_name, spec = kind, {"choices": list(row.get("labels") or []), "many": True,
                                         "none_allowed": bool(row.get("none_option"))}
            elif kind == "spans":  # a list of {start, end, label} (see the target's text), or its JSON text
                kind_name, spec = kind, {"choices": row.get("labels") or [], "many": True}
            else:  # free text: its length bounds
                kind_name, spec = kind, {"low": row.get("min_length"), "high": row.get("max_length"),
                                         "required": bool(row.get("min_length"))}
            fields.append(_field(target["field"], row, kind_name, target=target["letter"], **spec))
            if row.get("rationale"):
                fields.append(_field(target["why_field"], row, "rationale", target=target["letter"],
                                     required=row["rationale"] == "required"))
    return fields


def _turn_fields(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A per-turn criterion's fields: one per judged turn (``turn``: its index in the dialogue, from 0); a
    binary behaviour set takes any list (none ticked: []), multi-label its labels or [] for "none of these" (as a
    multi-label criterion's field: the page's internal value never shows), categorical one."""
    labels, mode = list(row.get("labels") or []), row.get("mode")
    fields = []
    for target in row["rows"]:
        for turn in target.get("turns") or []:
            if turn["judged"]:
                fields.append({**_field(turn["field"], row, "per_turn", target=target["letter"], choices=labels,
                                        many=mode != "categorical", required=mode != "binary",
                                        none_allowed=mode != "categorical"),
                               "turn": turn["index"], "mode": mode})
        if row.get("rationale"):
            fields.append(_field(target["why_field"], row, "rationale", target=target["letter"],
                                 required=row["rationale"] == "required"))
    return fields


def item_fields(study: Study, context: Mapping[str, Any], criteria: Sequence[Any]) -> list[dict[str, Any]]:
    """Every form field of an item's page (its ``form_context``, built from ``criteria``), as the API lists them."""
    if "pairwise" in context:  # the targets' keys (A or B), a tie where allowed; a reason per criterion
        pairwise = context["pairwise"]
        keys = [target["key"] for target in _targets(context)]
        keys = keys if len(keys) == 2 and len(set(keys)) == 2 else ["A", "B"]
        choices = [*keys, *(["tie"] if pairwise["allow_tie"] else [])]
        aliases = dict(zip(keys, ("left", "right"), strict=True))  # the form posts the first (A) as left
        fields = []
        for row in pairwise["criteria"]:
            fields.append(_field(row["choice_field"], row, "choice", choices=choices, aliases=aliases))
            if pairwise["reason"] != "off":
                fields.append(_field(row["reason_field"], row, "reason", required=pairwise["reason"] == "required",
                                     high=pairwise["reason_max_length"]))
        return fields
    if "tuple_criteria" in context:  # best-worst tuples: the best and the worst member's letter
        fields = []
        for row in context["tuple_criteria"]:
            letters = [member["letter"] for member in row["options"]]
            fields += [_field(row["best_field"], row, "best", choices=letters),
                       _field(row["worst_field"], row, "worst", choices=letters)]
        return fields
    return _rating_fields(study, context, {c.name: c for c in criteria})


def _targets(context: Mapping[str, Any]) -> list[dict[str, Any]]:
    if "tuple_members" in context:
        return [{"key": m["letter"], "text": m["text"], "turns": _turns(m.get("turns"))} for m in context["tuple_members"]]
    if context.get("pairwise") and context["pairwise"].get("sides") and not context.get("responses"):
        # keyed A and B as every pairwise item (the turns name the judged speaker "Speaker 1" / "Speaker 2")
        return [{"key": side.get("key", "").upper() or side["label"], "text": side.get("text", ""),
                 "turns": _turns(side.get("turns"))} for side in context["pairwise"]["sides"]]
    if context.get("ranked_dialogues"):
        return [{"key": d["letter"], "text": "", "turns": _turns(d["turns"])} for d in context["ranked_dialogues"]]
    return [{"key": r["letter"], "text": r["text"], "turns": []} for r in context.get("responses") or []]


def item_view(slot: AssignmentItem, *, criteria: Sequence[Any] | None = None) -> dict[str, Any]:
    """One slot of an assignment as the rater API shows it (its page's content, as data)."""
    study = slot.assignment.study
    criteria = study_criteria(study) if criteria is None else criteria
    content = content_view(study, slot.item, slot.response_order, criteria)
    values = api_values(design_for(study).stored_values(slot, study, criteria), content["fields"])
    return {"position": slot.position, "answered": slot.answered_at is not None,
            "pending_url": unit_for(study).pending_url(slot),
            "chat_url": reverse("studies-api:rater-chat", args=[slot.assignment.token, slot.position])
            if unit_for(study).collects_dialogues else None,
            **content, "values": values}


def api_values(values: Mapping[str, Any], fields: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The stored answer as the API takes it (the page's form values, as ``answers_as_post`` reads them back):
    "none of these" as [], a pairwise side by the target's key."""
    by_name = {field["name"]: field for field in fields}
    shown = {}
    for name, value in values.items():
        field = by_name.get(name)
        if field and field["many"] and isinstance(value, list):
            value = [label for label in value if label != NONE_VALUE]
        elif field and field["aliases"] and isinstance(value, str):
            value = {form: key for key, form in field["aliases"].items()}.get(value, value)
        shown[name] = value
    return shown


def content_view(study: Study, item: Any, order: Sequence[int], criteria: Sequence[Any]) -> dict[str, Any]:
    """What an item's page shows, as data: the conversation, the targets, the reference and the fields to
    answer; ``item`` is a StudyItem (or the unsaved one a practice item is shown as, ``practice_views``)."""
    context = design_for(study).form_context(study=study, item=item, order=order, values={}, errors={},
                                             criteria=criteria)
    reference = None
    if context.get("reference") is not None or context.get("anchor_turns"):
        shown = context.get("reference")
        reference = {"text": getattr(shown, "text", ""), "turns": _turns(context.get("anchor_turns")),
                     "value": context.get("reference_value")}
    # The conversation the targets reply to, as the page shows it above them: a dialogue study's whole
    # dialogue; none where the design hides it (ACUTE sets ``turns`` empty: it would tell the sides apart).
    hidden = context.get("turns") == []
    if context.get("dialogue"):
        conversation = context.get("dialogue_turns") or []
    else:
        conversation = context_sides(item.conversation.turns) if item.conversation is not None and not hidden else []
    return {"context": _turns(conversation), "targets": _targets(context), "reference": reference,
            "fields": item_fields(study, context, criteria)}


def _text(value: Any) -> str | None:
    """One JSON answer value as the page posts it (None: not text or a number)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, int) and not -MAX_WHOLE < value < MAX_WHOLE:  # JSON integers have no bound; floats do
        return None
    return number_text(value)


def answers_as_post(answers: Mapping[str, Any], fields: Sequence[Mapping[str, Any]]) -> tuple[QueryDict, dict[str, str]]:
    """A JSON answer (field -> text, a number, or a list of labels) as the form the page posts, and
    each field's problem that the form could not even carry: a field the item does not have, a value
    that is not text, a number or a list of text."""
    known = {field["name"]: field for field in fields}
    post = QueryDict(mutable=True)
    errors: dict[str, str] = {}
    if len(answers) > MAX_FIELDS:
        return post, {"answers": f"at most {MAX_FIELDS} fields"}
    for name, value in answers.items():
        if name not in known:
            names = sorted(known)
            listed = ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
            errors[name] = f"unknown field: this item takes {listed} (its `fields`)"
            continue
        field = known[name]
        if field["kind"] == "multilabel" and not isinstance(value, list):
            errors[name] = "must be a list of labels (of its choices; [] for none of these)" if field["none_allowed"] \
                else "must be a list of labels (of its choices)"
            continue
        if field["kind"] in TEXT_KINDS and not isinstance(value, str):
            errors[name] = "must be text"
            continue
        if field["kind"] == "spans" and isinstance(value, list):  # marked spans: the page posts them as one JSON text
            value = json.dumps(value)
        values = value if isinstance(value, list) else [value]
        texts = [_text(v) for v in values]
        if any(t is None for t in texts) or len(values) > MAX_FIELDS:
            errors[name] = "must be text, a finite number or a list of labels"
            continue
        if field["many"] and not texts and field["none_allowed"]:
            texts = [NONE_VALUE]
        post.setlist(name, [field["aliases"].get(t, t) for t in texts])
    return post, errors
