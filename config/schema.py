"""OpenAPI schema generation (drf-spectacular) for every API view.

Two things the default AutoSchema gets wrong for our HackSoft-style views:

- Every view nests its own ``InputSerializer``/``OutputSerializer``; the default component name is
  the class name, so seven different serializers shared the names "Output" and "InputRequest" and
  endpoints were documented with each other's schemas (import jobs as experiments). A nested
  serializer is named after its view instead: ``ImportJobDetailApi.OutputSerializer`` ->
  ``ImportJobDetailOutput``.
- Error answers were undocumented. Every operation now lists the ones DRF can give it: 400 (field
  errors) for writes and for reads that take parameters, 401/403 where authentication or a
  permission is required, 404 where the path or the body names an object, 429 where a throttle
  applies. ``config.errors`` makes the 404 of a path that matches no view JSON as well.
"""
from __future__ import annotations

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import ResolvedComponent
from rest_framework.permissions import AllowAny

DETAIL_SCHEMA = {
    "type": "object",
    "properties": {"detail": {"type": "string"}},
    "required": ["detail"],
}
FIELD_ERRORS_SCHEMA = {
    "type": "object",
    "description": "Problems by field name (`non_field_errors` for the request as a whole): a list of "
                   "messages, or for nested input the nested problems.",
    "additionalProperties": {},
}
ERRORS = {
    "400": ("FieldErrors", FIELD_ERRORS_SCHEMA, "Invalid input: nothing was changed; the body names each field's problem."),
    "401": ("ErrorDetail", DETAIL_SCHEMA, "No credentials, or an invalid or expired token."),
    "403": ("ErrorDetail", DETAIL_SCHEMA, "Authenticated, but not allowed to do this."),
    "404": ("ErrorDetail", DETAIL_SCHEMA, "No such object (in the path, or named in the body) among those visible to you."),
    "429": ("ErrorDetail", DETAIL_SCHEMA, "Too many requests: retry after the number of seconds in Retry-After."),
}


class ConcordAutoSchema(AutoSchema):
    def get_serializer_name(self, serializer, direction) -> str:
        cls = type(serializer)
        owner, _, name = cls.__qualname__.rpartition(".")
        if owner and "<locals>" not in owner:  # nested in a view: name it after the view
            return owner.rpartition(".")[2].removesuffix("Api") + name
        return super().get_serializer_name(serializer, direction)

    def _error_codes(self) -> list[str]:
        codes = []
        if self.method != "GET" or self.get_override_parameters():
            codes.append("400")
        if not all(isinstance(permission, AllowAny) for permission in self.view.get_permissions()):
            codes += ["401", "403"]
        if "{" in self.path or self.method != "GET":  # a write may name other objects in its body
            codes.append("404")
        if self.view.get_throttles():
            codes.append("429")
        return codes

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        for code in self._error_codes():
            if code in responses:
                continue
            name, schema, description = ERRORS[code]
            component = ResolvedComponent(name=name, type=ResolvedComponent.SCHEMA, schema=schema, object=name)
            self.registry.register_on_missing(component)
            responses[code] = {"description": description, "content": {"application/json": {"schema": component.ref}}}
        return responses
