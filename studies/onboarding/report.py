"""The report's Practice section (registered from ``StudiesConfig.ready``): per study, the raters
who finished the practice, passed and failed, and the pass rate; the practice items ordered by how
often raters answered them against the expected answer. Practice answers appear here and nowhere
else in the report: they are not ratings."""
from __future__ import annotations

from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe

from studies.onboarding import selectors


def report_section(request, studies, target) -> SafeString | None:
    data = selectors.practice_report(studies)
    if data is None:
        return None
    return mark_safe(render_to_string("reports/_practice.html", {"practice": data}, request=request))
