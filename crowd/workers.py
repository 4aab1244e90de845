"""Workers on a platform, beyond one submission: blocking and unblocking them, and messaging them.
The platform object (``crowd.platforms``) makes the call; Concord records the block and refuses the
rater too (``studies.rating.review.rater_blocked_set``).
"""
from __future__ import annotations

from collections.abc import Sequence

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from crowd.clients.mturk import MTurk
from crowd.models import Platform, WorkerBlock
from crowd.platforms import platform_of
from studies.rating import review


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
