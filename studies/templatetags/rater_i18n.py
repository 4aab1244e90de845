"""The rater pages' script texts in the page's language (studies.rating.js_strings)."""
from django import template
from django.utils.html import json_script
from django.utils.safestring import SafeString

from studies.rating.js_strings import js_strings

register = template.Library()


@register.simple_tag
def rater_js_strings() -> SafeString:
    """``<script type="application/json" id="rater-strings">``: data, not code, so the CSP allows it."""
    return json_script(js_strings(), "rater-strings")
