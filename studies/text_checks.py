"""Whether a text a rater typed can be stored (no models: the rater's forms, a design's answers and the
platform parameters all ask). The problem is in the rater page's language (it is shown to the rater)."""
from __future__ import annotations

import unicodedata

from django.utils.translation import gettext


def text_problem(value: str) -> str | None:
    """Why a text from a rater cannot be stored (control characters, lone surrogates), or None."""
    for char in value:
        category = unicodedata.category(char)
        if category == "Cs":
            return gettext("contains invalid characters (lone surrogates)")
        if category == "Cc" and char not in "\t\n\r":
            return gettext("contains control characters (such as NUL)")
    return None
