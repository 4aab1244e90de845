"""The crowd app's writes that are the same on every platform: configuring and publishing a
publication, syncing it, reviewing, bonuses, worker blocks. Each asks the publication's platform
object (``crowd.platforms``) for what differs; the platform modules make the calls.

Order of work, so that a platform error leaves Concord's state unchanged: check locally (refuse,
sending nothing), call the platform, then record what the platform accepted. Status changes of
Concord's assignments go through ``studies.review``.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import InvalidOperation
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from crowd import costs
from crowd.clients.mturk import MTurk
from crowd.errors import PlatformError
from crowd.models import Bonus, Platform, Publication, WorkerAssignment, WorkerBlock
from crowd.platforms import PLATFORMS, platform_of
from studies import review
from studies.models import Assignment

# --- publishing -------------------------------------------------------------------------------------


# --- review -----------------------------------------------------------------------------------------

@dataclass
class ReviewOutcome:
    done: list[WorkerAssignment] = field(default_factory=list)
    failed: list[tuple[WorkerAssignment, str]] = field(default_factory=list)
    skipped: list[tuple[WorkerAssignment, str]] = field(default_factory=list)

    def __str__(self) -> str:
        parts = [f"{len(self.done)} done"]
        if self.skipped:
            parts.append(f"{len(self.skipped)} skipped ({self.skipped[0][1]}{', ...' if len(self.skipped) > 1 else ''})")
        if self.failed:
            parts.append(f"{len(self.failed)} failed: " + "; ".join(message for _, message in self.failed[:3]))
        return ", ".join(parts)


REVIEWABLE = (WorkerAssignment.State.SUBMITTED,)


def submitted_records(publication: Publication) -> list[WorkerAssignment]:
    return list(publication.worker_assignments.filter(state=WorkerAssignment.State.SUBMITTED).select_related("assignment"))


def assignments_review(*, publication: Publication, records: Sequence[WorkerAssignment], decision: str,
                       feedback: str = "", rejection_category: str = "", client: Any = None) -> ReviewOutcome:
    """Approve or reject platform assignments, one at a time: the platform first, then Concord
    (``studies.review``). One failing call leaves that assignment unchanged in Concord and is
    reported with the call's name; the others go on."""
    if decision not in ("approve", "reject"):
        raise ValidationError({"decision": "approve or reject"})
    feedback = (feedback or "").strip()
    kind = platform_of(publication)
    if decision == "reject" and (problem := kind.rejection_problem(feedback, rejection_category)):
        raise ValidationError({"feedback": problem})
    outcome = ReviewOutcome()
    client = kind.client(publication, client)
    for record in records:
        if record.publication_id != publication.pk:
            outcome.skipped.append((record, "belongs to another publication"))
            continue
        if record.state not in REVIEWABLE:
            outcome.skipped.append((record, f"{record.external_id} is {record.state}"))
            continue
        try:
            kind.review(client, record, decision=decision, feedback=feedback, category=rejection_category)
        except PlatformError as error:
            outcome.failed.append((record, str(error)))
            continue
        with transaction.atomic():
            record.state = WorkerAssignment.State.APPROVED if decision == "approve" else WorkerAssignment.State.REJECTED
            record.platform_status = "Approved" if decision == "approve" else "Rejected"
            record.save(update_fields=["state", "platform_status", "synced_at"])
            if record.assignment is not None:
                try:
                    if decision == "approve":
                        review.assignment_approve(assignment=record.assignment)
                    else:
                        review.assignment_reject(assignment=record.assignment, reason=feedback)
                except review.ReviewError as error:
                    outcome.skipped.append((record, f"platform done; Concord: {error}"))
                    continue
        outcome.done.append(record)
    return outcome


def checked_records(publication: Publication, *, passed: bool) -> list[WorkerAssignment]:
    """Platform assignments waiting for review whose Concord assignment was submitted and scored on
    the study's attention checks / gold items (``studies.checks``), and passed (pass rate at least
    the study's minimum) or failed. Assignments with no check shown are in neither list."""
    return list(publication.worker_assignments.filter(
        state=WorkerAssignment.State.SUBMITTED, assignment__status=Assignment.Status.SUBMITTED,
        assignment__checks_shown__gt=0, assignment__checks_failed=not passed).select_related("assignment"))


def assignments_review_checked(*, publication: Publication, passed: bool, feedback: str = "",
                               rejection_category: str = "", client: Any = None) -> ReviewOutcome:
    """"Approve all that passed the quality checks" (``passed=True``) or "reject all that failed"
    (``passed=False``; feedback required on every platform, the worker sees why). Refused, sending
    nothing, when the study has no check items (there is nothing to have passed)."""
    if not publication.study.items.filter(check_kind__gt="").exists():
        raise ValidationError({"checks": "this study has no attention checks or gold items: approve or reject by hand"})
    if not passed and not (feedback or "").strip():
        raise ValidationError({"feedback": "rejecting those who failed the checks needs feedback: the worker sees why"})
    return assignments_review(publication=publication, records=checked_records(publication, passed=passed),
                              decision="approve" if passed else "reject", feedback=feedback,
                              rejection_category=rejection_category, client=client)


# --- bonuses ----------------------------------------------------------------------------------------

def bonus_create(*, publication: Publication, assignment: Assignment, amount, reason: str, user=None) -> Bonus:
    """Record a bonus to send (stored before anything is sent: its id is the idempotency token)."""
    errors = {}
    try:
        value = costs.money(amount)
        if value <= 0:
            errors["amount"] = "a bonus must be more than 0"
    except (InvalidOperation, ValueError, TypeError):
        errors["amount"] = f"{amount!r} is not an amount"
    if not (reason or "").strip():
        errors["reason"] = "the worker sees the reason; give one"
    if assignment.study_id != publication.study_id:
        errors["assignment"] = "this assignment is not part of the study"
    for key, problem in platform_of(publication).bonus_problems(publication, assignment).items():
        errors.setdefault(key, problem)
    if errors:
        raise ValidationError(errors)
    return Bonus.objects.create(publication=publication, assignment=assignment, amount=value,
                                reason=reason.strip()[:500], created_by=user)


def bonuses_send(*, bonuses: Iterable[Bonus]) -> list[Bonus]:
    """Send pending or failed bonuses, each platform's rows through its own call (MTurk: one
    idempotent call per bonus; Prolific: one bulk bonus per study, not paid twice blindly)."""
    rows = [b for b in bonuses if b.status != Bonus.Status.SENT]
    for key, kind in PLATFORMS.items():
        if mine := [b for b in rows if b.publication.platform == key]:
            kind.bonuses_send(mine)
    return list(Bonus.objects.filter(pk__in=[b.pk for b in rows]))


# --- workers ----------------------------------------------------------------------------------------

def worker_block(*, worker_id: str, reason: str, sandbox: bool, client: MTurk | None = None) -> WorkerBlock:
    """Block a worker on MTurk (they can no longer take this requester's HITs) and in Concord."""
    worker_id, reason = (worker_id or "").strip(), (reason or "").strip()
    if not worker_id or not reason:
        raise ValidationError({"reason" if worker_id else "worker_id": "a block needs a worker id and a reason"})
    platform_of(Platform.MTURK).worker_block(client or MTurk(sandbox=sandbox), worker_id, reason)
    with transaction.atomic():
        block, _ = WorkerBlock.objects.update_or_create(
            sandbox=sandbox, worker_id=worker_id, defaults={"reason": reason[:500], "active": True, "lifted_at": None})
        review.rater_blocked_set(platform=Platform.MTURK, external_id=worker_id, blocked=True)
    return block


def worker_unblock(*, worker_id: str, reason: str, sandbox: bool, client: MTurk | None = None) -> WorkerBlock | None:
    worker_id = (worker_id or "").strip()
    if not worker_id:
        raise ValidationError({"worker_id": "which worker?"})
    platform_of(Platform.MTURK).worker_unblock(client or MTurk(sandbox=sandbox), worker_id, (reason or "").strip())
    with transaction.atomic():
        WorkerBlock.objects.filter(sandbox=sandbox, worker_id=worker_id).update(active=False, lifted_at=timezone.now())
        review.rater_blocked_set(platform=Platform.MTURK, external_id=worker_id, blocked=False)
    return WorkerBlock.objects.filter(sandbox=sandbox, worker_id=worker_id).first()


def workers_notify(*, worker_ids: Sequence[str], subject: str, message: str, sandbox: bool,
                   client: MTurk | None = None) -> list[dict]:
    """E-mail workers through MTurk (100 per call, MTurk's limit); returns the per-worker failures."""
    ids = sorted({w.strip() for w in worker_ids if w and w.strip()})
    if not ids or not (subject or "").strip() or not (message or "").strip():
        raise ValidationError({"message": "a notification needs workers, a subject and a message"})
    return platform_of(Platform.MTURK).workers_notify(client or MTurk(sandbox=sandbox), ids, subject.strip(),
                                                      message.strip())
