"""A reviewer's decisions about one rater in one study: keep, exclude from results,
approve, reject with a reason, bonus. Each row says who decided, when and why; reverting keeps the
row (``reverted_at``/``reverted_by``), so the history stays readable. An active exclusion is mirrored on
``Assignment.excluded`` (with its reason), the one column every report, export and the live panel read."""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from studies.models.raters import Assignment


class RaterDecision(models.Model):
    class Kind(models.TextChoices):
        KEEP = "keep", "Keep"
        EXCLUDE = "exclude", "Exclude from results"
        APPROVE = "approve", "Approve"
        REJECT = "reject", "Reject"
        BONUS = "bonus", "Bonus"

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="decisions")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    reason = models.CharField(max_length=1000)
    amount = models.DecimalField(max_digits=8, decimal_places=2, null=True, blank=True,
                                 help_text="A bonus's amount in the publication's currency.")
    platform_note = models.CharField(max_length=500, blank=True,
                                     help_text="What the platform answered (approve, reject, bonus).")
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    decided_at = models.DateTimeField(auto_now_add=True)
    reverted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+")
    reverted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["assignment", "-decided_at", "-id"]
        constraints = [
            # at most one standing verdict (keep or exclude) per assignment: a new one reverts the old
            models.UniqueConstraint(fields=["assignment"], condition=Q(kind__in=["keep", "exclude"], reverted_at__isnull=True),
                                    name="rater_decision_one_verdict"),
            models.CheckConstraint(condition=~Q(kind="bonus") | Q(amount__gt=0), name="rater_decision_bonus_amount"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.assignment_id}{' (reverted)' if self.reverted_at else ''}"

    @property
    def active(self) -> bool:
        return self.reverted_at is None
