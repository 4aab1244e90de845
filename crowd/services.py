"""The crowd app's writes that are the same on every platform: configuring and publishing a
publication, syncing it, reviewing, bonuses, worker blocks. Each asks the publication's platform
object (``crowd.platforms``) for what differs; the platform modules make the calls.

Order of work, so that a platform error leaves Concord's state unchanged: check locally (refuse,
sending nothing), call the platform, then record what the platform accepted. Status changes of
Concord's assignments go through ``studies.review``.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import InvalidOperation

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from crowd import costs
from crowd.clients.mturk import MTurk
from crowd.models import Bonus, Platform, Publication, WorkerBlock
from crowd.platforms import PLATFORMS, platform_of
from studies import review
from studies.models import Assignment

# --- publishing -------------------------------------------------------------------------------------


# --- review -----------------------------------------------------------------------------------------


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
