"""One error envelope for every API answer that is not a success: RFC 9457 problem details
(``application/problem+json``), the same top-level keys whatever went wrong::

    {"type": "urn:concord:problem:invalid", "title": "Invalid input", "status": 400,
     "detail": "criteria.0.name: This field is required.",
     "errors": [{"field": "criteria.0.name", "message": "This field is required.", "code": "required"}]}

``errors`` lists field problems by path (dotted, list positions as numbers; ``field`` null for the
request as a whole) and is empty for errors that name no field. ``exception_handler`` is DRF's
(``REST_FRAMEWORK["EXCEPTION_HANDLER"]``); it also maps the project's own exceptions: a Django
``ValidationError`` is a 400, a write the object's state does not allow (``StudyStateError``, a refused
entry) a 409. ``page_not_found`` and ``server_error`` give the same envelope for what happens before a
view runs (a path under /api/ that resolves to no view) and for uncaught errors; people get HTML."""
from __future__ import annotations

import re
from collections.abc import Iterator
from http import HTTPStatus
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, JsonResponse
from django.utils.translation import gettext_lazy as _
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions
from rest_framework.views import exception_handler as drf_exception_handler

from studies.api.errors import Conflict
from studies.errors import AssignmentRefused, StudyStateError

PROBLEM_JSON = "application/problem+json"
# In the request's language: the rater API's (studies.rating.language) is the study's; all others English.
TITLES = {"invalid": _("Invalid input"), "parse_error": _("Malformed request"),
          "conflict": _("Conflict with the current state"), "not_found": _("Not found"),
          "not_authenticated": _("Not authenticated"), "authentication_failed": _("Not authenticated"),
          "permission_denied": _("Not allowed"), "throttled": _("Too many requests"),
          "method_not_allowed": _("Method not allowed"), "unsupported_media_type": _("Unsupported media type"),
          "not_acceptable": _("Not acceptable"), "bad_gateway": _("The platform failed"), "server_error": _("Server error")}
WHOLE_REQUEST = {"non_field_errors", "detail"}  # DRF's keys for problems of no single field


def api_exception(exc: Exception) -> Exception:
    """The project's exceptions as DRF's (anything else unchanged)."""
    if isinstance(exc, DjangoValidationError):
        return exceptions.ValidationError(exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages})
    if isinstance(exc, StudyStateError | AssignmentRefused):
        return Conflict(str(exc))
    if isinstance(exc, Http404):
        return exceptions.NotFound()
    if isinstance(exc, DjangoPermissionDenied):
        return exceptions.PermissionDenied()
    return exc


def field_errors(detail: Any, path: tuple[str, ...] = ()) -> Iterator[dict[str, Any]]:
    """DRF's nested error detail (dicts by field, lists by position) as flat ``{field, message, code}``."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            # one path syntax: the services' ``criteria[0].options`` is DRF's ``criteria.0.options``
            name = re.sub(r"\[(\d+)\]", r".\1", str(key))
            yield from field_errors(value, path if name in WHOLE_REQUEST else (*path, name))
    elif isinstance(detail, list):
        for position, value in enumerate(detail):
            if isinstance(value, dict | list):
                yield from field_errors(value, (*path, str(position)))
            else:
                yield from field_errors(value, path)
    else:
        yield {"field": ".".join(path) or None, "message": str(detail), "code": getattr(detail, "code", None)}


def problem(status_code: int, code: str, detail: str, errors: list[dict] | None = None, **extensions) -> dict:
    phrase = HTTPStatus(status_code).phrase if status_code in HTTPStatus._value2member_map_ else "Error"
    return {"type": f"urn:concord:problem:{code}", "title": str(TITLES.get(code, phrase)), "status": status_code,
            "detail": detail, "errors": errors or [], **extensions}


def exception_problem(exc: exceptions.APIException, status_code: int) -> dict:
    if isinstance(exc, exceptions.ValidationError):
        errors = list(field_errors(exc.detail))
        detail = "; ".join(f"{e['field']}: {e['message']}" if e["field"] else e["message"] for e in errors[:5])
        return problem(status_code, "invalid", detail or str(_("Invalid input.")), errors)
    detail = exc.detail
    if isinstance(detail, dict | list):  # an APIException raised with structured detail
        errors = list(field_errors(detail))
        return problem(status_code, exc.default_code, "; ".join(e["message"] for e in errors), errors)
    code = getattr(detail, "code", None) or exc.default_code
    return problem(status_code, code, str(detail), **getattr(exc, "extensions", {}))


def exception_handler(exc, context):
    """DRF's handler, then the body as problem details (headers such as Retry-After kept)."""
    exc = api_exception(exc)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    response.data = exception_problem(exc, response.status_code)
    renderer = getattr(context.get("request"), "accepted_renderer", None)
    if renderer is None or renderer.format == "json":
        response.content_type = PROBLEM_JSON
    return response


def problem_response(status_code: int, code: str, detail: str) -> JsonResponse:
    return JsonResponse(problem(status_code, code, detail), status=status_code, content_type=PROBLEM_JSON)


def _is_api(request) -> bool:
    return request.path.startswith("/api/")


def page_not_found(request, exception=None):
    if _is_api(request):
        return problem_response(404, "not_found", f"No API endpoint at {request.path}.")
    return defaults.page_not_found(request, exception)


@csrf_exempt  # a POST to no view is a 404, not the CSRF middleware's HTML 403
def api_not_found(request, rest: str = ""):
    """The last route under /api/: a path no API view answers is the problem JSON 404 in every setting
    (with ``DEBUG`` on, Django's technical 404 page would answer HTML instead of ``page_not_found``). A path
    without its final slash whose slashed form is an API view is redirected there, as ``APPEND_SLASH`` would."""
    from django.http import HttpResponsePermanentRedirect
    from django.urls import Resolver404, resolve

    if not request.path.endswith("/"):
        try:
            match = resolve(request.path + "/")
        except Resolver404:
            match = None
        if match is not None and match.func is not api_not_found:
            query = request.META.get("QUERY_STRING", "")
            return HttpResponsePermanentRedirect(request.path + "/" + (f"?{query}" if query else ""))
    return problem_response(404, "not_found", f"No API endpoint at {request.path}.")


def server_error(request):
    if _is_api(request):
        return problem_response(500, "server_error", "Server error: the request was not completed.")
    return defaults.server_error(request)
