"""By whom: raters, their assignments, invites, and the items of an assignment in order."""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from studies.models.choices import new_token
from studies.models.studies import Experiment, Study, StudyItem


class Rater(models.Model):
    """A person on a platform. Questionnaire answers live here so reports can split by them."""

    platform = models.CharField(max_length=10, choices=Study.Platform.choices)
    external_id = models.CharField(max_length=120)
    blocked = models.BooleanField(default=False)
    prior_rating_experience = models.BooleanField(
        null=True, blank=True, help_text="Taken part before in studies rating dialogue-system output?"
    )
    prior_agent_experience = models.BooleanField(
        null=True, blank=True, help_text="Talked with conversational agents before?"
    )
    questionnaire = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["platform", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["platform", "external_id"], name="rater_unique_identity"),
        ]

    def __str__(self) -> str:
        return f"{self.platform}:{self.external_id}"


class Assignment(models.Model):
    """One rater's work on one study: the items in the order shown, timing, completion code."""

    class Status(models.TextChoices):
        STARTED = "started", "Started"
        SUBMITTED = "submitted", "Submitted"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        ABANDONED = "abandoned", "Abandoned"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="assignments")
    rater = models.ForeignKey(Rater, on_delete=models.PROTECT, related_name="assignments")
    experiment = models.ForeignKey(
        Experiment, on_delete=models.CASCADE, related_name="+", editable=False,
        help_text="Copied from the study so the database can enforce one condition per worker.",
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.STARTED)
    token = models.CharField(max_length=40, unique=True, default=new_token, editable=False,
                             help_text="The unguessable key in the rater's links.")
    seed = models.BigIntegerField()
    platform_data = models.JSONField(default=dict, blank=True)
    acceptance_id = models.CharField(
        max_length=120, blank=True, db_index=True,
        help_text="The platform's per-acceptance id (MTurk assignmentId, Prolific SESSION_ID): re-entry must present it.",
    )
    started_at = models.DateTimeField()
    consented_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    total_seconds = models.FloatField(null=True, blank=True)
    completion_code = models.CharField(max_length=40, blank=True)
    checks_shown = models.PositiveSmallIntegerField(null=True, blank=True,
                                                    help_text="Check items in the assignment (set at submit).")
    checks_passed = models.PositiveSmallIntegerField(null=True, blank=True)
    checks_failed = models.BooleanField(
        default=False, help_text="Pass rate below the study's min_pass_rate: flagged, suggested for rejection.")
    excluded = models.BooleanField(
        default=False, help_text="Left out of every report, export figure and the live panel by a reviewer "
                                 "(RaterDecision 'exclude'); the export keeps the rows and says so.")
    exclusion_reason = models.CharField(max_length=1000, blank=True, help_text="Why (the active exclusion's reason).")

    class Meta:
        ordering = ["study", "started_at"]
        constraints = [
            models.UniqueConstraint(fields=["experiment", "rater"], name="assignment_one_condition_per_rater"),
            models.UniqueConstraint(fields=["study", "acceptance_id"], condition=~Q(acceptance_id=""),
                                    name="assignment_unique_acceptance_id"),
            models.CheckConstraint(
                condition=Q(total_seconds__isnull=True) | Q(total_seconds__gte=0),
                name="assignment_total_seconds_non_negative",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.rater} on {self.study.slug}"

    @property
    def screened_out(self) -> bool:
        """Failed the study's attention checks (``studies.rating.checks``), or screened out by hand
        (``studies.rating.review.assignment_screen_out``)."""
        return bool(self.checks_failed) or bool((self.platform_data or {}).get("screened_out"))


class Invite(models.Model):
    """A single-use invitation to one study, stored so that the secret key alone cannot mint one.

    The first browser that opens the link claims it: it holds a random secret in a first-party
    cookie, and only its SHA-256 is kept here. That browser may resume; any other is refused."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="invites")
    token = models.CharField(max_length=40, unique=True, default=new_token, editable=False,
                             help_text="The unguessable key in the invitation link.")
    label = models.CharField(max_length=120, blank=True, help_text="Whom it is for (shown to researchers only).")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    claimed_at = models.DateTimeField(null=True, blank=True)
    browser_hash = models.CharField(max_length=64, blank=True, help_text="SHA-256 of the claiming browser's secret.")
    revoked_at = models.DateTimeField(null=True, blank=True,
                                      help_text="Revoked by the researcher: the link works no more, even in its browser.")

    class Meta:
        ordering = ["study", "-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(claimed_at__isnull=True) | ~Q(browser_hash=""),
                                   name="invite_claimed_has_browser"),
        ]

    def __str__(self) -> str:
        return f"invite {self.pk} to {self.study.slug}"

    @property
    def rater_id_text(self) -> str:
        """The rater identity an invite stands for (the label stays with the researcher)."""
        return f"invite-{self.pk}"


class AssignmentItem(models.Model):
    """An item inside an assignment: its place in the rater's sequence and the response order shown."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="assignment_items")
    item = models.ForeignKey(StudyItem, on_delete=models.CASCADE, related_name="assignment_items")
    position = models.PositiveIntegerField()
    response_order = models.JSONField(help_text="Response ids in the order this rater sees them.")
    draft = models.JSONField(default=dict, blank=True, help_text="Autosaved answers not yet submitted.")
    started_at = models.DateTimeField(null=True, blank=True)
    answered_at = models.DateTimeField(null=True, blank=True)
    active_seconds = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["assignment", "position"]
        constraints = [
            models.UniqueConstraint(fields=["assignment", "item"], name="assignment_item_unique"),
            models.UniqueConstraint(fields=["assignment", "position"], name="assignment_item_unique_position"),
        ]

    def __str__(self) -> str:
        return f"assignment {self.assignment_id} #{self.position}"


class RaterBlock(models.Model):
    """A researcher's block of one rater: the rater may not start any study of an experiment the
    researcher owns (``studies.rating.entry``). Other researchers' studies are not affected; the
    site-wide ``Rater.blocked`` is a separate, staff-only switch. Lifting keeps the row (``lifted_at``)."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="rater_blocks")
    rater = models.ForeignKey(Rater, on_delete=models.CASCADE, related_name="blocks")
    reason = models.CharField(max_length=500)
    created_at = models.DateTimeField(auto_now_add=True)
    lifted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "rater"], name="rater_block_unique_per_owner"),
        ]

    def __str__(self) -> str:
        return f"{self.rater} blocked by {self.owner_id}{' (lifted)' if self.lifted_at else ''}"

    @property
    def active(self) -> bool:
        return self.lifted_at is None
