"""Self-chats (``studies.chat.selfchat``): two bots, or one with itself, talk for a number of turns from
an opener; the finished conversations become a corpus that an ACUTE-Eval study compares.

- ``SelfChatRun``: the researcher's job: the two systems (each with its endpoint), the openers, how many
  conversations of how many turns, each bot's settings (a system prompt, sampling, a request rate), the
  corpus it fills, and its progress; the lists of personas each bot draws from and the seed of the draws
  (``selfchat.selfchat_draws``).
- ``SelfChatDialogue``: one conversation of a run, its turns stored as each one arrives (a worker that
  dies loses at most the turn it was waiting for; a rerun continues from the stored ones), with the
  opener and the personas drawn for it. Only a
  finished dialogue becomes a ``Conversation`` of the corpus: a failed or half-made one never does.
"""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class SelfChatRun(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Stopped: an endpoint kept failing"
        CANCELLED = "cancelled", "Cancelled by the researcher"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    title = models.CharField(max_length=200)
    corpus = models.ForeignKey("studies.Corpus", on_delete=models.CASCADE, related_name="selfchat_runs",
                               help_text="Where the finished conversations go (several runs may fill one).")
    system_a = models.ForeignKey("studies.System", on_delete=models.PROTECT, related_name="+")
    system_b = models.ForeignKey("studies.System", on_delete=models.PROTECT, related_name="+")
    openers = models.JSONField(default=list, help_text="The opening contexts; one is drawn per conversation.")
    personas = models.JSONField(default=dict, blank=True,
                                help_text='{"a": [...], "b": [...]}: each bot draws one per conversation (none: none).')
    seed = models.PositiveIntegerField(default=0, help_text="Seeds the draws of openers and personas.")
    conversations = models.PositiveIntegerField()
    turns = models.PositiveSmallIntegerField(help_text="Bot turns per conversation, after the opener.")
    bot_settings = models.JSONField(default=dict, blank=True,
                                    help_text='{"a": {...}, "b": {...}}: system prompt, sampling, requests per minute.')
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True, help_text="Why the run stopped, for the researcher.")
    # the job's lifecycle (studies.chat.selfchat_jobs): starts so far, and the running worker's lease
    attempts = models.PositiveSmallIntegerField(default=0)
    lease_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(conversations__gte=1, conversations__lte=10000),
                                   name="selfchat_conversations_range"),
            models.CheckConstraint(condition=Q(turns__gte=1, turns__lte=100), name="selfchat_turns_range"),
        ]

    def __str__(self) -> str:
        return f"self-chat {self.title} ({self.status})"


class SelfChatDialogue(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Not started"
        RUNNING = "running", "In progress"
        DONE = "done", "Done"
        FAILED = "failed", "An endpoint failed"

    run = models.ForeignKey(SelfChatRun, on_delete=models.CASCADE, related_name="dialogues")
    index = models.PositiveIntegerField()
    opener = models.TextField()
    personas = models.JSONField(default=dict, blank=True, help_text='{"a": ..., "b": ...}: the personas drawn.')
    turns = models.JSONField(default=list, help_text="[{speaker, side, text, seconds, attempts}], one per bot turn.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    error_side = models.CharField(max_length=1, blank=True)
    error_kind = models.CharField(max_length=20, blank=True)
    error = models.TextField(blank=True)
    conversation = models.OneToOneField("studies.Conversation", null=True, blank=True, on_delete=models.PROTECT,
                                        related_name="selfchat")

    class Meta:
        ordering = ["run_id", "index"]
        constraints = [
            models.UniqueConstraint(fields=["run", "index"], name="selfchat_dialogue_unique_index"),
            models.CheckConstraint(condition=~Q(status="done") | Q(conversation__isnull=False),
                                   name="selfchat_done_has_conversation"),
        ]

    def __str__(self) -> str:
        return f"self-chat {self.run_id} #{self.index} ({self.status})"
