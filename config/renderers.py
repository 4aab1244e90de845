"""The API's JSON renderer: DRF's, with every non-finite float (NaN, ±infinity) written as ``null``.
JSON has no NaN, and DRF's strict renderer raised ``ValueError`` (a 500) on a statistic that is
undefined (a label nobody picked, a correlation of a constant). ``null`` is what the schema's
nullable numbers say: not computable here."""
from __future__ import annotations

import math

from rest_framework.renderers import JSONRenderer as DRFJSONRenderer


def finite(data):
    """``data`` with NaN and infinities replaced by None (a copy where anything changed)."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {key: finite(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [finite(value) for value in data]
    return data


class JSONRenderer(DRFJSONRenderer):
    def render(self, data, accepted_media_type=None, renderer_context=None):
        return super().render(finite(data), accepted_media_type, renderer_context)
