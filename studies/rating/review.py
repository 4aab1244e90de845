"""Concord-side review of assignments: approve, reject, abandon, screen out, and expire stale ones
(periodically and on access).

These are the only writes that move an assignment past ``submitted`` (or out of ``started`` without
a submission). The crowd app calls them after the platform has accepted the same decision, so a
platform error leaves Concord's state as it was. An abandoned or rejected assignment's items go back
to the pool by themselves: ``services.assignment_start`` counts only assignments that are neither.
"""
from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from studies.models import Assignment, Rater, RaterBlock, Study
from studies.rating import platforms

TIME_LIMIT_REASON = "past the time limit"
EXPIRED = "expired"  # platform_data["abandon_kind"] of an assignment that ran out of time


class ReviewError(Exception):
    """A review decision that the assignment's status does not allow."""


def _locked(assignment: Assignment) -> Assignment:
    return Assignment.objects.select_for_update().get(pk=assignment.pk)


def _note(assignment: Assignment, key: str, value: object) -> None:
    assignment.platform_data = {**assignment.platform_data, key: value}


@transaction.atomic
def assignment_approve(*, assignment: Assignment) -> Assignment:
    """submitted -> approved. Approving an approved assignment again changes nothing."""
    assignment = _locked(assignment)
    if assignment.status == Assignment.Status.APPROVED:
        return assignment
    if assignment.status != Assignment.Status.SUBMITTED:
        raise ReviewError(f"assignment {assignment.pk} is {assignment.status}; only a submitted one can be approved")
    assignment.status = Assignment.Status.APPROVED
    assignment.save(update_fields=["status"])
    return assignment


@transaction.atomic
def assignment_reject(*, assignment: Assignment, reason: str) -> Assignment:
    """submitted (or started) -> rejected, with the reason the worker was given. Its items return to
    the pool, so another rater replaces this one."""
    reason = (reason or "").strip()
    if not reason:
        raise ReviewError("a rejection needs a reason (the worker sees it)")
    assignment = _locked(assignment)
    if assignment.status == Assignment.Status.REJECTED:
        return assignment
    if assignment.status not in (Assignment.Status.SUBMITTED, Assignment.Status.STARTED):
        raise ReviewError(f"assignment {assignment.pk} is {assignment.status}; it cannot be rejected")
    assignment.status = Assignment.Status.REJECTED
    _note(assignment, "review_reason", reason[:1000])
    assignment.save(update_fields=["status", "platform_data"])
    return assignment


@transaction.atomic
def assignment_abandon(*, assignment: Assignment, reason: str, expired: bool = False) -> Assignment:
    """started -> abandoned (returned on the platform, timed out, or its HIT expired). Its items
    return to the pool. An assignment that was submitted or reviewed is left as it is.
    ``expired``: it ran out of time (the rater's page then says so)."""
    assignment = _locked(assignment)
    if assignment.status != Assignment.Status.STARTED:
        return assignment
    assignment.status = Assignment.Status.ABANDONED
    _note(assignment, "abandon_reason", (reason or "abandoned")[:300])
    if expired:
        _note(assignment, "abandon_kind", EXPIRED)
    assignment.save(update_fields=["status", "platform_data"])
    return assignment


DEFAULT_TIME_LIMIT_MINUTES = 120  # an opened link holds a place this long unless the researcher sets a limit


def time_limit_minutes(study: Study) -> float:
    """How long a started assignment holds its place: the study's ``platform_config.time_limit_minutes``,
    else ``DEFAULT_TIME_LIMIT_MINUTES`` (an abandoned open left the study "full" for good before)."""
    limit = (study.platform_config or {}).get("time_limit_minutes")
    try:
        return float(limit) if limit else float(DEFAULT_TIME_LIMIT_MINUTES)
    except (TypeError, ValueError):
        return float(DEFAULT_TIME_LIMIT_MINUTES)


def assignment_expire_if_due(*, assignment: Assignment) -> Assignment:
    """Abandon the assignment now if it is started and past its study's time limit
    (``platform_config.time_limit_minutes``): the on-access half of ``assignments_expire_stale``."""
    minutes = time_limit_minutes(assignment.study)
    if assignment.status != Assignment.Status.STARTED or minutes <= 0 \
            or assignment.started_at >= timezone.now() - timedelta(minutes=minutes):
        return assignment
    abandoned = assignment_abandon(assignment=assignment, reason=f"{TIME_LIMIT_REASON} of {minutes:g} minutes",
                                   expired=True)
    assignment.status, assignment.platform_data = abandoned.status, abandoned.platform_data
    return assignment


@transaction.atomic
def assignment_screen_out(*, assignment: Assignment, reason: str) -> Assignment:
    """Screen a rater out (failed attention checks or a screening question; the hook for the
    quality-control checks). A started assignment is abandoned, so its items go back to the pool;
    a submitted one stays submitted for the reviewer. Either way the rater's completion code
    becomes the study's ``platform_config.screened_out_code`` when the researcher set one (Prolific
    then pays or returns them by its own rule for that code); without one they are asked to return
    the submission. Screening out twice changes nothing."""
    reason = (reason or "").strip()
    if not reason:
        raise ReviewError("screening out needs a reason (kept for the reviewer)")
    assignment = Assignment.objects.select_for_update().select_related("study").get(pk=assignment.pk)
    if assignment.screened_out:
        return assignment
    if assignment.status not in (Assignment.Status.STARTED, Assignment.Status.SUBMITTED):
        raise ReviewError(f"assignment {assignment.pk} is {assignment.status}; it cannot be screened out")
    _note(assignment, "screened_out", True)
    _note(assignment, "screen_reason", reason[:300])
    fields = ["platform_data"]
    if assignment.status == Assignment.Status.STARTED:
        assignment.status = Assignment.Status.ABANDONED
        _note(assignment, "abandon_reason", f"screened out: {reason[:280]}")
        fields.append("status")
    code = platforms.screened_out_code(assignment.study.platform_config)
    if code or assignment.status == Assignment.Status.ABANDONED:
        assignment.completion_code = code
        fields.append("completion_code")
    assignment.save(update_fields=fields)
    return assignment


def assignments_expire_stale(*, now=None, studies: Iterable[Study] | None = None) -> int:
    """Abandon every started assignment older than its study's time limit
    (``time_limit_minutes``: the study's, or the default).
    Returns how many were abandoned. One transaction per study, so a long run holds no big lock."""
    now = now or timezone.now()
    candidates = Study.objects.filter(assignments__status=Assignment.Status.STARTED).distinct()
    if studies is not None:
        candidates = candidates.filter(pk__in=[s.pk for s in studies])
    total = 0
    for study in candidates:
        minutes = time_limit_minutes(study)
        if minutes <= 0:
            continue
        cutoff = now - timedelta(minutes=minutes)
        with transaction.atomic():
            # skip_locked: an assignment being submitted right now is left to its own request
            # (and no lock-order deadlock with a submit that closes the study).
            stale = list(Assignment.objects.select_for_update(skip_locked=True).filter(
                study=study, status=Assignment.Status.STARTED, started_at__lt=cutoff))
            for assignment in stale:
                assignment.status = Assignment.Status.ABANDONED
                _note(assignment, "abandon_reason", f"{TIME_LIMIT_REASON} of {minutes:g} minutes")
                _note(assignment, "abandon_kind", EXPIRED)
            Assignment.objects.bulk_update(stale, ["status", "platform_data"])
        total += len(stale)
    return total


def rater_blocked_set(*, platform: str, external_id: str, blocked: bool) -> int:
    """Mark a platform identity as blocked (or not): a blocked rater cannot start new assignments.
    Returns how many raters changed (0 when Concord has not seen this worker yet)."""
    return Rater.objects.filter(platform=platform, external_id=external_id.strip()).exclude(blocked=blocked) \
        .update(blocked=blocked)


@transaction.atomic
def rater_block_set(*, owner, platform: str, external_id: str, blocked: bool, reason: str = "") -> RaterBlock | None:
    """Block a rater from the studies of every experiment ``owner`` owns (or lift that block): the
    entry refuses them there (``entry.rater_blocked_for``), other researchers' studies do not see it.
    Blocking needs a reason; lifting a block that does not exist changes nothing and returns None."""
    external_id = external_id.strip()
    if blocked:
        if not reason.strip():
            raise ValidationError({"reason": "a block needs a reason"})
        rater, _ = Rater.objects.get_or_create(platform=platform, external_id=external_id)
        block, _ = RaterBlock.objects.update_or_create(owner=owner, rater=rater,
                                                       defaults={"reason": reason.strip()[:500], "lifted_at": None})
        return block
    block = RaterBlock.objects.filter(owner=owner, rater__platform=platform, rater__external_id=external_id).first()
    if block is not None and block.lifted_at is None:
        block.lifted_at = timezone.now()
        block.save(update_fields=["lifted_at"])
    return block
