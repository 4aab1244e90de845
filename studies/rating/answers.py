"""The rater's answers: consent, opening an item, autosaved drafts, the one slot lock every design records through, and submitting the assignment with its completion code."""
from __future__ import annotations

import math
import secrets
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from studies import designs, dialogue_studies, jobs
from studies.authoring.services import study_close_if_done
from studies.errors import StudyStateError
from studies.models import (
    Assignment,
    AssignmentItem,
    Design,
    Rating,
    Study,
)
from studies.rating import checks, platforms, selectors

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
    cleaned = {}
    for key, value in draft.items():
        name = str(key)
        if len(name) > 80 or (problem := platforms.text_problem(name)):
            raise ValidationError({"draft": f"a field name {problem or 'is longer than 80 characters'}"})
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ValidationError({name: "must be text or a number"})
        if isinstance(value, float) and not math.isfinite(value):
            raise ValidationError({name: "must be a finite number"})
        # A value is a number or a choice; a pairwise reason (studies.pairwise_rater) is free text.
        text = str(value)[:DRAFT_REASON_MAX if name.startswith("reason-") else 20]
        if problem := platforms.text_problem(text):
            raise ValidationError({name: problem})
        cleaned[name] = text
    AssignmentItem.objects.filter(pk=slot.pk).update(draft=cleaned)


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
        raise StudyStateError(f"this assignment is already {current.status}")
    if slot is None:
        raise ValidationError({"item": "this item is not part of the assignment"})
    return slot


@transaction.atomic
def ratings_record(*, assignment: Assignment, item_id: int, answers: Mapping[str, Mapping[int, Any]],
                   seconds: float | None = None, active_seconds: float | None = None) -> int:
    """Store one item's answers. Values are checked against the study's design (Likert points,
    magnitude range, complete BWS ranking without ties); any problem raises ValidationError keyed
    ``<criterion>.<response id>`` and nothing is stored. Storing the same answers twice stores them
    once; changed answers replace the earlier ones. Returns the number of ratings now stored.

    Four statements on the rater's hot path: the slot read together with its assignment, which is
    locked (concurrent submits of one assignment run one after the other); the criteria come from
    the cache (selectors.study_criteria); a first answer is one upsert on the unique
    (assignment, response, criterion): a double submit that waited on the lock may have read the
    slot as it was before the first one committed (PostgreSQL re-reads only the locked row), and
    still stores one rating each; a changed answer reads the stored ones and writes only what changed."""
    slot = answer_slot_lock(assignment=assignment, item_id=item_id, seconds=seconds, active_seconds=active_seconds)
    assignment, study = slot.assignment, slot.assignment.study
    criteria = {c.name: c for c in selectors.study_criteria(study)}
    shown = set(slot.response_order)
    errors: dict[str, str] = {}
    for name in criteria:
        if name not in answers:
            errors[name] = "answer this question for every response"
    for name, per_response in answers.items():
        criterion = criteria.get(name)
        if criterion is None:
            errors[name] = "unknown criterion"
            continue
        if set(per_response) != shown:
            errors[name] = "answer for every response shown (and only those)"
            continue
        if study.design == Design.BWS:
            problem = designs.ranks_problem([per_response[r] for r in slot.response_order], len(shown))
            if problem:
                errors[name] = problem
            continue
        for response_id, value in per_response.items():
            problem = designs.value_problem(study.design, study.design_config, value,
                                            scale_min=criterion.scale_min, scale_max=criterion.scale_max)
            if problem:
                errors[f"{name}.{response_id}"] = problem
    if errors:
        raise ValidationError(errors)
    is_rank = study.design == Design.BWS
    target = dialogue_studies.rating_target  # response, or conversation in a dialogue study
    given = [(criteria[name], response_id, (None, int(raw)) if is_rank else (float(raw), None))
             for name, per_response in answers.items() for response_id, raw in per_response.items()]
    changed = True
    if slot.answered_at is None:
        # No ratings for this item yet (ratings and answered_at are written together).
        Rating.objects.bulk_create(
            [Rating(assignment=assignment, item_id=item_id, **target(study, response_id), criterion=criterion,
                    value=value, rank=rank, seconds=seconds) for criterion, response_id, (value, rank) in given],
            update_conflicts=True, unique_fields=dialogue_studies.rating_unique_fields(study),
            update_fields=["value", "rank", "seconds", "updated_at"])
    else:
        existing = {(r.target_id, r.criterion_id): r
                    for r in Rating.objects.filter(assignment=assignment, item_id=item_id)}
        create, update = [], []
        for criterion, response_id, (value, rank) in given:
            old = existing.get((response_id, criterion.pk))
            if old is None:
                create.append(Rating(assignment=assignment, item_id=item_id, **target(study, response_id),
                                     criterion=criterion, value=value, rank=rank, seconds=seconds))
            elif (old.value, old.rank) != (value, rank):
                old.value, old.rank, old.seconds = value, rank, seconds
                old.updated_at = timezone.now()  # bulk_update does not apply auto_now
                update.append(old)
        Rating.objects.bulk_create(create)
        if update:
            Rating.objects.bulk_update(update, ["value", "rank", "seconds", "updated_at"])
        changed = bool(create or update)
    if changed:
        slot.answered_at = timezone.now()
        slot.active_seconds = active_seconds if active_seconds is not None else slot.active_seconds
        slot.draft = {}
        slot.save(update_fields=["answered_at", "active_seconds", "draft"])
    return len(given)  # validation asked for every criterion x every shown response


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
