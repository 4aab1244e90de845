"""The chat unit's tables (``studies.chat``).

- ``SystemEndpoint``: how one researcher reaches a system to chat with (protocol, URL, model, key). It is
  its ``owner``'s: a system's name is a shared label, so two researchers may each have an
  endpoint for "gpt-4o", and nobody else sees, changes, tries or uses one (``studies.chat.selectors``);
  a chat study calls the endpoints of its experiment's owner. No owner: an admin-only endpoint (one the
  migration could not give to a single researcher), used only by experiments without an owner. The key
  is never stored in clear: either the name of an environment variable (``CONCORD_BOT_KEY_*``) or a
  Fernet token (``studies.chat.keys``); neither is rendered in a page, an export or the API.
- ``StudyItemSystem``: the system(s) a chat item talks to, in canonical order (two for a side-by-side
  chat comparison; each rater sees a per-rater order).
- ``Chat``: one rater's conversation with one system on one item; its transcript is a ``Conversation``
  (turns with per-turn timing), so it flows wherever dialogues go (reports, exports, metric scoring).
- ``ChatTurn``: one message, the source of truth the transcript mirrors; a rater's message carries the
  page's ``client_id`` so that a re-sent post stores once (a unique constraint, not a hope).
"""
from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class SystemEndpoint(models.Model):
    class Protocol(models.TextChoices):
        CONCORD = "concord", "Concord JSON (the dialogue in, one reply out)"
        OPENAI = "openai", "OpenAI-compatible chat completions"

    system = models.ForeignKey("studies.System", on_delete=models.CASCADE, related_name="endpoints")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE,
                              related_name="chat_endpoints", help_text="Empty: admins only.")
    protocol = models.CharField(max_length=10, choices=Protocol.choices, default=Protocol.CONCORD)
    url = models.CharField(max_length=500, help_text="http(s) URL the dialogue is posted to.")
    model_name = models.CharField(max_length=200, blank=True, help_text="Sent as the request's model.")
    key_env = models.CharField(max_length=100, blank=True,
                               help_text="Name of an environment variable holding the key (CONCORD_BOT_KEY_...).")
    key_encrypted = models.TextField(blank=True, editable=False, help_text="The key as a Fernet token.")
    timeout_seconds = models.FloatField(default=10.0, help_text="Per attempt: connecting and each read.")
    retries = models.PositiveSmallIntegerField(default=2)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["system_id", "owner_id"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "system"], name="endpoint_one_per_owner_system"),
            models.UniqueConstraint(fields=["system"], condition=Q(owner__isnull=True),
                                    name="endpoint_one_admin_only_per_system"),
            models.CheckConstraint(condition=Q(key_env="") | Q(key_encrypted=""), name="endpoint_one_key_source"),
            models.CheckConstraint(condition=Q(timeout_seconds__gte=0.5, timeout_seconds__lte=60),
                                   name="endpoint_timeout_range"),
            models.CheckConstraint(condition=Q(retries__lte=5), name="endpoint_retries_max"),
        ]

    def __str__(self) -> str:
        return f"{self.system.name} endpoint ({self.protocol})"

    @property
    def has_key(self) -> bool:
        return bool(self.key_env or self.key_encrypted)


class StudyItemSystem(models.Model):
    item = models.ForeignKey("studies.StudyItem", on_delete=models.CASCADE, related_name="item_systems")
    system = models.ForeignKey("studies.System", on_delete=models.PROTECT, related_name="+")
    position = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["item_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["item", "system"], name="item_system_unique"),
            models.UniqueConstraint(fields=["item", "position"], name="item_system_unique_position"),
        ]

    def __str__(self) -> str:
        return f"item {self.item_id} chats with system {self.system_id}"


class Chat(models.Model):
    class Status(models.TextChoices):
        OPEN = "open", "Waiting for the rater"
        WAITING = "waiting", "Waiting for the system"
        FAILED = "failed", "The system failed"
        ENDED = "ended", "Ended"

    class EndReason(models.TextChoices):
        RATER = "rater", "The rater ended it"
        MAX_TURNS = "max_turns", "Maximum number of turns reached"
        BOT_FAILED = "bot_failed", "Ended after the system failed"

    assignment = models.ForeignKey("studies.Assignment", on_delete=models.CASCADE, related_name="chats")
    item = models.ForeignKey("studies.StudyItem", on_delete=models.CASCADE, related_name="chats")
    position = models.PositiveSmallIntegerField(help_text="The side the rater sees it on (0 = first).")
    system = models.ForeignKey("studies.System", on_delete=models.PROTECT, related_name="chats")
    conversation = models.OneToOneField("studies.Conversation", on_delete=models.PROTECT, related_name="chat")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    waiting_since = models.DateTimeField(null=True, blank=True)
    caller = models.CharField(max_length=120, blank=True,
                              help_text="The call fetching the reply (studies.chat.calls: host, process, nonce).")
    error_kind = models.CharField(max_length=20, blank=True)
    error = models.TextField(blank=True, help_text="The last failure, for the researcher.")
    failures = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    end_reason = models.CharField(max_length=10, choices=EndReason.choices, blank=True)

    class Meta:
        ordering = ["assignment_id", "item_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["assignment", "item", "position"], name="chat_unique_side"),
            models.CheckConstraint(condition=~Q(status="waiting") | Q(waiting_since__isnull=False),
                                   name="chat_waiting_has_time"),
            models.CheckConstraint(condition=~Q(status="ended") | Q(ended_at__isnull=False),
                                   name="chat_ended_has_time"),
        ]

    def __str__(self) -> str:
        return f"chat {self.pk} ({self.status})"


class ChatTurn(models.Model):
    class Role(models.TextChoices):
        USER = "user", "Rater"
        SYSTEM = "system", "System"

    chat = models.ForeignKey(Chat, on_delete=models.CASCADE, related_name="turns")
    index = models.PositiveSmallIntegerField()
    role = models.CharField(max_length=6, choices=Role.choices)
    text = models.TextField()
    client_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField()
    seconds = models.FloatField(null=True, blank=True,
                                help_text="Rater: since the turn before was shown. System: the call, retries included.")
    attempts = models.PositiveSmallIntegerField(default=1)

    class Meta:
        ordering = ["chat_id", "index"]
        constraints = [
            models.UniqueConstraint(fields=["chat", "index"], name="chat_turn_unique_index"),
            models.UniqueConstraint(fields=["chat", "client_id"], condition=~Q(client_id=""),
                                    name="chat_turn_unique_client_id"),
            models.CheckConstraint(condition=~Q(text=""), name="chat_turn_text_not_empty"),
        ]

    def __str__(self) -> str:
        return f"{self.role}: {self.text[:60]}"
