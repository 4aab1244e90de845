"""What the API keeps between requests: the answer to each ``Idempotency-Key`` (``studies.api.base``)."""
from __future__ import annotations

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models


class IdempotencyKey(models.Model):
    """A create or action sent with an ``Idempotency-Key`` header, per user: the request's fingerprint
    (method, path, body) and the answer given, replayed when the same key comes again with the same
    request; the same key with another request is refused (409)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    method = models.CharField(max_length=10)
    path = models.CharField(max_length=500)
    fingerprint = models.CharField(max_length=64, help_text="SHA-256 of method, path and body")
    status = models.PositiveSmallIntegerField()
    body = models.JSONField(encoder=DjangoJSONEncoder, null=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "key"], name="idempotency_key_per_user")]

    def __str__(self) -> str:
        return f"{self.key} ({self.method} {self.path})"


class ApiToken(models.Model):
    """A named API token of one user: several per user, one per script or notebook, each
    revoked on its own. Only a SHA-256 of the secret is kept (the secret is 256 random bits, so a fast
    hash is enough: nothing to guess from it), with its first characters (``prefix``) to tell tokens
    apart in the list; the secret itself is shown once, when it is made (``studies.api.tokens``).
    A revoked or expired token answers 401. ``kind``: ``named`` ones are made at ``/api/auth/tokens/``;
    ``login`` ones by ``POST /api/auth/token/`` (username and password), expiring ``API_TOKEN_LIFETIME``
    after, and the login tokens DRF stored in plain text before (migration 0023 keeps their hashes)."""

    class Kind(models.TextChoices):
        NAMED = "named", "named"
        LOGIN = "login", "login"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=80)
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.NAMED,
                            help_text="named: made at /api/auth/tokens/; login: issued for a username and password")
    prefix = models.CharField(max_length=16, help_text="the secret's first characters, shown in lists")
    key_hash = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the secret, hex")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="empty: until revoked")
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [models.UniqueConstraint(fields=["user", "name"], condition=models.Q(revoked_at__isnull=True),
                                               name="api_token_name_per_user_while_active")]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"
