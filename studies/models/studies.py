"""How it is judged: experiments, studies, their criteria and items."""
from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models
from django.db.models import Q

from studies.models.choices import CheckKind, Design, Unit, default_questionnaire
from studies.models.corpora import Conversation, Response


class Experiment(models.Model):
    """A between-subjects design: its studies are the conditions, and a worker takes part in one."""

    slug = models.SlugField(max_length=80, unique=True)
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="owned_experiments", help_text="Empty: visible to staff only (e.g. a command-line import).",
    )
    collaborators = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="shared_experiments"
    )
    is_benchmark = models.BooleanField(
        default=False, help_text="Imported human judgments (GRADE, FED): read-only, already complete."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "slug"]

    def __str__(self) -> str:
        return self.title


def new_rater_key() -> str:
    """12 random URL-safe characters (72 bits): a study's link for raters."""
    return secrets.token_urlsafe(9)


class Study(models.Model):
    """One condition of an experiment: a design, its configuration, criteria and items."""

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        PUBLISHED = "published", "Published"
        CLOSED = "closed", "Closed"

    class Platform(models.TextChoices):
        INVITE = "invite", "Invite link"
        MTURK = "mturk", "Amazon Mechanical Turk"
        PROLIFIC = "prolific", "Prolific"
        BENCHMARK = "benchmark", "Imported benchmark"

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="studies")
    slug = models.SlugField(max_length=80, unique=True)
    # What a rater's link names instead of the slug (``/r/c/<rater_key>/``): the slug carries the
    # condition's title, which a rater of a between-subjects experiment must not see.
    rater_key = models.CharField(max_length=16, unique=True, default=new_rater_key, editable=False)
    title = models.CharField(max_length=200)
    design = models.CharField(max_length=10, choices=Design.choices)
    unit = models.CharField(
        max_length=10, choices=Unit.choices, default=Unit.RESPONSE,
        help_text="The unit of judgement: a response to a conversation, or the whole conversation.",
    )
    design_config = models.JSONField(default=dict, blank=True)
    unit_config = models.JSONField(default=dict, blank=True,
                                   help_text="The unit's settings (a chat's turns, message length, rate limit).")
    raters_per_item = models.PositiveIntegerField(default=40)
    items_per_assignment = models.PositiveIntegerField(default=50)
    instructions = models.TextField(blank=True, help_text="Markdown shown to raters before the items.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    platform = models.CharField(max_length=10, choices=Platform.choices, default=Platform.INVITE)
    platform_config = models.JSONField(
        default=dict, blank=True,
        help_text="completion_url (Prolific), time_limit_minutes, mturk sandbox flag, ...",
    )
    questionnaire = models.JSONField(default=default_questionnaire, blank=True)
    live_config = models.JSONField(default=dict, blank=True,
                                   help_text="live reliability: target, form, close_when_reached")
    checks_config = models.JSONField(
        default=dict, blank=True,
        help_text="attention checks: per_assignment, positions (1-based; empty = random), min_pass_rate",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    published_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    # The researcher's workflow (studies.authoring.editing, studies.authoring.planning): consent text, pay and pause.
    consent_text = models.TextField(blank=True, help_text="Markdown raters agree to before the first item.")
    reward = models.DecimalField(
        max_digits=8, decimal_places=2, null=True, blank=True,
        help_text="Pay per assignment, in the platform's currency (USD on MTurk); crowd publications default to it.",
    )
    estimated_minutes = models.PositiveIntegerField(
        null=True, blank=True, help_text="Planned minutes per assignment (a pilot's median replaces it once there is one).",
    )
    paused_at = models.DateTimeField(null=True, blank=True, help_text="Set while paused: no new raters.")
    # Rater pages' own words (buttons, errors, progress) in this language (settings.LANGUAGES); the
    # researcher's texts (questions, instructions) are shown as written.
    language = models.CharField(max_length=10, default="en", help_text="Language of the rater pages.")
    language_from_browser = models.BooleanField(
        default=False, help_text="Use the rater's browser language where the rater pages have it.")
    item_draw = models.JSONField(default=dict, blank=True, editable=False,
                                 help_text="How the items were drawn from their corpus (studies.authoring.item_draws).")

    class Meta:
        ordering = ["experiment", "id"]
        verbose_name_plural = "studies"
        constraints = [
            models.CheckConstraint(condition=Q(raters_per_item__gte=1), name="study_raters_per_item_min"),
            models.CheckConstraint(
                condition=Q(items_per_assignment__gte=1), name="study_items_per_assignment_min"
            ),
            models.CheckConstraint(
                condition=Q(status="draft") | Q(published_at__isnull=False),
                name="study_published_has_date",
            ),
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def is_dialogue(self) -> bool:
        return self.unit == Unit.DIALOGUE


class Criterion(models.Model):
    """A quality the raters judge (readability, coherence, ...), with the question they see.

    ``scale_min``/``scale_max`` override the design's range (imported benchmarks use each
    quality's own scale, e.g. FED's 0-2 and 1-5)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="criteria")
    name = models.SlugField(max_length=60)
    question = models.CharField(max_length=300)
    help_text = models.TextField(blank=True)
    position = models.PositiveSmallIntegerField(default=0)
    scale_min = models.FloatField(null=True, blank=True)
    scale_max = models.FloatField(null=True, blank=True)
    # How the criterion is answered (``studies.designs.kinds``: the design's scale, one label, a set of
    # labels, or free text), that kind's settings (labels, lengths), and whether a free-text reason
    # ("Why?") is asked beside each answer.
    kind = models.CharField(max_length=20, default="scale")
    options = models.JSONField(default=dict, blank=True)
    rationale = models.CharField(max_length=10, blank=True, default="",
                                 help_text='"" (none), "optional" or "required"')

    class Meta:
        ordering = ["study", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "name"], name="criterion_unique_name"),
        ]

    def __str__(self) -> str:
        return self.name


class StudyItem(models.Model):
    """One screen: a conversation, the responses to judge, and the anchor for magnitude estimation.

    In a dialogue-unit study (``Study.unit``) the conversation itself is judged: the item shows no
    responses, and a magnitude design's anchor is ``reference_conversation`` (a whole dialogue).

    A check item (``check_kind`` set) is shown like any other but its answer is known
    (``check_rules``, see ``studies.rating.checks``): it scores the rater and never enters an analysis."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="items")
    # Empty for a best-worst tuple (studies.designs.bws_tuples): its members come from different
    # conversations, each shown with its own context (StudyItemResponse.response.conversation).
    conversation = models.ForeignKey(Conversation, null=True, blank=True, on_delete=models.PROTECT,
                                     related_name="study_items")
    position = models.PositiveIntegerField()
    responses: models.ManyToManyField = models.ManyToManyField(Response, through="StudyItemResponse",
                                                                related_name="study_items")
    reference_response = models.ForeignKey(
        Response, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    reference_value = models.FloatField(null=True, blank=True)
    reference_conversation = models.ForeignKey(
        Conversation, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        help_text="Dialogue-unit magnitude estimation: the anchor dialogue shown with the reference value.",
    )
    check_kind = models.CharField(max_length=10, choices=CheckKind.choices, blank=True, default="")
    check_rules = models.JSONField(default=list, blank=True,
                                   help_text="What a passing answer is (studies.rating.checks); response ids resolved.")

    class Meta:
        ordering = ["study", "position"]
        constraints = [
            models.UniqueConstraint(fields=["study", "position"], name="study_item_unique_position"),
            models.CheckConstraint(
                condition=Q(reference_value__isnull=True) | Q(reference_value__gt=0),
                name="study_item_reference_value_positive",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.study.slug} #{self.position}"


class StudyItemResponse(models.Model):
    """A response shown on an item, in its canonical order (raters see a per-rater shuffle)."""

    item = models.ForeignKey(StudyItem, on_delete=models.CASCADE, related_name="item_responses")
    response = models.ForeignKey(Response, on_delete=models.PROTECT, related_name="+")
    position = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["item", "position"]
        constraints = [
            models.UniqueConstraint(fields=["item", "response"], name="item_response_unique"),
            models.UniqueConstraint(fields=["item", "position"], name="item_response_unique_position"),
        ]

    def __str__(self) -> str:
        return f"item {self.item_id} shows response {self.response_id}"


class StudyItemConversation(models.Model):
    """A dialogue shown on a dialogue-unit BWS item, in canonical order (raters see a per-rater
    shuffle): such an item ranks several whole dialogues. ``StudyItem.conversation`` is the first.
    On an ACUTE-Eval item (two dialogues) ``speaker`` names the speaker whose turns are judged."""

    item = models.ForeignKey(StudyItem, on_delete=models.CASCADE, related_name="item_conversations")
    conversation = models.ForeignKey(Conversation, on_delete=models.PROTECT, related_name="+")
    position = models.PositiveSmallIntegerField()
    speaker = models.CharField(max_length=100, blank=True, default="")

    class Meta:
        ordering = ["item", "position"]
        constraints = [
            models.UniqueConstraint(fields=["item", "conversation"], name="item_conversation_unique"),
            models.UniqueConstraint(fields=["item", "position"], name="item_conversation_unique_position"),
        ]

    def __str__(self) -> str:
        return f"item {self.item_id} shows conversation {self.conversation_id}"
