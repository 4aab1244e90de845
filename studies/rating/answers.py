"""The rater's answers: consent, opening an item, autosaved drafts, the one slot lock every design records through, and submitting the assignment with its completion code."""
from __future__ import annotations

import math
import secrets
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from studies import jobs
from studies.designs import design_for, kind_for
from studies.designs.rater_reads import study_criteria
from studies.errors import StudyStateError
from studies.models import (
    Assignment,
    AssignmentItem,
    Study,
)
from studies.rating import checks, platforms
from studies.rating.closing import study_close_if_done

DRAFT_REASON_MAX = 2000


DRAFT_MAX_FIELDS = 200


def assignment_consent(*, assignment: Assignment) -> Assignment:
    """Record that the rater read the instructions and agreed (once)."""
    Assignment.objects.filter(pk=assignment.pk, consented_at__isnull=True).update(consented_at=timezone.now())
    assignment.refresh_from_db(fields=["consented_at"])
    return assignment


def assignment_item_open(*, slot: AssignmentItem) -> AssignmentItem:
    """Note when the rater first saw an item (server time); later visits keep the first time."""
    if slot.started_at is None:
        now = timezone.now()
        if AssignmentItem.objects.filter(pk=slot.pk, started_at__isnull=True).update(started_at=now):
            slot.started_at = now  # ours: no second read
        else:  # another request was first; keep its time
            slot.refresh_from_db(fields=["started_at"])
    return slot


def assignment_item_draft_save(*, slot: AssignmentItem, draft: Mapping[str, Any]) -> None:
    """Autosave what the rater has typed so far (any shape the page sends, bounded in size); the
    ratings themselves are stored only by ratings_record."""
    if slot.assignment.status != Assignment.Status.STARTED:
        raise StudyStateError(f"this assignment is already {slot.assignment.status}")
    if len(draft) > DRAFT_MAX_FIELDS:
        raise ValidationError({"draft": f"at most {DRAFT_MAX_FIELDS} fields"})
    cleaned: dict[str, Any] = {}
    study = slot.assignment.study
    free_text = design_for(study).free_text_prefixes  # e.g. a pairwise reason
    # Free-text criteria (studies.designs.kinds) and any criterion's "Why?" box keep their full text.
    long_criteria = {c.name for c in study_criteria(study) if kind_for(c).long_text}
    for key, value in draft.items():
        name = str(key)
        problem = "is longer than 80 characters" if len(name) > 80 else platforms.text_problem(name)
        if problem:
            raise ValidationError({"draft": f"a field name {problem}"})
        if isinstance(value, list):  # a multi-label row's ticked labels
            if len(value) > 20 or not all(isinstance(v, str) and len(v) <= 60 for v in value):
                raise ValidationError({name: "a list holds at most 20 labels of at most 60 characters"})
            if any(problem := platforms.text_problem(v) for v in value):
                raise ValidationError({name: problem})
            cleaned[name] = list(value)
            continue
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ValidationError({name: "must be text or a number"})
        if isinstance(value, float) and not math.isfinite(value):
            raise ValidationError({name: "must be a finite number"})
        # A value is a number or a choice; some fields are free text (the design's ``free_text_prefixes``).
        long = name.startswith(free_text) or name.endswith(".rationale") \
            or name.partition("-")[2] in long_criteria
        text = str(value)[:DRAFT_REASON_MAX if long else 20]
        if problem := platforms.text_problem(text):
            raise ValidationError({name: problem})
        cleaned[name] = text
    AssignmentItem.objects.filter(pk=slot.pk).update(draft=cleaned)


# No item page is open for a week; a longer time is a forged field (the audit stored 9e307 ms as 9e304 s),
# and it would swamp every mean time in the report.
MAX_ITEM_SECONDS = 7 * 24 * 3600


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
        if name == "active_ms" and given is not None and given > MAX_ITEM_SECONDS:  # seconds: the server's clock
            raise ValidationError({name: f"must be at most {MAX_ITEM_SECONDS // 3600} hours for one item"})
    # Unordered (one row at most): the default orderings would join the experiment table to sort it. The
    # study the caller already holds (the rater's page read it with the assignment) is reused: only the
    # assignment row is locked, so reading the study again here gave nothing fresher.
    known = assignment.study if Assignment.study.is_cached(assignment) else None
    related = ("assignment",) if known is not None else ("assignment__study",)
    slot = next(iter(AssignmentItem.objects.select_for_update(of=("assignment",)).select_related(*related)
                     .filter(assignment_id=assignment.pk, item_id=item_id).order_by()[:1]), None)
    if slot is not None and known is not None:
        slot.assignment.study = known
    current = slot.assignment if slot else Assignment.objects.select_related("study").get(pk=assignment.pk)
    if current.status != Assignment.Status.STARTED:
        raise StudyStateError(f"this assignment is already {current.status}")
    if slot is None:
        raise ValidationError({"item": "this item is not part of the assignment"})
    return slot


@transaction.atomic
def ratings_record(*, assignment: Assignment, item_id: int, answers: Mapping[str, Any],
                   seconds: float | None = None, active_seconds: float | None = None) -> int:
    """Store one item's answers, whatever the study's design: the one answer service every design
    records through. The shared part is here: the slot read with its assignment locked and the timing
    checks (``answer_slot_lock``), the criteria from the cache, and the slot marked answered (with
    the active time, its draft cleared) when something changed; the design checks and stores the
    answers themselves (``StudyDesign.answers_store``: Rating rows, best-worst picks, A/B choices).
    Any problem raises ValidationError keyed by form field or criterion (``<criterion>.<target id>``
    for a rating) and nothing is stored. Storing the same answers twice stores them once; changed
    answers replace the earlier ones. Returns the number of answers now stored.

    Four statements on the rater's hot path for a rating design: the slot read together with its
    assignment, which is locked (concurrent submits of one assignment run one after the other); the
    criteria come from the cache (``rater_reads.study_criteria``); a first answer is one upsert on the
    unique key (see ``studies.designs.ratings``); the slot's update."""
    slot = answer_slot_lock(assignment=assignment, item_id=item_id, seconds=seconds, active_seconds=active_seconds)
    study = slot.assignment.study
    stored, changed = design_for(study).answers_store(slot=slot, answers=answers, criteria=study_criteria(study),
                                                      seconds=seconds)
    if changed:
        slot.answered_at = timezone.now()
        slot.active_seconds = active_seconds if active_seconds is not None else slot.active_seconds
        slot.draft = {}
        slot.save(update_fields=["answered_at", "active_seconds", "draft"])
    return stored


def completion_code_for(assignment: Assignment) -> str:
    """The code a rater takes back to the platform. Prolific checks the study's fixed codes
    (``platform_config.completion_code`` or the ``cc`` of its ``completion_url``; ``screened_out_code`` for a rater screened out, e.g. by
    failed attention checks, when the researcher set one), so every Prolific rater gets the same
    code; elsewhere (MTurk, invites) each assignment gets its own random code, which a reviewer can
    match to one person. A Prolific study without a configured code falls back to a random one."""
    config = assignment.study.platform_config or {}
    if assignment.rater.platform == Study.Platform.PROLIFIC:
        if assignment.screened_out and (code := platforms.screened_out_code(config)):
            return code
        if code := platforms.prolific_completion_code(config):
            return code[:40]
    return f"CC-{secrets.token_hex(4).upper()}"


@transaction.atomic
def assignment_submit(*, assignment: Assignment, questionnaire: Mapping[str, Any] | None = None,
                      total_seconds: float | None = None) -> Assignment:
    """Finish an assignment: every item answered; store the questionnaire on the rater; issue the
    completion code (``completion_code_for``). Submitting again returns the same assignment and
    code. The study closes itself once every item has its raters (``study_close_if_done``)."""
    assignment = Assignment.objects.select_for_update().select_related("rater", "study").get(pk=assignment.pk)
    if assignment.status != Assignment.Status.STARTED:
        return assignment
    unanswered = assignment.assignment_items.filter(answered_at__isnull=True).count()
    if unanswered:
        raise ValidationError({"items": f"{unanswered} item(s) are not answered yet"})
    now = timezone.now()
    if questionnaire:
        rater = assignment.rater
        answers = dict(questionnaire)
        for key in ("prior_rating_experience", "prior_agent_experience"):
            if key in answers:
                setattr(rater, key, answers.pop(key))
        rater.questionnaire = {**rater.questionnaire, **answers}
        rater.save(update_fields=["prior_rating_experience", "prior_agent_experience", "questionnaire"])
    assignment.status = Assignment.Status.SUBMITTED
    assignment.submitted_at = now
    assignment.total_seconds = total_seconds if total_seconds is not None else (now - assignment.started_at).total_seconds()
    # Checks first: a rater who failed them gets the study's screened-out code where one is set.
    checks.assignment_checks_score(assignment=assignment)
    assignment.completion_code = completion_code_for(assignment)
    assignment.save(update_fields=["status", "submitted_at", "total_seconds", "completion_code"])
    study_close_if_done(study=assignment.study, now=now)
    if (assignment.study.live_config or {}).get("close_when_reached"):  # the study came with the row lock
        jobs.queue_after_commit("studies.tasks.study_close_if_reliable_run", assignment.study_id, robust=True)
    return assignment
