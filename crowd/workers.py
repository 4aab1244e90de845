"""The workers of a publication, beyond one submission: blocking and unblocking them, and messaging
them. Only workers who worked for the publication (seen on the platform, or entered Concord
through it) can be named; anyone else is refused, naming them, with nothing sent.

A block is the researcher's: it keeps the worker out of the studies of every experiment that the
publication's owner owns (``studies.rating.review.rater_block_set``; the entry refuses them there),
not out of other researchers' studies. So Concord does not use MTurk's account-wide
``CreateWorkerBlock`` (every researcher on the requester account would lose the worker); a
Prolific block also joins the blocklist of the owner's next Prolific studies
(``crowd.platforms.prolific``).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.core.exceptions import ValidationError

from crowd.models import Publication
from crowd.platforms import platform_of
from crowd.scope import concord_assignments, worker_key
from studies.models import RaterBlock
from studies.rating import review


def publication_workers(publication: Publication) -> set[str]:
    """Worker ids of everyone who worked for the publication: seen on the platform by a sync, or
    holding a Concord assignment the publication brought in."""
    seen = set(publication.worker_assignments.exclude(worker_id="").values_list("worker_id", flat=True))
    return seen | {a.rater.external_id for a in concord_assignments(publication)}


def _own_workers(publication: Publication, worker_ids: Sequence[str], field: str) -> list[str]:
    """The publication's workers as stored, for ids as typed (any case or Unicode form of the same
    id, ``scope.worker_key``); ValidationError on ``field`` names every id that is not one of them."""
    known = {worker_key(w): w for w in publication_workers(publication)}
    strangers = sorted({w for w in worker_ids if worker_key(w) not in known})
    if strangers:
        raise ValidationError({field: f"{', '.join(strangers)} {'has' if len(strangers) == 1 else 'have'} not worked "
                                      f"for this publication ({publication}); only its own workers can be named"})
    return sorted({known[worker_key(w)] for w in worker_ids})


def worker_block(*, publication: Publication, worker_id: str, reason: str, user: Any = None) -> RaterBlock:
    """Block a worker of this publication from every study of its owner (the researcher's block)."""
    worker_id, reason = (worker_id or "").strip(), (reason or "").strip()
    if not worker_id or not reason:
        raise ValidationError({"reason" if worker_id else "worker_id": "a block needs a worker id and a reason"})
    [worker_id] = _own_workers(publication, [worker_id], "worker_id")
    return review.rater_block_set(owner=_owner(publication, user), platform=publication.platform,
                                  external_id=worker_id, blocked=True, reason=reason)


def worker_unblock(*, publication: Publication, worker_id: str, reason: str = "", user: Any = None) -> RaterBlock | None:
    """Lift the owner's block of a worker of this publication (another researcher's block stays)."""
    worker_id = (worker_id or "").strip()
    if not worker_id:
        raise ValidationError({"worker_id": "which worker?"})
    [worker_id] = _own_workers(publication, [worker_id], "worker_id")
    return review.rater_block_set(owner=_owner(publication, user), platform=publication.platform,
                                  external_id=worker_id, blocked=False)


def _owner(publication: Publication, user: Any):
    """Whose block: the experiment's owner (staff acting on a publication block for its owner)."""
    owner = publication.study.experiment.owner
    if owner is None and user is None:
        raise ValidationError({"publication": "this study's experiment has no owner to block on behalf of"})
    return owner or user


def workers_notify(*, publication: Publication, worker_ids: Sequence[str], subject: str, message: str,
                   client: Any = None) -> list[dict]:
    """Message workers of this publication through its platform; returns the per-worker failures."""
    ids = sorted({w.strip() for w in worker_ids if w and w.strip()})
    if not ids or not (subject or "").strip() or not (message or "").strip():
        raise ValidationError({"message": "a notification needs workers, a subject and a message"})
    ids = _own_workers(publication, ids, "worker_ids")
    platform = platform_of(publication)
    return platform.workers_notify(platform.client(publication, client), ids, subject.strip(), message.strip())
