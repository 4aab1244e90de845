"""A reviewer's decisions about one rater of a study, recorded with who, when and why.

``keep`` and ``exclude`` are verdicts on the rater's answers: one stands at a time (a new one reverts
the old), and an active exclusion sets ``Assignment.excluded`` and its reason, which every report,
export and the live panel read (they leave the rater out and say who and why). Both are reversible.
``approve``, ``reject`` and ``bonus`` are sent to the platform by the crowd app first
(``crowd.rater_decisions``), which records them here once the platform has accepted; they have left
Concord, so reverting them here is refused with the reason.
"""
from __future__ import annotations

from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from studies.models import Assignment, RaterDecision

VERDICTS = (RaterDecision.Kind.KEEP, RaterDecision.Kind.EXCLUDE)
MAX_REASON = 1000


@transaction.atomic
def rater_decision_record(*, assignment: Assignment, kind: str, reason: str, user,
                          amount: Decimal | None = None, platform_note: str = "") -> RaterDecision:
    """Record a decision. Every decision needs a reason; a bonus an amount above 0. A verdict equal to
    the standing one (same kind and reason: a double submit) returns it and writes nothing."""
    reason = (reason or "").strip()
    errors = {}
    if kind not in RaterDecision.Kind.values:
        errors["kind"] = f"one of {', '.join(RaterDecision.Kind.values)}, not {kind!r}"
    if not reason:
        errors["reason"] = "say why (kept with the decision and shown in reports)"
    if kind == RaterDecision.Kind.BONUS and (amount is None or amount <= 0):
        errors["amount"] = "a bonus must be more than 0"
    if errors:
        raise ValidationError(errors)
    assignment = Assignment.objects.select_for_update().get(pk=assignment.pk)
    if kind in VERDICTS:
        standing = assignment.decisions.filter(kind__in=VERDICTS, reverted_at__isnull=True).first()
        if standing is not None and standing.kind == kind and standing.reason == reason[:MAX_REASON]:
            return standing
        if standing is not None:
            _revert(standing, user)
        _excluded_set(assignment, kind == RaterDecision.Kind.EXCLUDE, reason)
    return RaterDecision.objects.create(assignment=assignment, kind=kind, reason=reason[:MAX_REASON],
                                        amount=amount if kind == RaterDecision.Kind.BONUS else None,
                                        platform_note=platform_note[:500], decided_by=user)


@transaction.atomic
def rater_decision_revert(*, decision: RaterDecision, user) -> RaterDecision:
    """Revert a keep or exclude verdict (an exclusion's rater is back in every report). Reverting twice
    changes nothing; approvals, rejections and bonuses were sent to the platform and are refused."""
    decision = RaterDecision.objects.select_for_update().select_related("assignment").get(pk=decision.pk)
    if decision.kind not in VERDICTS:
        raise ValidationError({"decision": f"a {decision.get_kind_display().lower()} was sent to the platform "
                                           "and cannot be undone from Concord"})
    if decision.reverted_at is not None:
        return decision
    _revert(decision, user)
    if decision.kind == RaterDecision.Kind.EXCLUDE:
        _excluded_set(Assignment.objects.select_for_update().get(pk=decision.assignment_id), False, "")
    return decision


def _revert(decision: RaterDecision, user) -> None:
    decision.reverted_at, decision.reverted_by = timezone.now(), user
    decision.save(update_fields=["reverted_at", "reverted_by"])


def _excluded_set(assignment: Assignment, excluded: bool, reason: str) -> None:
    assignment.excluded, assignment.exclusion_reason = excluded, (reason[:MAX_REASON] if excluded else "")
    assignment.save(update_fields=["excluded", "exclusion_reason"])
