"""Sections other apps add to the report page, so that ``studies`` never imports them.

An app registers a callable from its ``AppConfig.ready`` (the metrics app adds the human + metric
estimates, metrics.web.ppi_views.report_section); the report view calls each with the request, the studies
in the report and the study or experiment, and puts the HTML it returns (or nothing, for None) at the
end of the page. One list, filled once at start-up; a callable that fails breaks only its own section.
"""
from __future__ import annotations

import logging
from collections.abc import Callable

from django.utils.html import format_html
from django.utils.safestring import SafeString

logger = logging.getLogger(__name__)

Section = Callable[..., "SafeString | None"]
_SECTIONS: list[Section] = []


def register(section: Section) -> Section:
    """Add a section (idempotent: ``ready`` may run more than once in tests)."""
    if section not in _SECTIONS:
        _SECTIONS.append(section)
    return section


def render(request, studies, target) -> list[SafeString]:
    """The registered sections' HTML for this report, in registration order."""
    out = []
    for section in _SECTIONS:
        try:
            html = section(request, studies, target)
        except Exception:  # a broken extension must not take the whole report down with it
            logger.exception("report section %s failed", getattr(section, "__qualname__", section))
            html = format_html('<section class="card"><p class="message error" role="alert">{}</p></section>',
                               "A report section could not be computed; the error is in the server log.")
        if html:
            out.append(html)
    return out
