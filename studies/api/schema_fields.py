"""Fields shared by the serializers that only describe a response for the OpenAPI schema (the typed reports
of ``studies.api.report_schemas``, ``studies.api.design_report_schemas`` and ``metrics.api.report_schemas``)."""
from __future__ import annotations

from rest_framework import serializers


def number(**kwargs) -> serializers.FloatField:
    """A number that may be undefined: the API writes NaN (too few raters, no variation) as null
    (``config.renderers``), so the schema declares it nullable."""
    return serializers.FloatField(allow_null=True, **kwargs)
