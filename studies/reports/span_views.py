"""Span criteria on the report page (a section registered from ``StudiesConfig.ready``) and their download,
one row per marked span (each rater's, then the token-level majority's): ``/studies/<slug>/spans.csv`` and
``.xlsx``. Figures: ``studies.reports.span_selectors``."""
from __future__ import annotations

import csv
import io

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe

from studies import access
from studies.compute_pool import offloaded
from studies.models import Study
from studies.reports import span_selectors
from studies.reports.exporting import no_store, raw_ids_requested
from studies.reports.xlsx_stream import write_xlsx

SPAN_FORMATS = ("csv", "xlsx")


def report_section(request, studies, target) -> SafeString | None:
    """The report's "Marked spans" section; None where no study of the report has a span criterion."""
    found = span_selectors.span_report(studies)
    if not found:
        return None
    slugs = list(studies.values_list("slug", flat=True))
    return mark_safe(render_to_string("reports/_spans.html", {"span_criteria": found, "span_slugs": slugs},
                                      request=request))


def _cell(value):
    return "" if value is None else value


@login_required
@offloaded
def span_export(request, slug, export_format):
    study = get_object_or_404(access.studies_visible_to(request.user), slug=slug)
    if export_format not in SPAN_FORMATS:
        raise Http404(f"spans download as {', '.join('.' + f for f in SPAN_FORMATS)}")
    rows = span_selectors.span_rows(Study.objects.filter(pk=study.pk),
                                    raw_ids=raw_ids_requested(request, [study.experiment_id]))
    fields = span_selectors.EXPORT_FIELDS
    if export_format == "csv":
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(fields)
        writer.writerows([_cell(row[f]) for f in fields] for row in rows)
        response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{study.slug}-spans.csv"'
    else:
        buffer = io.BytesIO()
        write_xlsx(buffer, fields, ([_cell(row[f]) for f in fields] for row in rows), sheet_name="Spans")
        response = HttpResponse(buffer.getvalue(),
                                content_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
        response["Content-Disposition"] = f'attachment; filename="{study.slug}-spans.xlsx"'
    return no_store(response)
