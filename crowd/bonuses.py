"""Bonuses: a row is recorded before anything is sent (its id is the idempotency token), then each
platform's rows go out through its own call (``crowd.platforms``: MTurk one idempotent call per
bonus; Prolific one bulk bonus per study, never paid twice blindly)."""
from __future__ import annotations

from collections.abc import Iterable
from decimal import InvalidOperation

from django.core.exceptions import ValidationError

from crowd import costs
from crowd.models import Bonus, Publication
from crowd.platforms import PLATFORMS, platform_of
from studies.models import Assignment


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
