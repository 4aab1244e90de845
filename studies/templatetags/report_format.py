"""Number formatting for reports: fixed decimals, p-values as researchers write them, durations."""
from django import template

register = template.Library()


@register.filter
def num(value, digits=3):
    if value is None or value != value:
        return "–"
    return f"{value:.{int(digits)}f}"


@register.filter
def pval(value):
    if value is None or value != value:
        return "–"
    return "p < .001" if value < 0.001 else f"p = {value:.3f}".replace("0.", ".", 1)


@register.filter
def duration(seconds):
    """Seconds as '35.2 min' (or '48 s' under two minutes)."""
    if seconds is None:
        return "–"
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


@register.filter
def get(mapping, key):
    return mapping.get(key) if mapping else None
