"""Tags of the rater's item form that run once per row of every item page."""
from collections.abc import Mapping, Sequence
from typing import Any

from django import template
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


@register.simple_tag
def likert_points(row: Mapping[str, Any], points: Sequence[Mapping[str, Any]]) -> SafeString:
    """One Likert row's radio points (raters/designs/likert.html), the one ``value`` the rater gave
    checked: the markup a ``{% for p in points %}`` loop gave, written here because that loop was
    nine in ten of an item page's template nodes (4 responses x 2 criteria x 6 points, ~380 of ~430)
    and most of the page's rendering time. Field names and researchers' point labels are escaped."""
    field = conditional_escape(row.get("field", ""))
    chosen = row.get("value")
    parts = []
    for point in points:
        value = point["value"]
        shown = conditional_escape(value)
        checked = "checked" if chosen == str(int(value)) else ""  # as the template compared: value|stringformat:"d"
        label = f"<small>{conditional_escape(point['label'])}</small>" if point.get("label") else ""
        parts.append(f'\n    <label class="point"><input type="radio" name="{field}" value="{shown}" {checked}>'
                     f"<span>{shown}</span>{label}</label>")
    return mark_safe("".join(parts))  # noqa: S308 - every variable part is escaped above
