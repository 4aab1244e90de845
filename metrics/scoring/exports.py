"""Human-vs-metric and prediction-powered reports as files (CSV, XLSX): the pages and the API answer with
these, so a download holds the same rows wherever it is asked for."""
from __future__ import annotations

import csv
import io

from studies.reports.exporting import spreadsheet_safe

TABLES = ("estimates", "differences", "places", "planner", "win_rates", "bradley_terry", "combination")
CONTENT_TYPES = {"csv": "text/csv; charset=utf-8",
                 "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"}


def human_metric_csv(report: dict) -> str:
    """The human-vs-metric correlations as a tidy CSV: condition, criterion, level, method, r, p, CI, n; a
    label of a categorical or multi-label criterion adds its point-biserial r and AUC (level "label: ...")."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["condition", "criterion", "level", "method", "r", "p", "ci_low", "ci_high", "n", "human_ceiling"])
    for cell in report["cells"]:
        for level in ("response_level", "system_level"):
            for method, c in cell[level].items():
                ci = c["ci95"] or [None, None]
                writer.writerow([spreadsheet_safe(v) for v in (
                    cell["condition"], cell["criterion"], level.split("_")[0], method, c["r"], c["p"], ci[0], ci[1],
                    c["n"], cell["human_ceiling"])])
    for cell in report.get("label_cells", []):  # a label against the metric: level "label: <label>", over ratings
        for method, value, p in (("point_biserial", cell["r_pb"], cell["p"]), ("auc", cell["auc"], None)):
            writer.writerow([spreadsheet_safe(v) for v in (
                cell["condition"], cell["criterion"], f"label: {cell['label']}", method, value, p, None, None,
                cell["n"], None)])
    return buffer.getvalue()


def report_tables(report: dict) -> dict[str, list[dict]]:
    """The report as tidy tables (one row per study × criterion × system, pair or place)."""
    tables: dict[str, list[dict]] = {name: [] for name in TABLES}
    for study in report["studies"]:
        keys = {"study": study["slug"], "study_title": study["title"], "metric_model": report["metric_model"]}
        if study["problem"]:
            tables["estimates"].append({**keys, "problem": study["problem"]})
            continue
        for c in study["criteria"]:
            at = {**keys, "criterion": c["criterion"]}
            for r in c["systems"]:
                noise = r.get("rater_noise") or {}
                tables["estimates"].append({**at, **{k: v for k, v in r.items() if k != "rater_noise"},
                                            "ratings_per_unit": noise.get("ratings_per_unit"),
                                            "rater_noise_variance": noise.get("within_unit_variance"),
                                            "rater_noise_share": noise.get("noise_share")})
            if c.get("pooled"):
                tables["estimates"].append({**at, **c["pooled"]})
            tables["combination"] += [{**at, **{k: v for k, v in row.items() if k != "weights"},
                                       **{f"weight_{m}": w for m, w in row["weights"].items()}}
                                      for row in c.get("combination", [])]
            tables["differences"] += [{**at, **d} for d in c["differences"]]
            tables["places"] += [{**at, **p} for p in c["ranking"]]
            tables["planner"] += [{**at, **p} for p in c["plan"]]
        for c in study["pairwise"]:
            at = {**keys, "criterion": c["criterion"]}
            tables["win_rates"] += [{**at, **w} for w in c["win_rates"]]
            bt = c["bradley_terry"] or {}
            tables["bradley_terry"] += [{**at, **s} for s in bt.get("strengths", [])] or (
                [{**at, "problem": bt["problem"]}] if bt.get("problem") else [])
    return tables


def ppi_file(report: dict, export_format: str) -> bytes:
    """CSV (the system estimates) or XLSX (every table, one sheet each, and the notes)."""
    tables = report_tables(report)
    if export_format == "csv":
        rows = tables["estimates"]
        columns = list(dict.fromkeys(k for row in rows for k in row))
        text = io.StringIO()
        writer = csv.DictWriter(text, fieldnames=columns)
        writer.writeheader()
        writer.writerows([{k: spreadsheet_safe(v) for k, v in row.items()} for row in rows])
        return text.getvalue().encode()
    import pandas as pd

    from studies.reports.exporting import spreadsheet_frame

    buffer = io.BytesIO()
    with pd.ExcelWriter(buffer, engine="openpyxl") as excel:
        for sheet, rows in tables.items():
            spreadsheet_frame(pd.DataFrame(rows)).to_excel(excel, sheet_name=sheet.replace("_", " "), index=False)
        pd.DataFrame({"note": report["notes"]}).to_excel(excel, sheet_name="notes", index=False)
    return buffer.getvalue()
