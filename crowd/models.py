"""What Concord knows about a study's life on a crowd platform: where it was published (HITs, a
Prolific study), the platform's view of each assignment, bonuses, qualifications and blocks.

Credentials are never stored here: boto3 reads AWS's standard environment/config, Prolific's
token comes from ``PROLIFIC_TOKEN``.
"""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from studies.models import Assignment, Experiment, Study


class Platform(models.TextChoices):
    MTURK = "mturk", "Amazon Mechanical Turk"
    PROLIFIC = "prolific", "Prolific"


class Publication(models.Model):
    """A study on one platform (MTurk sandbox and production are separate publications), with the
    settings it was (or will be) published with."""

    class Status(models.TextChoices):
        DRAFT = "draft", "Not sent yet"
        UNPUBLISHED = "unpublished", "Created on the platform, not public"
        PUBLISHED = "published", "Public"
        PAUSED = "paused", "Paused"
        STOPPED = "stopped", "Stopped / expired"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="crowd_publications")
    platform = models.CharField(max_length=10, choices=Platform.choices)
    sandbox = models.BooleanField(default=True, help_text="MTurk: the requester sandbox (no money moves).")
    settings = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.DRAFT)
    external_id = models.CharField(max_length=120, blank=True, help_text="MTurk HIT type id; Prolific study id.")
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    published_at = models.DateTimeField(null=True, blank=True)
    synced_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["study", "platform", "sandbox"]
        constraints = [
            models.UniqueConstraint(fields=["study", "platform", "sandbox"], name="publication_unique_per_platform"),
            models.CheckConstraint(condition=Q(platform="mturk") | Q(sandbox=False), name="publication_sandbox_mturk_only"),
        ]

    def __str__(self) -> str:
        where = f"{self.platform}{' sandbox' if self.sandbox else ''}"
        return f"{self.study.slug} on {where}"


class Hit(models.Model):
    """One MTurk HIT of a publication."""

    publication = models.ForeignKey(Publication, on_delete=models.CASCADE, related_name="hits")
    hit_id = models.CharField(max_length=64, unique=True)
    max_assignments = models.PositiveIntegerField()
    expires_at = models.DateTimeField(null=True, blank=True)
    hit_status = models.CharField(max_length=30, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["publication", "created_at", "id"]

    def __str__(self) -> str:
        return self.hit_id


class QualificationType(models.Model):
    """A custom MTurk qualification of an experiment, one per purpose in sandbox and in production:

    - took part: granted to every worker who starts any of its conditions, and required *not* to exist on
      its HITs, so MTurk itself hides the experiment's other conditions from them (Concord's own refusal
      stays as the second line of defence);
    - passed practice: granted to every worker who passed its practice (``studies.onboarding``), so that
      later HITs (this researcher's other experiments) can require it with an ``Exists`` requirement."""

    class Purpose(models.TextChoices):
        TOOK_PART = "took_part", "Took part"
        PASSED_PRACTICE = "passed_practice", "Passed the practice"

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="+")
    sandbox = models.BooleanField()
    purpose = models.CharField(max_length=16, choices=Purpose.choices, default=Purpose.TOOK_PART)
    qualification_type_id = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["experiment", "sandbox", "purpose"], name="qualification_type_purpose_unique"),
        ]

    def __str__(self) -> str:
        return self.qualification_type_id


class QualificationGrant(models.Model):
    qualification = models.ForeignKey(QualificationType, on_delete=models.CASCADE, related_name="grants")
    worker_id = models.CharField(max_length=120)
    granted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["qualification", "worker_id"], name="qualification_grant_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.worker_id} has {self.qualification}"


class WorkerAssignment(models.Model):
    """The platform's view of one rater's work: an MTurk assignment or a Prolific submission,
    reconciled with Concord's assignment (by worker id and the platform's assignment/session id)."""

    class State(models.TextChoices):
        ACTIVE = "active", "Working"
        SUBMITTED = "submitted", "Submitted"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        RETURNED = "returned", "Returned"
        TIMED_OUT = "timed_out", "Timed out"
        ABANDONED = "abandoned", "Abandoned (gone from the platform)"
        SCREENED_OUT = "screened_out", "Screened out"

    publication = models.ForeignKey(Publication, on_delete=models.CASCADE, related_name="worker_assignments")
    assignment = models.ForeignKey(Assignment, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="crowd_records")
    external_id = models.CharField(max_length=120, help_text="MTurk AssignmentId; Prolific submission (session) id.")
    worker_id = models.CharField(max_length=120)
    hit_id = models.CharField(max_length=64, blank=True)
    state = models.CharField(max_length=12, choices=State.choices, default=State.ACTIVE)
    platform_status = models.CharField(max_length=30, blank=True, help_text="The platform's own word for it.")
    time_taken = models.FloatField(null=True, blank=True)
    accepted_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    synced_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["publication", "accepted_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["publication", "external_id"], name="worker_assignment_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.worker_id} {self.external_id} ({self.state})"


class Bonus(models.Model):
    """A bonus for one assignment. The row is stored before anything is sent; its id makes the
    platform's idempotency token, so a retried bonus pays once."""

    class Status(models.TextChoices):
        PENDING = "pending", "Not sent yet"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed (may be retried)"

    publication = models.ForeignKey(Publication, on_delete=models.CASCADE, related_name="bonuses")
    assignment = models.ForeignKey(Assignment, on_delete=models.PROTECT, related_name="crowd_bonuses")
    amount = models.DecimalField(max_digits=8, decimal_places=2)
    reason = models.CharField(max_length=500)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING)
    platform_ref = models.CharField(max_length=120, blank=True, help_text="Prolific bulk bonus payment id.")
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        verbose_name_plural = "bonuses"
        constraints = [models.CheckConstraint(condition=Q(amount__gt=0), name="bonus_amount_positive")]

    def __str__(self) -> str:
        return f"{self.amount} to assignment {self.assignment_id} ({self.status})"

    @property
    def token(self) -> str:
        """MTurk's UniqueRequestToken (at most 64 characters): the same row always sends the same token."""
        return f"concord-bonus-{self.pk}"


class WorkerBlock(models.Model):
    """A worker blocked (or once blocked) on MTurk's requester account by this Concord, with the reason
    given. Kept as the record of those account-wide blocks (lift them in MTurk's requester site);
    researchers' blocks are ``studies.models.RaterBlock`` now (``crowd.workers``): an account-wide block
    kept the worker out of every researcher's HITs."""

    sandbox = models.BooleanField(default=False)
    worker_id = models.CharField(max_length=120)
    reason = models.CharField(max_length=500)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    lifted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["sandbox", "worker_id"], name="worker_block_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.worker_id} ({'blocked' if self.active else 'unblocked'})"
