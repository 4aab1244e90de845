"""OpenAPI schema generation (drf-spectacular) for every API view.

Two things the default AutoSchema gets wrong for our HackSoft-style views:

- Every view nests its own ``InputSerializer``/``OutputSerializer``; the default component name is
  the class name, so seven different serializers shared the names "Output" and "InputRequest" and
  endpoints were documented with each other's schemas (import jobs as experiments). A nested
  serializer is named after its view instead: ``ImportJobDetailApi.OutputSerializer`` ->
  ``ImportJobDetailOutput``.
- Every request body was advertised as JSON, form and multipart (DRF's default parsers); it is JSON
  only, except where a view chose its parsers (the file import).
- Error answers were undocumented. Every operation now lists the ones DRF can give it, each as one
  ``Problem`` (RFC 9457, ``application/problem+json``, ``config.errors``): 400 (field errors) for
  writes and for reads that take parameters, 401/403 where authentication or a permission is
  required, 404 where the path or the body names an object, 409 for writes the state may refuse,
  429 where a throttle applies; an error a view declares itself (502) takes the same envelope.
"""
from __future__ import annotations

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import ResolvedComponent
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers
from rest_framework.permissions import AllowAny

from studies.api.base import ApiView

PROBLEM_SCHEMA = {
    "type": "object",
    "description": "RFC 9457 problem details (config.errors): the same keys whatever went wrong; `errors` names "
                   "each field's problem by path (`criteria.0.name`; `field` null for the request as a whole).",
    "properties": {
        "type": {"type": "string", "description": "urn:concord:problem:<code>"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "errors": {"type": "array", "items": {
            "type": "object",
            "properties": {"field": {"type": "string", "nullable": True}, "message": {"type": "string"},
                           "code": {"type": "string", "nullable": True}},
            "required": ["field", "message", "code"]}},
        "practice": {"type": "object", "description": "only in a rater session's 409 practice_required or "
                     "practice_failed: the rater's practice attempt, taken at /api/rate/practice/{token}/ with "
                     "`key` in X-Concord-Rater-Key (studies.api.rater_practice)",
                     "properties": {"token": {"type": "string"}, "key": {"type": "string"},
                                    "status": {"type": "string", "description": "started, passed or failed"}},
                     "required": ["token", "key", "status"]},
    },
    "required": ["type", "title", "status", "detail", "errors"],
}
ERRORS = {
    "400": "Invalid input: nothing was changed; `errors` names each field's problem.",
    "401": "No credentials, or an invalid or expired token.",
    "403": "Authenticated, but not allowed to do this.",
    "404": "No such object (in the path, or named in the body) among those visible to you.",
    "409": "The object's state does not allow this (or an Idempotency-Key was reused with another body); "
           "nothing was changed.",
    "429": "Too many requests: retry after the number of seconds in Retry-After.",
}
PROBLEM_JSON = "application/problem+json"


class ConcordAutoSchema(AutoSchema):
    def get_serializer_name(self, serializer, direction) -> str:
        cls = type(serializer)
        owner, _, name = cls.__qualname__.rpartition(".")
        if owner and "<locals>" not in owner:  # nested in a view: name it after the view
            return owner.rpartition(".")[2].removesuffix("Api") + name
        return super().get_serializer_name(serializer, direction)

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        """A nested object that may be null is written inline with ``nullable`` beside its ``type``: OpenAPI
        3.0.3 lets ``nullable`` act only where ``type`` is in the same schema object, so drf-spectacular's
        ``allOf: [$ref]`` with ``nullable`` beside it does not admit null (validators refuse it;
        tfranzel/drf-spectacular#925). Its component is still registered (a list of it keeps the ``$ref``).
        ``OAS_VERSION`` 3.1 would write ``oneOf: [$ref, {type: null}]`` instead, but it changes how every
        nullable field of the schema is written, for the tests' validators and the generated client alike."""
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if isinstance(field, serializers.Serializer) and field.allow_null:
            component = self.resolve_serializer(field, direction)
            if component is not None and component.schema:
                extra = {key: schema[key] for key in ("description", "readOnly") if key in schema}
                return {**component.schema, "nullable": True, **extra}
        return schema

    def map_parsers(self):
        """JSON only where JSON is taken (the file import takes multipart only). DRF's default
        parsers also take forms (the browsable API), but advertising three encodings for every body
        made generated clients fail to import (openapi-python-client: ``NameError: Unset``)."""
        media = super().map_parsers()
        return ["application/json"] if "application/json" in media else media

    def get_override_parameters(self):
        parameters = list(super().get_override_parameters())
        if self.method in ("POST", "PUT", "PATCH", "DELETE") and isinstance(self.view, ApiView) \
                and getattr(self.view, "idempotency_header", True):
            parameters.append(OpenApiParameter(
                "Idempotency-Key", str, OpenApiParameter.HEADER,
                description="retry safely: the same key and request answer the first success again (per user, "
                            "24 h); the same key with another request is a 409"))
        return parameters

    def _error_codes(self) -> list[str]:
        codes = []
        paginated = getattr(self.view, "pagination_class", None) is not None  # limit/offset are checked
        if self.method != "GET" or self.get_override_parameters() or paginated:
            codes.append("400")
        if not all(isinstance(permission, AllowAny) for permission in self.view.get_permissions()):
            codes += ["401", "403"]
        if "{" in self.path or self.method != "GET":  # a write may name other objects in its body
            codes.append("404")
        if self.method != "GET":
            codes.append("409")
        if self.view.get_throttles():
            codes.append("429")
        return codes

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        component = ResolvedComponent(name="Problem", type=ResolvedComponent.SCHEMA, schema=PROBLEM_SCHEMA,
                                      object="Problem")
        self.registry.register_on_missing(component)
        for code in [*self._error_codes(), *responses]:
            if not str(code).isdigit() or int(code) < 400:
                continue
            description = ERRORS.get(str(code)) or responses.get(code, {}).get("description") or "An error."
            responses[str(code)] = {"description": description,
                                    "content": {PROBLEM_JSON: {"schema": component.ref}}}
        return responses
