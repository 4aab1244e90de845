"""Reliability report pages and downloads, for one study or a whole experiment (conditions side by side)."""
from __future__ import annotations

import hashlib
import io
from typing import TYPE_CHECKING

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, render
from django.urls import reverse

from studies import access
from studies.designs import DESIGNS, designs_of
from studies.designs.common import Section
from studies.models import Study
from studies.reads import one_read
from studies.reports import (
    aggregated_labels,
    label_selectors,
    position_selectors,
    rater_evidence,
    sections,
    system_scores,
)
from studies.reports import selectors as report_selectors
from studies.reports.exporting import EXPORT_FORMATS, no_store, ratings_response, raw_ids_requested, spreadsheet_frame

if TYPE_CHECKING:
    import pandas as pd

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


def condition_titles(report: Report) -> dict[str, str]:
    """slug -> title of each condition: pages, figures and downloads name conditions by title."""
    return {c["slug"]: c.get("title") or c["slug"] for c in report.conditions}


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
    query = "?exclude_flagged=1" if exclude else ""
    figures = {name: {"url": f"{request.path}figures/{name}.svg{query}", "alt": alt}
               for name, alt in _figure_names(report)} if report.tables else {}
    context = {
        "title": title, "target": target, "report": report, "exclude": exclude, "figures": figures,
        "system_scores": scores,  # which system is better: the page's first section
        "titles": condition_titles(report), "positions": position_selectors.position_report(studies),
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
@one_read()
def report_figure(request, name, study=None, experiment=None):
    """One report figure as SVG; the report itself comes from the cache the page filled."""
    from studies.reports import plots

    _, studies, _ = _scope(request, study=study, experiment=experiment)
    owner, _, rest = name.partition("-")
    if owner in DESIGNS:  # <design>-...: a design's own figure (pairwise-<study pk>-<criterion>: Bradley–Terry)
        svg = DESIGNS[owner].report_figure(studies, rest, exclude_flagged=request.GET.get("exclude_flagged") == "1")
        if svg is None:
            raise Http404("no such figure")
        return _svg_response(svg)
    report = report_selectors.reliability_report(studies, exclude_flagged=request.GET.get("exclude_flagged") == "1")
    conditions = [c["slug"] for c in report.conditions]
    titles = condition_titles(report)
    kind, _, criterion = name.partition("-")
    if not report.tables or (criterion and criterion not in report.criteria):
        raise Http404("no such figure")
    if kind == "icc":
        svg = plots.icc_bars(report.tables["table1"], titles)
    elif kind == "completion":
        svg = plots.completion_histogram(report.completion, titles)
    elif kind == "distributions":
        svg = plots.score_distributions(report.distributions, conditions, criterion, titles)
    elif kind == "ranking":
        svg = plots.system_ranking(report.systems, criterion, titles)
    else:
        raise Http404("no such figure")
    return _svg_response(svg)


def _svg_response(svg: str) -> HttpResponse:
    response = HttpResponse(svg, content_type="image/svg+xml")
    response["Cache-Control"] = "private, max-age=60"
    return response


def _with_titles(frame: pd.DataFrame, titles: dict[str, str]) -> pd.DataFrame:
    """A ``<column>_title`` beside every column that holds condition slugs (the slug stays: it is the
    stable key to join on; the title is what a reader recognises)."""
    for column in ("condition", "study", "a", "b"):
        if column in frame and f"{column}_title" not in frame and frame[column].isin(titles).all():
            frame.insert(frame.columns.get_loc(column) + 1, f"{column}_title", frame[column].map(titles))
    return frame


@login_required
def report_download(request, export_format, study=None, experiment=None):
    import pandas as pd

    from studies.analysis.report import report_rows

    if export_format not in ("csv", "xlsx"):
        raise Http404("reports download as .csv or .xlsx")
    title, studies, target = _scope(request, study=study, experiment=experiment)
    exclude = request.GET.get("exclude_flagged") == "1"
    report = report_selectors.reliability_report(studies, exclude_flagged=exclude, raw_ids=_raw_ids(request, studies))
    titles = condition_titles(report)
    icc_rows = spreadsheet_frame(_with_titles(pd.DataFrame(report_rows(report)), titles))
    blocks = system_scores.system_scores(report, report_selectors.design_sections(studies, report, exclude_flagged=exclude))
    score_tables = {"system_scores": ("System scores", pd.DataFrame(system_scores.score_rows(blocks))),
                    "system_differences": ("System differences", pd.DataFrame(system_scores.difference_rows(blocks)))}
    name = f"{target.slug}-reliability"
    aggregated = pd.DataFrame(aggregated_labels.table_rows(studies), columns=aggregated_labels.TABLE_FIELDS)
    if export_format == "csv":
        table = request.GET.get("table", "icc")  # the ICC tables, or the system scores or their differences
        if table != "icc" and table not in score_tables:
            return HttpResponseBadRequest("table: use icc, system_scores or system_differences",
                                          content_type="text/plain; charset=utf-8")
        if table == "icc":  # a study with label criteria only has no ICC row: its CSV is the aggregated labels
            rows = icc_rows if len(icc_rows) or not len(aggregated) else spreadsheet_frame(aggregated)
        else:
            rows = spreadsheet_frame(_with_titles(score_tables[table][1], titles))
        response = HttpResponse(rows.to_csv(index=False), content_type="text/csv; charset=utf-8")
        suffix = "" if table == "icc" else "-" + table.replace("_", "-")
        response["Content-Disposition"] = f'attachment; filename="{name}{suffix}.csv"'
        return no_store(response)
    sheets = {
        **{sheet: frame for sheet, frame in score_tables.values()},
        "ICC": icc_rows,
        "Table 9 criteria": pd.DataFrame(report.criteria_correlation),
        "Completion time": pd.DataFrame(report.completion).drop(columns="minutes", errors="ignore"),
        "Krippendorff alpha": pd.DataFrame(report.alpha),
        "Raters needed": pd.DataFrame([{**{k: v for k, v in r.items() if k != "raters_needed"}, **r["raters_needed"]}
                                       for r in report.planning]),
        "Rater quality": pd.DataFrame(report.raters),
        "ANOVA": pd.DataFrame([{"criterion": a["criterion"], **e} for a in report.anova for e in a["effects"]]),
        "Tukey HSD": pd.DataFrame([{"criterion": a["criterion"], **t} for a in report.anova for t in a["tukey"]]),
        "Position effects": pd.DataFrame([{**{k: v for k, v in e.items() if k != "positions"}, **p}
                                          for e in position_selectors.position_report(studies) for p in e["positions"]]),
    }
    for section in report_selectors.design_sections(studies, report, exclude_flagged=exclude):
        if section.data:  # the designs' own sections (pairwise win rates, best-worst split-half, ...)
            sheets.update(DESIGNS[section.key].report_sheets(section))
    labelled = label_selectors.label_report(studies, exclude_flagged=exclude, excluded_raters=report.excluded_raters)
    if labelled:  # label counts and shares per system (free text stays in the ratings export)
        sheets["Labels"] = pd.DataFrame([
            {"study": c["study"], "criterion": c["criterion"], "kind": c["kind"], "system": row["system"], "n": row["n"],
             "label": e["label"], "count": e["count"], "share": e["share"], "ci95_low": e["ci95"][0],
             "ci95_high": e["ci95"][1]} for c in labelled for row in c.get("shares", []) for e in row["labels"]])
    if len(aggregated):  # every target's aggregated label and probability, and each rater's competence
        sheets["Aggregated labels"] = aggregated
        sheets["Rater competence"] = pd.DataFrame(
            [row for s in studies for row in aggregated_labels.competence_rows(s, raw_ids=_raw_ids(request, studies))],
            columns=aggregated_labels.COMPETENCE_FIELDS)
    buffer = io.BytesIO()
    with pd.ExcelWriter(buffer, engine="openpyxl") as excel:
        for sheet, frame in sheets.items():
            spreadsheet_frame(_with_titles(frame, titles)).to_excel(excel, sheet_name=sheet, index=False)
    response = HttpResponse(buffer.getvalue(),
                            content_type="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
    response["Content-Disposition"] = f'attachment; filename="{name}.xlsx"'
    return no_store(response)


@login_required
def ratings_export(request, export_format, study=None, experiment=None):
    """Every rating of an experiment's conditions in one file (CSV, JSON lines or XLSX; the study page
    has one per study): a between-subjects analysis reads all conditions together."""
    if export_format not in EXPORT_FORMATS:
        raise Http404(f"ratings download as {', '.join('.' + f for f in EXPORT_FORMATS)}")
    _, studies, target = _scope(request, study=study, experiment=experiment)
    return ratings_response(studies, export_format, target.slug, raw_ids=_raw_ids(request, studies))


@login_required
def study_export(request, slug, export_format):
    study = get_object_or_404(access.studies_visible_to(request.user), slug=slug)
    if export_format not in EXPORT_FORMATS:
        raise Http404(f"ratings download as {', '.join('.' + f for f in EXPORT_FORMATS)}")
    return ratings_response(Study.objects.filter(pk=study.pk), export_format, study.slug,
                            raw_ids=raw_ids_requested(request, [study.experiment_id]))
