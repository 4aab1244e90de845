"""Annotations by named raters (a Label Studio export) as a closed, read-only study: one rater per
annotator (``completed_by``), one criterion per control (``from_name``), so that Concord's reliability,
aggregation and exports run on them as on any study's ratings.

A criterion's kind follows what its answers are: numbers (``rating``, ``number``, or ``choices`` that are
all numbers) make a scale criterion over the range seen (Label Studio's stars start at 1 and go to at
least 5); ``choices`` with one label per answer a categorical criterion, with several a multi-label one
(labels in the order first seen; a criterion answered with one label only gets "other" beside it, since
a categorical criterion offers at least two); ``textarea`` free text; ``labels`` (spans marked on the
response) a span criterion with the labels seen (overlapping spans allowed, as annotators drew them)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.utils import timezone

from studies.corpora.importing.records import ImportFailed, ImportProblem
from studies.designs import design_for
from studies.designs.kinds.labels import MAX_LABELS
from studies.models import (
    Assignment,
    AssignmentItem,
    Corpus,
    Criterion,
    Design,
    Experiment,
    Rating,
    Study,
    StudyItem,
    StudyItemResponse,
    Unit,
)
from studies.rating.entry import rater_get_or_create
from studies.slugs import _create_with_slug

# (conversation id, response id or None for the whole dialogue, the annotations of that target)
Annotated = tuple[int, int | None, list[dict]]


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value and abs(value) != float("inf") else None


def criteria_kinds(annotated: Sequence[Annotated]) -> tuple[dict[str, dict[str, Any]], list[ImportProblem]]:
    """criterion -> {"kind", "min", "max", "labels"} from every answer, or the problems (a criterion
    answered as a number and as a label, more labels than a criterion offers)."""
    seen: dict[str, dict[str, Any]] = {}
    for _, _, answers in annotated:
        for answer in answers:
            entry = seen.setdefault(answer["criterion"], {"types": set(), "labels": [], "numbers": [], "several": False})
            entry["types"].add(answer["type"])
            if answer["type"] in ("rating", "number"):
                entry["numbers"].append(answer["value"])
            elif answer["type"] == "choices":
                entry["several"] |= len(answer["value"]) != 1
                entry["labels"] += [v for v in answer["value"] if v not in entry["labels"]]
            elif answer["type"] == "labels":
                entry["labels"] += [x for x in dict.fromkeys(s["label"] for s in answer["value"])
                                    if x not in entry["labels"]]
    kinds, problems = {}, []
    for name, entry in seen.items():
        types = entry["types"]
        numeric_choices = bool(entry["labels"]) and not entry["several"] and all(
            _number(v) is not None for v in entry["labels"])
        if "textarea" in types and len(types) > 1:
            problems.append(ImportProblem(None, name, "is answered as text and as a rating or choice"))
        elif "labels" in types and len(types) > 1:
            problems.append(ImportProblem(None, name, "is answered as marked spans and as a rating, choice or text"))
        elif types == {"labels"}:
            labels = entry["labels"] if len(entry["labels"]) > 1 else [*entry["labels"], "other"]
            if len(labels) > MAX_LABELS:
                problems.append(ImportProblem(None, name, f"has {len(labels)} different span labels; a criterion "
                                                          f"offers at most {MAX_LABELS}"))
            kinds[name] = {"kind": "spans", "labels": labels}
        elif types <= {"rating", "number"} or (types <= {"rating", "number", "choices"} and numeric_choices):
            numbers = entry["numbers"] + [_number(v) for v in entry["labels"]]
            low, high = min(numbers), max(numbers)
            if "rating" in types:
                low, high = min(low, 1.0), max(high, 5.0)
            kinds[name] = {"kind": "scale", "min": low, "max": high if high > low else low + 1}
        elif types == {"choices"}:
            labels = entry["labels"] if len(entry["labels"]) > 1 else [*entry["labels"], "other"]
            if len(labels) > MAX_LABELS:
                problems.append(ImportProblem(None, name, f"has {len(labels)} different labels; a criterion offers "
                                                          f"at most {MAX_LABELS}"))
            elif len({label.casefold() for label in labels}) != len(labels):
                problems.append(ImportProblem(None, name, "has labels that differ only in case"))
            kinds[name] = {"kind": "multilabel" if entry["several"] else "categorical", "labels": labels}
        elif types == {"textarea"}:
            kinds[name] = {"kind": "free_text"}
        else:
            problems.append(ImportProblem(None, name, "is answered as a number and as a label"))
    return kinds, problems


def _rating_fields(kind: str, answer: dict) -> dict[str, Any]:
    if kind == "scale":
        value = answer["value"]
        return {"value": value if isinstance(value, float) else _number(value[0])}
    if kind == "categorical":
        return {"label": answer["value"][0]}
    if kind == "multilabel":
        return {"labels": list(answer["value"])}
    if kind == "spans":  # one region drawn twice is one span
        unique = {(s["start"], s["end"], s["label"]) for s in answer["value"]}
        return {"spans": [{"start": a, "end": b, "label": label} for a, b, label in sorted(unique)]}
    return {"text": "\n".join(answer["value"])}


def _criteria_create(study: Study, kinds: dict[str, dict[str, Any]]) -> dict[str, Criterion]:
    rows = []
    for i, (name, spec) in enumerate(kinds.items()):
        options: dict[str, Any] = {}
        if spec["kind"] == "spans":
            options = {"labels": spec["labels"], "overlap": True}
        elif spec["kind"] in ("categorical", "multilabel"):
            options = {"labels": spec["labels"], **({"none_option": True} if spec["kind"] == "multilabel" else {})}
        elif spec["kind"] == "free_text":
            options = {"min_length": 0, "max_length": 5000}
        rows.append(Criterion(study=study, name=name, position=i, kind=spec["kind"], options=options,
                              question=f"{name.replace('-', ' ')} (as annotated in the source)"[:300],
                              scale_min=spec.get("min"), scale_max=spec.get("max")))
    return {c.name: c for c in Criterion.objects.bulk_create(rows)}


def annotated_study_create(*, corpus: Corpus, annotated: Sequence[Annotated], unit: str, owner) -> tuple[Study, int]:
    """A closed study of the annotations (the caller holds the import's transaction): one item per
    annotated target, one rater and submitted assignment per annotator. Raises ImportFailed (the whole
    import is undone) when a criterion's answers do not fit one kind. Returns (study, ratings stored)."""
    kinds, problems = criteria_kinds(annotated)
    if problems:
        raise ImportFailed(problems)
    now = timezone.now()
    dialogue = unit == Unit.DIALOGUE
    experiment = _create_with_slug(
        Experiment, slug=None, text=corpus.slug, title=f"{corpus.slug} annotations", owner=owner, is_benchmark=True,
        description=f"Imported from {corpus.source_name} ({corpus.source_format}): one rater per annotator.")
    scales = [spec for spec in kinds.values() if spec["kind"] == "scale"]
    points = int(min(11, max([2, *(round(s["max"] - s["min"]) + 1 for s in scales)])))
    raters = list(dict.fromkeys(a["rater"] for _, _, answers in annotated for a in answers))
    study = _create_with_slug(
        Study, slug=None, text=corpus.slug, experiment=experiment, title=f"{corpus.slug} (imported annotations)",
        design=Design.LIKERT, design_config=design_for(Design.LIKERT).config_clean({"points": points}),
        unit=Unit.DIALOGUE if dialogue else Unit.RESPONSE, raters_per_item=max(1, len(raters)),
        items_per_assignment=max(1, len(annotated)), status=Study.Status.CLOSED, platform=Study.Platform.BENCHMARK,
        published_at=now, closed_at=now, instructions="Imported annotations (read-only).")
    criteria = _criteria_create(study, kinds)
    items = StudyItem.objects.bulk_create(
        [StudyItem(study=study, conversation_id=cid, position=i) for i, (cid, _, _) in enumerate(annotated)],
        batch_size=2000)
    if not dialogue:
        StudyItemResponse.objects.bulk_create(
            [StudyItemResponse(item=item, response_id=rid, position=0) for item, (_, rid, _) in zip(items, annotated, strict=True)],
            batch_size=2000)
    assignments = {}
    for name in raters:
        rater = rater_get_or_create(platform=Study.Platform.BENCHMARK, external_id=f"{corpus.slug}:{name}"[:120])
        assignments[name] = Assignment.objects.create(
            study=study, rater=rater, experiment=experiment, status=Assignment.Status.SUBMITTED, seed=0,
            started_at=now, submitted_at=now)
    slots, ratings = {}, {}
    for item, (conversation_id, response_id, answers) in zip(items, annotated, strict=True):
        target = {"conversation_id": conversation_id} if dialogue else {"response_id": response_id}
        for answer in answers:
            assignment = assignments[answer["rater"]]
            slots.setdefault((assignment.pk, item.pk), AssignmentItem(
                assignment=assignment, item=item, position=item.position,
                response_order=[conversation_id if dialogue else response_id], answered_at=now))
            criterion = criteria[answer["criterion"]]
            # A rater's later result for the same control (Label Studio keeps one per region) replaces the first.
            ratings[(assignment.pk, item.pk, criterion.pk)] = Rating(
                assignment=assignment, item=item, criterion=criterion, **target,
                **_rating_fields(kinds[answer["criterion"]]["kind"], answer))
    AssignmentItem.objects.bulk_create(list(slots.values()), batch_size=2000)
    Rating.objects.bulk_create(list(ratings.values()), batch_size=2000)
    return study, len(ratings)
