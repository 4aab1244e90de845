"""Number formatting for reports: fixed decimals, p-values as researchers write them, durations."""
from numbers import Real

from django import template

register = template.Library()


def _number(value) -> float | None:
    """The value as a finite-or-not float, or None for anything that is not a number (a missing
    template variable renders as "", a statistic that could not be computed as None)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        return None
    return None if value != value else float(value)


@register.filter
def num(value, digits=3):
    value = _number(value)
    if value is None:
        return "–"
    return f"{value:.{int(digits)}f}"


@register.filter
def pval(value):
    value = _number(value)
    if value is None:
        return "–"
    return "p < .001" if value < 0.001 else f"p = {value:.3f}".replace("0.", ".", 1)


@register.filter
def duration(seconds):
    """Seconds as '35.2 min' (or '48 s' under two minutes)."""
    seconds = _number(seconds)
    if seconds is None:
        return "–"
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


@register.filter
def get(mapping, key):
    return mapping.get(key) if mapping else None


@register.filter
def item_ref(position):
    """An item as researchers name it: "#3", or a check item "check 2" (check items are stored after
    every regular item, from ``CHECK_POSITION_BASE``, a number that means nothing to a reader)."""
    from studies.authoring.checks import CHECK_POSITION_BASE

    if isinstance(position, bool) or not isinstance(position, int):
        return position
    return f"check {position - CHECK_POSITION_BASE + 1}" if position >= CHECK_POSITION_BASE else f"#{position}"
