"""Reviewing what raters submitted on a platform: approve or reject one, many, all submitted, or
all that passed (failed) the quality checks. The platform first (its object in
``crowd.platforms`` says what a rejection needs and makes the call), then Concord's assignment
through ``studies.rating.review``."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from crowd.errors import PlatformError
from crowd.models import Publication, WorkerAssignment
from crowd.platforms import platform_of
from studies.models import Assignment
from studies.rating import review


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
    (``studies.rating.review``). One failing call leaves that assignment unchanged in Concord and is
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
    the study's attention checks / gold items (``studies.rating.checks``), and passed (pass rate at least
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
