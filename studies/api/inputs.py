"""What every API input serializer shares: a field it does not know is refused, named, instead of being
ignored (a misspelt ``titel`` or a ``slug`` a duplicate does not take would otherwise change nothing and
say nothing)."""
from __future__ import annotations

from collections.abc import Mapping

from rest_framework import serializers
from rest_framework.settings import api_settings


class StrictInput(serializers.Serializer):
    # Answers an unknown key with a 400 naming it (and the keys it takes). No docstring: the schema
    # would describe every input serializer with it.

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            known = [name for name, field in self.fields.items() if not field.read_only]
            unknown = [key for key in data if key not in self.fields]
            if unknown:
                message = f"unknown field; this takes {', '.join(known)}" if known else "unknown field; this takes none"
                raise serializers.ValidationError({key: [message] for key in unknown}, code="unknown_field")
        return super().to_internal_value(data)


PAGE_PARAMETERS = ("limit", "offset")


def query_params_checked(request, allowed: tuple[str, ...] | set[str]) -> None:
    """Refuse a query parameter the endpoint does not take (a filter that would be ignored), naming it."""
    unknown = [key for key in request.query_params if key not in allowed]
    if unknown:
        takes = ", ".join(sorted(allowed)) or "none"
        raise serializers.ValidationError({key: [f"unknown query parameter; this takes {takes}"] for key in unknown},
                                          code="unknown_parameter")


def choice_param(request, name: str, choices) -> str | None:
    """A query parameter that must be one of ``choices`` (None when absent)."""
    value = request.query_params.get(name)
    if value in (None, ""):
        return None
    if value not in choices:
        raise serializers.ValidationError({name: [f"one of {', '.join(choices)}, got {value[:40]!r}"]}, code="invalid_choice")
    return value


def paginate(view, queryset, request, serializer_class, **serializer_kwargs):
    """One page of ``queryset`` in the API's one pagination (``config.pagination``, by the setting: studies
    imports nothing of config): ``count``, ``next``, ``previous``, ``results``."""
    paginator = api_settings.DEFAULT_PAGINATION_CLASS()
    page = paginator.paginate_queryset(queryset, request, view=view)
    return paginator.get_paginated_response(serializer_class(page, many=True, **serializer_kwargs).data)


def whole_param(request, name: str, *, low: int = 1, high: int = 10**12) -> int | None:
    """A query parameter that must be a whole number in [low, high] (None when absent)."""
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return None
    if not raw.isascii() or not raw.isdigit() or len(raw) > len(str(high)) or not (low <= int(raw) <= high):
        raise serializers.ValidationError({name: [f"a whole number from {low} to {high}, got {raw[:40]!r}"]})
    return int(raw)
