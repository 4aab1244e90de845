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
