"""A reviewer's approve, reject and bonus from a study's review queue or a rater's page,
sent to the platform the rater came from through the crowd app's own calls (``crowd.reviews``,
``crowd.bonuses``: MTurk through boto3, Prolific over REST), and recorded as a ``RaterDecision``
(``studies.rating.decisions``) only once the platform has accepted, with what it answered. A refusal or a
platform error records nothing and is raised as a ``ValidationError`` naming the field."""
from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.exceptions import ValidationError

from crowd import bonuses, reviews
from crowd.models import Bonus, WorkerAssignment
from studies.models import Assignment, RaterDecision
from studies.rating import decisions

PLATFORM_KINDS = (RaterDecision.Kind.APPROVE, RaterDecision.Kind.REJECT, RaterDecision.Kind.BONUS)


def platform_record(assignment: Assignment) -> WorkerAssignment:
    """The platform's record of this assignment (the newest, should a worker have several)."""
    record = assignment.crowd_records.select_related("publication", "publication__study").order_by("-pk").first()
    if record is None:
        raise ValidationError({"platform": "this rater did not come through MTurk or Prolific; "
                                           "keep or exclude them here instead"})
    return record


def rater_platform_decide(*, assignment: Assignment, kind: str, reason: str, user, amount: Any = None,
                          rejection_category: str = "", client: Any = None) -> RaterDecision:
    """Approve, reject (the worker sees ``reason``) or bonus (``amount``, the reason shown to the worker)
    the rater's platform assignment, then record the decision."""
    if kind not in PLATFORM_KINDS:
        raise ValidationError({"kind": f"one of {', '.join(PLATFORM_KINDS)}, not {kind!r}"})
    if not (reason or "").strip():
        raise ValidationError({"reason": "say why: the worker sees it, and the decision keeps it"})
    record = platform_record(assignment)
    if kind == RaterDecision.Kind.BONUS:
        # A double submit pays once: the same bonus (amount and reason) already recorded is returned; one
        # recorded but not sent is sent again through its own row (its id is the idempotency token).
        reason, value = reason.strip(), _money(amount)
        done = assignment.decisions.filter(kind=kind, amount=value, reason=reason[:decisions.MAX_REASON]).first()
        if done is not None:
            return done
        bonus = Bonus.objects.filter(publication=record.publication, assignment=assignment, amount=value,
                                     reason=reason[:500]).first() if value is not None else None
        if bonus is None:
            bonus = bonuses.bonus_create(publication=record.publication, assignment=assignment, amount=amount,
                                         reason=reason, user=user)
        sent = next(iter(bonuses.bonuses_send(bonuses=[bonus])), bonus)
        if sent.status != Bonus.Status.SENT:
            raise ValidationError({"platform": f"the bonus was not sent: {getattr(sent, 'error', '') or sent.status}"})
        return decisions.rater_decision_record(assignment=assignment, kind=kind, reason=reason, user=user,
                                               amount=value, platform_note=f"bonus {sent.pk} sent")
    outcome = reviews.assignments_review(publication=record.publication, records=[record], decision=kind,
                                         feedback=reason, rejection_category=rejection_category, client=client)
    if not outcome.done:
        raise ValidationError({"platform": str(outcome)})
    return decisions.rater_decision_record(assignment=assignment, kind=kind, reason=reason, user=user,
                                           platform_note=f"{record.publication.get_platform_display()}: {outcome}")


def _money(amount: Any) -> Decimal | None:
    try:
        return Decimal(str(amount).strip()).quantize(Decimal("0.01"))
    except (InvalidOperation, ValueError):
        return None
