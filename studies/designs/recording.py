"""The shared answer service every design records through, and the rater path's cached reads.

``answer_slot_lock`` does the checks every kind of answer shares (timings finite and not negative,
the assignment still started, the item part of it) and locks the assignment row, so concurrent submits
of one assignment run one after the other; ``slot_answered`` marks the slot answered with the active
time and clears its draft. ``StudyDesign.record`` runs a design's ``answers_store`` between the two, in
one transaction. The criteria and response texts a rater page reads on every item are cached here.
"""
from __future__ import annotations

import math
from collections.abc import Iterable

from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.utils import timezone

from studies.models import Assignment, AssignmentItem, Criterion, Response, Study

RATER_CACHE_SECONDS = 300


def answer_slot_lock(*, assignment: Assignment, item_id: int, seconds: float | None,
                     active_seconds: float | None) -> AssignmentItem:
    """The slot an answer is for, read with its assignment row locked (concurrent submits of one
    assignment run one after the other), after the checks every kind of answer shares (ratings,
    best-worst picks, pairwise choices): timings are finite and not negative, the assignment is still
    started, and the item is part of it. Must run inside a transaction."""
    for name, given in (("seconds", seconds), ("active_ms", active_seconds)):
        if given is not None and (isinstance(given, bool) or not isinstance(given, (int, float))
                                  or (isinstance(given, float) and not math.isfinite(given)) or given < 0):
            raise ValidationError({name: f"must be a finite number of at least 0, got {given!r}"})
    slot = (AssignmentItem.objects.select_for_update(of=("assignment",)).select_related("assignment__study")
            .filter(assignment_id=assignment.pk, item_id=item_id).first())
    current = slot.assignment if slot else Assignment.objects.select_related("study").get(pk=assignment.pk)
    if current.status != Assignment.Status.STARTED:
        from studies.services import StudyStateError

        raise StudyStateError(f"this assignment is already {current.status}")
    if slot is None:
        raise ValidationError({"item": "this item is not part of the assignment"})
    return slot


def slot_answered(slot: AssignmentItem, *, active_seconds: float | None) -> None:
    """Mark the slot answered now (its answers were just stored), with the active time, draft cleared."""
    slot.answered_at = timezone.now()
    slot.active_seconds = active_seconds if active_seconds is not None else slot.active_seconds
    slot.draft = {}
    slot.save(update_fields=["answered_at", "active_seconds", "draft"])


def study_criteria(study: Study) -> list[Criterion]:
    """The study's criteria in order, cached per published study: the rater pages need them on every
    item GET and POST, and they are fixed when the study is created (the key carries published_at,
    and the timeout bounds how long an admin's edit takes to show). Drafts are read each time."""
    if study.published_at is None:
        return list(study.criteria.all())
    key = f"concord:criteria:{study.pk}:{study.published_at.timestamp()}"
    criteria = cache.get(key)
    if criteria is None:
        criteria = list(study.criteria.all())
        cache.set(key, criteria, timeout=RATER_CACHE_SECONDS)
    return criteria


def item_response_texts(item_id: int, response_ids: Iterable[int]) -> dict[int, str]:
    """Response id -> text for one study item's responses, cached per item (responses are never
    edited after import; every rater of the item reads the same texts)."""
    wanted = list(response_ids)
    key = f"concord:item-texts:{item_id}"
    texts = cache.get(key)
    if texts is None or any(rid not in texts for rid in wanted):
        texts = dict(Response.objects.filter(pk__in=wanted).order_by().values_list("pk", "text"))
        cache.set(key, texts, timeout=RATER_CACHE_SECONDS)
    return texts
