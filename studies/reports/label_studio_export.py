"""A study's ratings in Label Studio's task format (https://labelstud.io/guide/task_format), for a Label
Studio project to import back, and the labeling configuration that shows them.

One task per judged target (a response, or the whole dialogue in a dialogue-unit study): ``data`` holds the
dialogue as Label Studio's ``<Paragraphs>`` turns (``{"author", "text"}``), the ``response`` and its
``system``, and the ``conversation_id``; one annotation per rater who answered it, ``completed_by`` the
rater's number in this export (1, 2, ... in the order of their pseudonyms: Label Studio expects its own
user ids, never a platform's worker id). Each answer is one result whose ``from_name`` is the criterion:
a scale value as ``rating`` (stars: a whole number from 1) or ``number``; a label or a label set as
``choices``; free text as ``textarea``; a free-text reason as ``textarea`` named ``<criterion>-rationale``.
Check items and excluded raters are left out, as in every analysis. Concord's own import of this file
(``studies.corpora.importing.label_studio_format``) gives back every answer.
"""
from __future__ import annotations

from typing import Any
from xml.sax.saxutils import quoteattr

from studies.models import Criterion, Rating, Study
from studies.pseudonyms import rater_pseudonym

DIALOGUE_NAME = "dialogue"
RESPONSE_NAME = "response"


def _stars(criterion: Criterion, values: list[float]) -> bool:
    """A scale criterion shown as stars: every value a whole number from 1 (Label Studio's Rating)."""
    return bool(values) and all(v >= 1 and float(v).is_integer() for v in values)


def _results(criterion: Criterion, rating: dict, stars: bool, target: str) -> list[dict[str, Any]]:
    base = {"from_name": criterion.name, "to_name": target, "origin": "manual"}
    out = []
    if criterion.kind == "scale" and rating["value"] is not None:
        kind = "rating" if stars else "number"
        value = int(rating["value"]) if stars else rating["value"]
        out.append({**base, "type": kind, "value": {kind: value}})
    elif criterion.kind == "categorical" and rating["label"]:
        out.append({**base, "type": "choices", "value": {"choices": [rating["label"]]}})
    elif criterion.kind == "multilabel" and rating["labels"] is not None:
        out.append({**base, "type": "choices", "value": {"choices": list(rating["labels"])}})
    elif criterion.kind == "free_text" and rating["text"]:
        out.append({**base, "type": "textarea", "value": {"text": [rating["text"]]}})
    if rating["rationale"]:
        out.append({**base, "from_name": f"{criterion.name}-rationale", "type": "textarea",
                    "value": {"text": [rating["rationale"]]}})
    return [{**r, "id": f"{r['from_name']}-{rating['id']}"} for r in out]


def label_studio_tasks(study: Study) -> list[dict[str, Any]]:
    """The study's tasks with their annotations (see the module's docstring)."""
    criteria = {c.pk: c for c in study.criteria.all()}
    ratings = list(
        Rating.objects.filter(assignment__study=study, item__check_kind="", assignment__excluded=False)
        .order_by("item__position", "response_id", "assignment_id", "criterion__position")
        .values("id", "item_id", "response_id", "conversation_id", "criterion_id", "value", "label", "labels", "text",
                "rationale", "assignment__rater_id", "response__text", "response__system__name",
                "item__conversation__external_id", "item__conversation__turns", "item__conversation__metadata",
                "conversation__external_id", "conversation__turns", "conversation__metadata"))
    scale_values: dict[int, list[float]] = {}
    for r in ratings:
        if r["value"] is not None:
            scale_values.setdefault(r["criterion_id"], []).append(r["value"])
    stars = {pk: _stars(c, scale_values.get(pk, [])) for pk, c in criteria.items()}
    numbers = {rater: n for n, rater in enumerate(
        sorted({r["assignment__rater_id"] for r in ratings}, key=lambda pk: rater_pseudonym(study.experiment_id, pk)), 1)}
    dialogue = study.is_dialogue
    tasks: dict[tuple, dict[str, Any]] = {}
    for r in ratings:
        key = (r["item_id"], r["conversation_id"] if dialogue else r["response_id"])
        task = tasks.get(key)
        if task is None:
            prefix = "conversation__" if dialogue else "item__conversation__"
            data: dict[str, Any] = {
                "conversation_id": r[f"{prefix}external_id"],
                DIALOGUE_NAME: [{"author": t.get("speaker", ""), "text": t.get("text", "")} for t in r[f"{prefix}turns"] or []],
            }
            if dialogue:
                system = (r[f"{prefix}metadata"] or {}).get("system")
                if system:
                    data["system"] = system
            else:
                data.update({RESPONSE_NAME: r["response__text"], "system": r["response__system__name"]})
            task = tasks[key] = {"id": len(tasks) + 1, "data": data, "annotations": {}}
        rater = numbers[r["assignment__rater_id"]]
        annotation = task["annotations"].setdefault(rater, {
            "completed_by": rater, "was_cancelled": False, "ground_truth": False, "result": []})
        target = DIALOGUE_NAME if dialogue else RESPONSE_NAME
        annotation["result"] += _results(criteria[r["criterion_id"]], r, stars[r["criterion_id"]], target)
    return [{**task, "annotations": [a for a in task["annotations"].values() if a["result"]]}
            for task in tasks.values()]


def label_studio_config(study: Study) -> str:
    """The labeling configuration (Label Studio's XML) that shows the tasks and asks the study's criteria."""
    criteria = list(study.criteria.all())
    stars = {c.pk: _stars(c, list(Rating.objects.filter(criterion=c, value__isnull=False)
                                   .values_list("value", flat=True)[:10000])) for c in criteria}
    target = DIALOGUE_NAME if study.is_dialogue else RESPONSE_NAME
    lines = ["<View>", f'  <Paragraphs name="{DIALOGUE_NAME}" value="${DIALOGUE_NAME}" layout="dialogue" '
                       'nameKey="author" textKey="text"/>']
    if not study.is_dialogue:
        lines.append(f'  <Text name="{RESPONSE_NAME}" value="${RESPONSE_NAME}"/>')
    for c in criteria:
        lines.append(f"  <Header value={quoteattr(c.question)}/>")
        name, to = quoteattr(c.name), quoteattr(target)
        if c.kind == "scale" and stars[c.pk]:
            top = int(c.scale_max or (study.design_config or {}).get("points") or 5)
            lines.append(f'  <Rating name={name} toName={to} maxRating="{top}"/>')
        elif c.kind == "scale":
            lines.append(f"  <Number name={name} toName={to}/>")
        elif c.kind in ("categorical", "multilabel"):
            choice = "multiple" if c.kind == "multilabel" else "single"
            lines.append(f'  <Choices name={name} toName={to} choice="{choice}">')
            lines += [f"    <Choice value={quoteattr(label)}/>" for label in (c.options or {}).get("labels", [])]
            lines.append("  </Choices>")
        else:
            lines.append(f"  <TextArea name={name} toName={to}/>")
        if c.rationale:
            lines.append(f"  <TextArea name={quoteattr(c.name + '-rationale')} toName={to}/>")
    lines.append("</View>")
    return "\n".join(lines)
