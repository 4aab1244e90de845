"""The rater pages' script texts in the page's language (studies.rating.js_strings)."""
from django import template
from django.utils.formats import number_format
from django.utils.html import json_script
from django.utils.safestring import SafeString

from studies.authoring import planning
from studies.rating.js_strings import js_strings

register = template.Library()


@register.simple_tag
def rater_js_strings() -> SafeString:
    """``<script type="application/json" id="rater-strings">``: data, not code, so the CSP allows it."""
    return json_script(js_strings(), "rater-strings")


@register.simple_tag
def rater_money(amount, code: str) -> str:
    """An amount as ``study_planning.money`` writes it, its number in the page's language (``1,50 €``-style
    decimal separators in Spanish and Arabic)."""
    if amount in (None, ""):
        return ""
    return planning.money(number_format(amount, decimal_pos=2, use_l10n=True), code)
