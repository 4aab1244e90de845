"""The report as files: CSV/XLSX tables and SVG figures, for one study or an experiment's conditions. The
report pages and the API both answer with these (one place decides what a download holds)."""
from __future__ import annotations

import io
from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError
from django.http import HttpResponse

from studies.designs import DESIGNS
from studies.reports import aggregated_labels, label_selectors, per_turn_selectors, position_selectors, system_scores
from studies.reports import selectors as report_selectors
from studies.reports.exporting import no_store, spreadsheet_frame

if TYPE_CHECKING:
    import pandas as pd

    from studies.analysis.report import Report

REPORT_FORMATS = ("csv", "xlsx")
CSV_TABLES = ("icc", "system_scores", "system_differences")
FIGURE_KINDS = ("icc", "completion", "distributions-<criterion>", "ranking-<criterion>",
                "<design>-<...> (a design's own figure)")
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def condition_titles(report: Report) -> dict[str, str]:
    """slug -> title of each condition: pages, figures and downloads name conditions by title."""
    return {c["slug"]: c.get("title") or c["slug"] for c in report.conditions}


def with_titles(frame: pd.DataFrame, titles: dict[str, str]) -> pd.DataFrame:
    """A ``<column>_title`` beside every column that holds condition slugs (the slug stays: it is the
    stable key to join on; the title is what a reader recognises)."""
    for column in ("condition", "study", "a", "b"):
        if column in frame and f"{column}_title" not in frame and frame[column].isin(titles).all():
            frame.insert(frame.columns.get_loc(column) + 1, f"{column}_title", frame[column].map(titles))
    return frame


def report_figure_svg(studies, name: str, *, exclude_flagged: bool = False) -> str | None:
    """One report figure as SVG text, or None when the report has no figure of that name."""
    from studies.reports import plots

    owner, _, rest = name.partition("-")
    if owner in DESIGNS:  # <design>-...: a design's own figure (pairwise-<study pk>-<criterion>: Bradley–Terry)
        return DESIGNS[owner].report_figure(studies, rest, exclude_flagged=exclude_flagged)
    report = report_selectors.reliability_report(studies, exclude_flagged=exclude_flagged)
    conditions = [c["slug"] for c in report.conditions]
    titles = condition_titles(report)
    kind, _, criterion = name.partition("-")
    if not report.tables or (criterion and criterion not in report.criteria):
        return None
    if kind == "icc":
        return plots.icc_bars(report.tables["table1"], titles)
    if kind == "completion":
        return plots.completion_histogram(report.completion, titles)
    if kind == "distributions":
        return plots.score_distributions(report.distributions, conditions, criterion, titles)
    if kind == "ranking":
        return plots.system_ranking(report.systems, criterion, titles)
    return None


def svg_response(svg: str) -> HttpResponse:
    response = HttpResponse(svg, content_type="image/svg+xml")
    response["Cache-Control"] = "private, max-age=60"
    return response


def report_file(studies, name: str, export_format: str, *, table: str = "icc", exclude_flagged: bool = False,
                raw_ids: bool = False) -> HttpResponse:
    """The report as a download: CSV (one ``table``: the ICC tables, the system scores or their
    differences) or XLSX (every table, one sheet each). ValidationError naming ``table`` for another."""
    import pandas as pd

    from studies.analysis.report import report_rows

    if export_format == "csv" and table not in CSV_TABLES:
        raise ValidationError({"table": f"use {', '.join(CSV_TABLES)}"})
    report = report_selectors.reliability_report(studies, exclude_flagged=exclude_flagged, raw_ids=raw_ids)
    titles = condition_titles(report)
    icc_rows = spreadsheet_frame(with_titles(pd.DataFrame(report_rows(report)), titles))
    blocks = system_scores.system_scores(report, report_selectors.design_sections(studies, report, exclude_flagged=exclude_flagged))
    score_tables = {"system_scores": ("System scores", pd.DataFrame(system_scores.score_rows(blocks))),
                    "system_differences": ("System differences", pd.DataFrame(system_scores.difference_rows(blocks)))}
    name = f"{name}-reliability"
    aggregated = pd.DataFrame(aggregated_labels.table_rows(studies), columns=aggregated_labels.TABLE_FIELDS)
    if export_format == "csv":
        if table == "icc":  # a study with label criteria only has no ICC row: its CSV is the aggregated labels
            rows = icc_rows if len(icc_rows) or not len(aggregated) else spreadsheet_frame(aggregated)
        else:
            rows = spreadsheet_frame(with_titles(score_tables[table][1], titles))
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
    for section in report_selectors.design_sections(studies, report, exclude_flagged=exclude_flagged):
        if section.data:  # the designs' own sections (pairwise win rates, best-worst split-half, ...)
            sheets.update(DESIGNS[section.key].report_sheets(section))
    labelled = label_selectors.label_report(studies, exclude_flagged=exclude_flagged, excluded_raters=report.excluded_raters)
    if labelled:  # label counts and shares per system (free text stays in the ratings export)
        sheets["Labels"] = pd.DataFrame([
            {"study": c["study"], "criterion": c["criterion"], "kind": c["kind"], "system": row["system"], "n": row["n"],
             "label": e["label"], "count": e["count"], "share": e["share"], "ci95_low": e["ci95"][0],
             "ci95_high": e["ci95"][1]} for c in labelled for row in c.get("shares", []) for e in row["labels"]])
    turned = per_turn_selectors.per_turn_report(studies, exclude_flagged=exclude_flagged,
                                                excluded_raters=report.excluded_raters)
    if turned:  # each behaviour's rate per system, its intervals and the test between systems
        sheets[per_turn_selectors.SHEET] = pd.DataFrame(per_turn_selectors.per_turn_sheet_rows(turned))
    if len(aggregated):  # every target's aggregated label and probability, and each rater's competence
        sheets["Aggregated labels"] = aggregated
        sheets["Rater competence"] = pd.DataFrame(
            [row for s in studies for row in aggregated_labels.competence_rows(s, raw_ids=raw_ids)],
            columns=aggregated_labels.COMPETENCE_FIELDS)
    buffer = io.BytesIO()
    with pd.ExcelWriter(buffer, engine="openpyxl") as excel:
        for sheet, frame in sheets.items():
            spreadsheet_frame(with_titles(frame, titles)).to_excel(excel, sheet_name=sheet, index=False)
    response = HttpResponse(buffer.getvalue(), content_type=XLSX)
    response["Content-Disposition"] = f'attachment; filename="{name}.xlsx"'
    return no_store(response)
