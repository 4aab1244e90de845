"""Whether a text a rater typed can be stored (no Django: the rater's forms, a design's answers and the
platform parameters all ask)."""
from __future__ import annotations

import unicodedata


def text_problem(value: str) -> str | None:
    """Why a text from a rater cannot be stored (control characters, lone surrogates), or None."""
    for char in value:
        category = unicodedata.category(char)
        if category == "Cs":
            return "contains invalid characters (lone surrogates)"
        if category == "Cc" and char not in "\t\n\r":
            return "contains control characters (such as NUL)"
    return None
