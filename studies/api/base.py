"""The base of every API view: ``Idempotency-Key`` on every create and action.

A client that retries a POST (PUT, PATCH, DELETE) after a timeout sends the same ``Idempotency-Key``
header: the first success is stored per user (``IdempotencyKey``) with the request's fingerprint
(method, path, body) and replayed for the same key and request, so a retried invite or scoring run is
made once. The same key with a different request is a 409, nothing done. Only successes (2xx) are kept:
a refused request may be corrected and sent again with its key. Keys are kept ``KEEP_HOURS``."""
from __future__ import annotations

import hashlib
import json
from contextlib import contextmanager
from datetime import timedelta

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from studies.api.errors import Conflict
from studies.models import IdempotencyKey

HEADER = "Idempotency-Key"
WRITES = ("POST", "PUT", "PATCH", "DELETE")
KEEP_HOURS = 24


def django_errors(error: DjangoValidationError) -> ValidationError:
    """A service's refusal (Django's ValidationError) as the API's 400, its fields named as the service
    named them (a refusal with no field under ``detail``)."""
    return ValidationError(error.message_dict if hasattr(error, "error_dict") else {"detail": error.messages})


class RefusalProblem(exceptions.APIException):
    """A service's refusal that carries its own HTTP ``status`` (400, 404, 409, 429), the ``field`` concerned and
    ``retry_after`` (a chat's ``ChatRefused``), as the API's problem: a 400 names the field, a 429 says when
    to retry (DRF writes ``Retry-After`` from ``wait``)."""

    CODES = {400: "invalid", 404: "not_found", 409: "conflict", 429: "throttled"}

    def __init__(self, refusal: Exception):
        status = getattr(refusal, "status", 409)
        field = getattr(refusal, "field", "")
        self.status_code = status
        super().__init__({field: [str(refusal)]} if field and status == 400 else str(refusal),
                         self.CODES.get(status, "conflict"))
        self.wait = getattr(refusal, "retry_after", None)


@contextmanager
def service_refusals(*refusals: type[Exception]):
    """Inside: a Django ValidationError a service raises is the 400 naming its fields (``django_errors``), and
    a refusal of the types given is its problem (``RefusalProblem``); nothing else is caught."""
    try:
        yield
    except DjangoValidationError as error:
        raise django_errors(error) from None
    except refusals as refusal:
        raise RefusalProblem(refusal) from None


class _Replay(Exception):
    def __init__(self, response: Response):
        self.response = response


def _fingerprint(request) -> str:
    """Method, path and body: JSON canonically, an upload by its names and sizes (not read again)."""
    data = request.data
    if hasattr(data, "lists"):  # a QueryDict (form or multipart): every value of every key
        data = {key: [[v.name, v.size] if hasattr(v, "size") else v for v in values] for key, values in data.lists()}
    body = json.dumps(data, sort_keys=True, default=str)
    return hashlib.sha256(f"{request.method} {request.path}\n{body}".encode()).hexdigest()


class ApiView(APIView):
    # DRF's APIView, answering a repeated Idempotency-Key with the first answer. (No docstring: the
    # schema would take it as the description of every view that has none of its own.)

    _idempotency: tuple[str, str] | None = None

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        self._idempotency = None
        key = request.headers.get(HEADER)
        if not key or request.method not in WRITES or not request.user.is_authenticated:
            return
        if len(key) > 255 or not key.isascii() or not key.isprintable():
            raise ValidationError({HEADER: ["at most 255 printable ASCII characters"]})
        fingerprint = _fingerprint(request)
        fresh = timezone.now() - timedelta(hours=KEEP_HOURS)
        IdempotencyKey.objects.filter(user=request.user, key=key, created_at__lt=fresh).delete()
        stored = IdempotencyKey.objects.filter(user=request.user, key=key).first()
        if stored is None:
            self._idempotency = (key, fingerprint)
            return
        if stored.fingerprint != fingerprint:
            raise Conflict(f"this {HEADER} was used for another request ({stored.method} {stored.path} or another "
                           "body); use a new key for a new request")
        response = Response(stored.body, status=stored.status)
        response["Idempotent-Replayed"] = "true"
        raise _Replay(response)

    def idempotent_body(self, data):
        """What is kept to answer a repeat: the answer itself, unless a view keeps less (a secret)."""
        return data

    def handle_exception(self, exc):
        if isinstance(exc, _Replay):
            return exc.response
        return super().handle_exception(exc)

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if self._idempotency and 200 <= response.status_code < 300 and isinstance(response, Response):
            key, fingerprint = self._idempotency
            try:
                with transaction.atomic():
                    IdempotencyKey.objects.create(user=request.user, key=key, method=request.method,
                                                  path=request.path[:500], fingerprint=fingerprint,
                                                  status=response.status_code,
                                                  body=self.idempotent_body(response.data))
            except IntegrityError:  # the same key finished concurrently: the first answer stays
                pass
            self._idempotency = None
        return response
