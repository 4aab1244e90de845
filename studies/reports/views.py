"""Reliability report pages and downloads, for one study or a whole experiment (conditions side by side)."""
from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, render
from django.urls import reverse

from studies import access
from studies.compute_pool import offloaded
from studies.designs import designs_of
from studies.designs.common import Section
from studies.models import Study
from studies.reads import one_read
from studies.reports import (
    aggregated_labels,
    downloads,
    label_selectors,
    per_turn_selectors,
    position_selectors,
    rater_evidence,
    sections,
    system_scores,
)
from studies.reports import selectors as report_selectors
from studies.reports.exporting import EXPORT_FORMATS, ratings_response, raw_ids_requested

if TYPE_CHECKING:

    from studies.analysis.report import Report

HEADLINE_FORMS = (("ICC-C", "ICC(C,k)"), ("ICC-A", "ICC(A,k)"))


def _raw_ids(request, studies) -> bool:
    return raw_ids_requested(request, set(studies.values_list("experiment_id", flat=True)))


def _scope(request, *, study: str | None = None, experiment: str | None = None):
    """(title, studies queryset, the study or experiment itself) for the request, or 404."""
    if study is not None:
        target = get_object_or_404(access.studies_visible_to(request.user), slug=study)
        return target.title, access.studies_visible_to(request.user).filter(pk=target.pk), target
    target = get_object_or_404(access.experiments_visible_to(request.user), slug=experiment)
    return target.title, target.studies.all(), target


def _matrix(report: Report, key: str) -> list[dict]:
    """Rows criterion × form, one cell per condition (the seed paper's table layout)."""
    cells = {(r["condition"], r["criterion"]): r for r in report.tables[key]}
    rows = []
    for criterion in report.criteria:
        for label, form in HEADLINE_FORMS:
            row = {"criterion": criterion, "label": label, "form": form, "cells": []}
            for condition in report.conditions:
                cell = cells.get((condition["slug"], criterion), {})
                row["cells"].append({"n": cell.get("n_raters"), "error": cell.get("error"),
                                     "k0": cell.get("k0"), "method": cell.get("method"),
                                     **(cell.get("icc", {}).get(form) or {})})
            rows.append(row)
    return rows


def _all_forms(report: Report, key: str) -> list[dict]:
    from studies.analysis.icc import FORMS

    return [{"condition": r["condition"], "criterion": r["criterion"], "forms": [(f, r["icc"][f]) for f in FORMS],
             "k0": r.get("k0"), "method": r.get("method"), "n_items": r.get("n_items"), "n_raters": r.get("n_raters")}
            for r in report.tables[key] if "icc" in r]


def _figure_names(report: Report) -> list[tuple[str, str]]:
    names = [("icc", "ICC per condition with 95% confidence intervals")]
    names += [(f"distributions-{c}", f"{c}: score distributions per system and condition") for c in report.criteria]
    names += [(f"ranking-{c}", f"{c}: system ranking with 95% confidence intervals") for c in report.criteria]
    return [*names, ("completion", "Completion time per condition")]


@login_required
@offloaded
@one_read()
def report_page(request, study=None, experiment=None):
    from studies.analysis.report import TABLES, table_title

    title, studies, target = _scope(request, study=study, experiment=experiment)
    exclude = request.GET.get("exclude_flagged") == "1"
    raw_ids = _raw_ids(request, studies)
    report = report_selectors.reliability_report(studies, exclude_flagged=exclude, raw_ids=raw_ids)
    own = [s for s in report_selectors.design_sections(studies, report, exclude_flagged=exclude) if s.data]
    scores = system_scores.system_scores(report, own)
    # Criteria answered by labels or free text (studies.designs.kinds), in any design: their own section.
    labelled = label_selectors.label_report(studies, exclude_flagged=exclude, excluded_raters=report.excluded_raters)
    if labelled:
        own.append(Section("labels", "reports/_labels.html", labelled))
    turned = per_turn_selectors.per_turn_report(studies, exclude_flagged=exclude, excluded_raters=report.excluded_raters)
    if turned:  # per-turn behaviours: rates per system, the test between them, agreement per behaviour
        own.append(Section("per_turn", "reports/_per_turn.html", turned))
    query = "?exclude_flagged=1" if exclude else ""
    figures = {name: {"url": f"{request.path}figures/{name}.svg{query}", "alt": alt}
               for name, alt in _figure_names(report)} if report.tables else {}
    context = {
        "title": title, "target": target, "report": report, "exclude": exclude, "figures": figures,
        "system_scores": scores,  # which system is better: the page's first section
        "titles": downloads.condition_titles(report), "positions": position_selectors.position_report(studies),
        "criterion_figures": [(c, figures.get(f"distributions-{c}"), figures.get(f"ranking-{c}")) for c in report.criteria],
        "tables": [{"key": key, "title": table_title(key, excluding_flagged=exclude), "rows": _matrix(report, key), "all": _all_forms(report, key)}
                   for key in TABLES],
        "flagged": [r for r in report.raters if r["flagged"]],
        # The designs' own sections (pairwise, best-worst tuples); ICCs mean nothing where every condition's
        # judgments are choices (pairwise), so the page shows only those sections then.
        # ... and where no criterion is on a scale (labels and free text only): their tables are the report.
        "design_sections": own, "scale_absent": None if report_selectors.scale_criteria_exist(studies)
        else report_selectors.scale_absent_reason(studies),
        "icc_hidden": all(d.report_replaces_icc() for d in designs_of(studies))
        or not report_selectors.scale_criteria_exist(studies),
        "figure_base": f"{request.path}figures/", "figure_query": query,
        "download_base": request.path.rstrip("/"),
        "ratings_links": [(f, reverse("studies:experiment_export" if experiment else "studies:study_export",
                                      args=[target.slug, f]) + ("?raw_ids=1" if raw_ids else "")) for f in EXPORT_FORMATS],
        "raw_ids": raw_ids,
        # the page's body is cached as rendered, per page and version of what it shows (a warm page renders
        # the header and the other apps' sections only)
        "body_key": hashlib.sha256(f"{request.get_full_path()}:{report_selectors.ratings_version(studies)}:"
                                   f"{exclude}:{raw_ids}".encode()).hexdigest(),
        "sections": sections.render(request, studies, target),  # added by other apps (metrics)
        # who a reviewer excluded and why; label aggregation and its accuracy on check items
        "exclusions": rater_evidence.exclusions(studies),
        "aggregation_blocks": [{"study": s, "criteria": aggregated_labels.report_criteria(s, raw_ids=_raw_ids(request, studies))}
                               for s in studies],
        "download_query": "?" + "&".join([*(["exclude_flagged=1"] if exclude else []), *(["raw_ids=1"] if raw_ids else [])])
        if exclude or raw_ids else "",
    }
    return render(request, "reports/report.html", context)


@login_required
@offloaded
@one_read()
def report_figure(request, name, study=None, experiment=None):
    """One report figure as SVG; the report itself comes from the cache the page filled."""
    _, studies, _ = _scope(request, study=study, experiment=experiment)
    svg = downloads.report_figure_svg(studies, name, exclude_flagged=request.GET.get("exclude_flagged") == "1")
    if svg is None:
        raise Http404("no such figure")
    return downloads.svg_response(svg)


@login_required
@offloaded
def report_download(request, export_format, study=None, experiment=None):
    if export_format not in downloads.REPORT_FORMATS:
        raise Http404("reports download as .csv or .xlsx")
    _, studies, target = _scope(request, study=study, experiment=experiment)
    try:
        return downloads.report_file(studies, target.slug, export_format, table=request.GET.get("table", "icc"),
                                     exclude_flagged=request.GET.get("exclude_flagged") == "1",
                                     raw_ids=_raw_ids(request, studies))
    except ValidationError as error:
        return HttpResponseBadRequest("; ".join(f"{k}: {' '.join(v)}" for k, v in error.message_dict.items()),
                                      content_type="text/plain; charset=utf-8")


@login_required
@offloaded
def ratings_export(request, export_format, study=None, experiment=None):
    """Every rating of an experiment's conditions in one file (CSV, JSON lines or XLSX; the study page
    has one per study): a between-subjects analysis reads all conditions together."""
    if export_format not in EXPORT_FORMATS:
        raise Http404(f"ratings download as {', '.join('.' + f for f in EXPORT_FORMATS)}")
    _, studies, target = _scope(request, study=study, experiment=experiment)
    return ratings_response(studies, export_format, target.slug, raw_ids=_raw_ids(request, studies))


@login_required
@offloaded
def study_export(request, slug, export_format):
    study = get_object_or_404(access.studies_visible_to(request.user), slug=slug)
    if export_format not in EXPORT_FORMATS:
        raise Http404(f"ratings download as {', '.join('.' + f for f in EXPORT_FORMATS)}")
    return ratings_response(Study.objects.filter(pk=study.pk), export_format, study.slug,
                            raw_ids=raw_ids_requested(request, [study.experiment_id]))
