"""Rater onboarding: a study's practice items with expected answers and an explanation, its pass
mark, and each platform identity's attempt at the practice (per experiment) with its answers.

Practice answers live only here (``PracticeAnswer``), never in ``Rating``, ``Comparison`` or
``BestWorstChoice``, and an attempt is not an ``Assignment``: a rater in practice, or one who
failed it, holds no slot, and nothing that reads ratings (ICC, reports, exports, human-vs-metric)
can see what they answered."""
from __future__ import annotations

from django.db import models

from studies.models.choices import new_token
from studies.models.corpora import Conversation, Response
from studies.models.studies import Experiment, Study


class Onboarding(models.Model):
    """A study's practice settings: how many practice items a rater must agree with to go on."""

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="onboarding")
    pass_mark = models.PositiveSmallIntegerField(default=0)  # 0: every practice item
    # A pass on any experiment of the same researcher counts here too (same platform identity).
    owner_wide = models.BooleanField(default=False)
    # ParlAI's onboarding: the practice ends as failed as soon as more than ``max_wrong`` answers disagree
    # (None: no limit), and a rater who failed may start again ``retakes`` times. A fail is a soft block:
    # the rater is told and kept out of this experiment; nothing is sent to the platform.
    max_wrong = models.PositiveSmallIntegerField(null=True, blank=True)
    retakes = models.PositiveSmallIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"onboarding of {self.study}: pass mark {self.pass_mark}"


class PracticeItem(models.Model):
    """One practice screen: a conversation, the responses in the order shown (fixed, so the
    explanation can name "Response A"), the expected answer as check rules (``studies.rating.checks``,
    response ids), and what the rater is told afterwards."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="practice_items")
    position = models.PositiveIntegerField()
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="+")
    response_ids = models.JSONField(default=list)
    reference_response = models.ForeignKey(Response, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    reference_value = models.FloatField(null=True, blank=True)
    rules = models.JSONField(default=list)
    explanation = models.TextField()

    class Meta:
        ordering = ["study", "position"]
        constraints = [models.UniqueConstraint(fields=["study", "position"], name="practice_item_position_unique")]

    def __str__(self) -> str:
        return f"practice {self.position + 1} of {self.study}"


class PracticeAttempt(models.Model):
    """One platform identity's practice in one experiment (the same normalised id the entry uses,
    ``studies.rating.platforms.identity_from``): passed or failed once, remembered."""

    class Status(models.TextChoices):
        STARTED = "started", "In practice"
        PASSED = "passed", "Passed"
        FAILED = "failed", "Failed"

    token = models.CharField(max_length=40, unique=True, default=new_token, editable=False)
    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="practice_attempts")
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="practice_attempts")
    via_experiment = models.BooleanField(default=False)  # came by the experiment link: placed there after passing
    platform = models.CharField(max_length=10, choices=Study.Platform.choices)
    external_id = models.CharField(max_length=120)
    acceptance_id = models.CharField(max_length=120, blank=True)
    platform_data = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.STARTED)
    shown = models.PositiveSmallIntegerField(default=0)
    agreed = models.PositiveSmallIntegerField(default=0)
    pass_mark = models.PositiveSmallIntegerField(default=0)
    retakes_used = models.PositiveSmallIntegerField(default=0)  # how many times the rater started again after a fail
    started_at = models.DateTimeField(auto_now_add=True)
    # Consent comes first: the rater reads the instructions and agrees before any practice item; the slot
    # they get after a pass carries this consent (its start page does not ask twice).
    consented_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["started_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["experiment", "platform", "external_id"], name="practice_attempt_identity"),
        ]

    def __str__(self) -> str:
        return f"{self.platform}:{self.external_id} practice in {self.experiment_id}: {self.status}"


class PracticeAnswer(models.Model):
    """What a rater answered on one practice item (form values, to show again) and whether it agreed
    with the expected answer. Stored once: a second submit of the same item changes nothing."""

    attempt = models.ForeignKey(PracticeAttempt, on_delete=models.CASCADE, related_name="answers")
    item = models.ForeignKey(PracticeItem, on_delete=models.CASCADE, related_name="answers")
    values = models.JSONField(default=dict)
    agreed = models.BooleanField()
    answered_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["attempt", "item__position"]
        constraints = [models.UniqueConstraint(fields=["attempt", "item"], name="practice_answer_once")]

    def __str__(self) -> str:
        return f"{self.attempt_id} on {self.item_id}: {'agreed' if self.agreed else 'disagreed'}"
