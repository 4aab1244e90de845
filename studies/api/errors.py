"""The API's own exceptions (DRF's ``APIException``), answered in the one error envelope of
``config.errors``."""
from __future__ import annotations

from rest_framework import exceptions, status


class Conflict(exceptions.APIException):
    """The request is well formed, but the object's state does not allow it (publishing a closed study,
    reusing an Idempotency-Key with another body). Nothing was changed."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "The object's current state does not allow this."
    default_code = "conflict"
