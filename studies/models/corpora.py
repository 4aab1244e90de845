"""What is judged: corpora of conversations, the systems, their responses, and import jobs."""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class Corpus(models.Model):
    """One import of conversations and responses; studies draw their items from it."""

    slug = models.SlugField(max_length=80, unique=True)
    title = models.CharField(max_length=200)
    source_format = models.CharField(max_length=20)
    source_name = models.CharField(max_length=300, blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "slug"]
        verbose_name_plural = "corpora"

    def __str__(self) -> str:
        return self.slug


class System(models.Model):
    """A dialogue system (or the human reference) whose responses are judged. The name is shared (it is
    only a label: "hred" in two researchers' corpora is one row); what a researcher says about it lives
    in their own ``SystemDescription``. ``description`` is Concord's own text (check items, the demo
    bots), never a researcher's."""

    name = models.CharField(max_length=80, unique=True)  # a slug that keeps its case (botA): system_key
    description = models.TextField(blank=True)
    is_human = models.BooleanField(default=False)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class SystemDescription(models.Model):
    """One researcher's description of a system (from their imports' headers): another researcher's
    import of the same system name neither shows nor overwrites it."""

    system = models.ForeignKey(System, on_delete=models.CASCADE, related_name="descriptions")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    description = models.TextField(blank=True)
    is_human = models.BooleanField(default=False)

    class Meta:
        ordering = ["system", "owner"]
        constraints = [models.UniqueConstraint(fields=["system", "owner"], name="system_description_one_per_owner")]

    def __str__(self) -> str:
        return f"{self.system} ({self.owner})"


class Conversation(models.Model):
    """A dialogue context: ``turns`` is a JSON list of {"speaker": str, "text": str}."""

    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="conversations")
    external_id = models.CharField(max_length=120)
    turns = models.JSONField()
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["corpus", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["corpus", "external_id"], name="conversation_unique_external_id"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.corpus.slug}/{self.external_id}"


class Response(models.Model):
    """A candidate next turn for a conversation, produced by a system (or the human reference).

    ``position`` numbers several responses of one system to one conversation (DailyDialog++ has
    five per quality level)."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="responses")
    system = models.ForeignKey(System, on_delete=models.PROTECT, related_name="responses")
    position = models.PositiveSmallIntegerField(default=0)
    text = models.TextField()
    is_reference = models.BooleanField(default=False)
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["conversation", "system", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "system", "position"], name="response_unique_per_system"
            ),
            models.CheckConstraint(condition=~Q(text=""), name="response_text_not_empty"),
        ]

    def __str__(self) -> str:
        return f"{self.system.name}: {self.text[:60]}"


class ImportJob(models.Model):
    """A dialogue import run by a worker (large uploads): status and outcome for the researcher."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    path = models.CharField(max_length=500)
    source_name = models.CharField(max_length=300)
    source_format = models.CharField(max_length=20, default="auto")
    corpus_slug = models.SlugField(max_length=80)
    systems = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    message = models.TextField(blank=True)
    counts = models.JSONField(default=dict, blank=True)
    corpus = models.ForeignKey(Corpus, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"import of {self.source_name} ({self.status})"
