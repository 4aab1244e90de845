"""The reliability report of a study or an experiment (Santhanam & Shaikh 2019, Tables 1-9, and more),
computed from one long DataFrame of normalised ratings. No Django here: the caller loads the frame.

Frame columns: study, design, criterion, unit (the rated response), system, item, rater (an id),
rater_name (optional, shown in the rater table), assignment,
value, rank, score (normalised: Likert value, log10 magnitude ratio, BWS m+1-rank), seconds,
total_seconds, prior_rating_experience, prior_agent_experience.

- Table 1: ICC-C = ICC(C,k) and ICC-A = ICC(A,k) per condition × criterion (all six forms kept).
- Tables 2-3: raters whose completion time is above / below their condition's mean.
- Tables 4-7: raters with / without prior experience of (a) rating dialogue output, (b) chatbots.
- Table 9: Spearman between criteria (a rater's two scores of one response), per condition.
- Conditions compared on a common scale (per-rater z of normalised scores): two-way ANOVA
  condition × system and Tukey HSD; completion times; Krippendorff's alpha; raters needed for
  ICC 0.9 (Spearman-Brown); rater quality (leave-one-out correlation, time, straight-lining).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from studies.analysis.agreement import krippendorff_alpha, raters_needed
from studies.analysis.anova import common_systems, tukey, two_way_anova
from studies.analysis.icc import FORMS, ICCInputError, icc
from studies.analysis.normalise import per_rater_z
from studies.analysis.system_scores import scale_scores

TARGET_ICC = 0.9
# Krippendorff's alpha reads the same normalised scores as the ICC. Magnitude estimates become
# log10 ratios to each item's anchor (negative below it), so their level is interval, not ratio as
# STATISTICS.md once said for raw ME values: raw magnitudes scale with the anchor and measured agreement
# about the anchors rather than the responses (raw α .645 beside an ICC of −.09 on the seed's BME data).
# Each condition says its level and what its values are (``alpha_level``, ``alpha_values``: the design's,
# studies.designs); a condition that does not say is read at the interval level.
FLAG_MIN_LOO = 0.2
FLAG_MAX_STRAIGHT = 0.8


@dataclass
class ReportOptions:
    exclude_flagged: bool = False
    target_icc: float = TARGET_ICC
    min_loo: float = FLAG_MIN_LOO
    max_straight: float = FLAG_MAX_STRAIGHT


@dataclass
class Report:
    conditions: list[dict[str, Any]]
    criteria: list[str]
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    criteria_correlation: list[dict[str, Any]] = field(default_factory=list)
    completion: list[dict[str, Any]] = field(default_factory=list)
    anova: list[dict[str, Any]] = field(default_factory=list)
    alpha: list[dict[str, Any]] = field(default_factory=list)
    planning: list[dict[str, Any]] = field(default_factory=list)
    raters: list[dict[str, Any]] = field(default_factory=list)
    systems: list[dict[str, Any]] = field(default_factory=list)
    # Which system is better, per condition × criterion (studies.analysis.system_scores): first on the page.
    system_scores: list[dict[str, Any]] = field(default_factory=list)
    distributions: list[dict[str, Any]] = field(default_factory=list)
    excluded_raters: list[Any] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


TABLES = {
    "table1": ("Table 1: all raters", None),
    "table2": ("Table 2: raters above their condition's mean completion time", ("time", "above")),
    "table3": ("Table 3: raters below their condition's mean completion time", ("time", "below")),
    "table4": ("Table 4: raters with prior experience of rating dialogue systems",
               ("prior_rating_experience", True)),
    "table5": ("Table 5: raters without prior experience of rating dialogue systems",
               ("prior_rating_experience", False)),
    "table6": ("Table 6: raters who have talked with conversational agents", ("prior_agent_experience", True)),
    "table7": ("Table 7: raters who have not talked with conversational agents", ("prior_agent_experience", False)),
}


def table_title(key: str, *, excluding_flagged: bool = False) -> str:
    """A table's heading; once flagged raters are left out, it says so (Table 1 is then no longer
    "all raters")."""
    title = TABLES[key][0]
    if not excluding_flagged:
        return title
    return "Table 1: all raters except those flagged" if key == "table1" else f"{title} (flagged raters excluded)"


NEEDS_TWO_RATERS = "needs at least two raters on one item"
NO_RATINGS = "no submitted ratings yet"


def _finite(value: float) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def _two_raters_on_a_unit(frame: pd.DataFrame) -> bool:
    """Whether some unit was rated by two different raters (on integer codes: a group-by per cell is slow):
    a unit's smallest and largest rater code differ."""
    unit, units = pd.factorize(frame["unit"])
    rater, labels = pd.factorize(frame["rater"])
    if not len(labels):
        return False
    low, high = np.full(len(units), len(labels)), np.full(len(units), -1)
    np.minimum.at(low, unit, rater)
    np.maximum.at(high, unit, rater)
    return bool((low < high).any())


def icc_cell(frame: pd.DataFrame) -> dict[str, Any]:
    """ICCs of one condition × criterion (unit = rated response), or the reason there are none."""
    raters = int(frame["rater"].nunique())
    if not _two_raters_on_a_unit(frame):
        return {"n_raters": raters, "n_items": int(frame["unit"].nunique()), "n_ratings": len(frame),
                "error": NEEDS_TWO_RATERS}
    try:
        result = icc(frame["unit"].to_numpy(), frame["rater"].to_numpy(), frame["score"].to_numpy())
    except (ICCInputError, ValueError, ZeroDivisionError, FloatingPointError) as error:
        return {"n_raters": raters, "n_items": int(frame["unit"].nunique()), "n_ratings": len(frame), "error": str(error)}
    cell = result.as_dict()
    cell["icc"] = {name: {k: (_finite(v) if not isinstance(v, list) else [_finite(x) for x in v])
                          for k, v in form.items()} for name, form in cell["icc"].items()}
    return cell


def _subset(frame: pd.DataFrame, split: tuple[str, Any] | None) -> pd.DataFrame:
    if split is None:
        return frame
    column, side = split
    if column == "time":
        per_assignment = frame.drop_duplicates("assignment")[["study", "assignment", "total_seconds"]]
        means = per_assignment.groupby("study")["total_seconds"].transform("mean")
        chosen = per_assignment["total_seconds"] > means if side == "above" else per_assignment["total_seconds"] <= means
        return frame[frame["assignment"].isin(per_assignment.loc[chosen, "assignment"])]
    return frame[frame[column] == side]  # raters who did not answer (None) are in neither group


ICC_SPLITS = ("study", "assignment", "total_seconds", "prior_rating_experience", "prior_agent_experience")


def icc_tables(frame: pd.DataFrame, conditions: list[str], criteria: list[str]) -> dict[str, list[dict[str, Any]]]:
    # the columns the cells and the splits read, condition and criterion as integer codes: each table's subset
    # and cells then take numbers only, not the frame's every text column
    study_code, study_names = pd.factorize(frame["study"])
    criterion_code, criterion_names = pd.factorize(frame["criterion"])
    narrow = frame[["unit", "rater", "score", *(c for c in ICC_SPLITS[1:] if c in frame.columns)]].assign(
        study=study_code, criterion=criterion_code)
    code = {(s, c): (i, j) for i, s in enumerate(study_names) for j, c in enumerate(criterion_names)}
    tables = {}
    for key, (title, split) in TABLES.items():
        groups = _subset(narrow, split).groupby(["study", "criterion"], sort=False)[["unit", "rater", "score"]]
        cells = dict(iter(groups))  # one pass, not a mask per cell
        rows = []
        for study in conditions:
            for criterion in criteria:
                cell = cells.get(code.get((study, criterion)))
                rows.append({"table": key, "title": title, "condition": study, "criterion": criterion,
                             **(icc_cell(cell) if cell is not None and len(cell) else {
                                 "n_raters": 0, "n_items": 0, "n_ratings": 0, "error": "no raters in this group"})})
        tables[key] = rows
    return tables


def empty_tables(conditions: list[str], criteria: list[str], reason: str) -> dict[str, list[dict[str, Any]]]:
    """Every ICC table with a cell per condition × criterion that says why it is empty."""
    return {key: [{"table": key, "title": title, "condition": study, "criterion": criterion, "n_raters": 0,
                   "n_items": 0, "n_ratings": 0, "error": reason} for study in conditions for criterion in criteria]
            for key, (title, _) in TABLES.items()}


def criteria_correlation(frame: pd.DataFrame, conditions: list[str], criteria: list[str]) -> list[dict[str, Any]]:
    """Table 9: Spearman between each pair of criteria over (rater, response) pairs, per condition."""
    rows: list[dict[str, Any]] = []
    every = frame.pivot_table(index=["study", "assignment", "unit"], columns="criterion", values="score", aggfunc="first")
    present = set(every.index.get_level_values("study").unique()) if len(every) else set()
    for study in conditions:
        wide = every.xs(study, level="study").dropna(axis=1, how="all") if study in present else every.iloc[:0, :0]
        for i, a in enumerate(criteria):
            for b in criteria[i + 1:]:
                if a not in wide or b not in wide:
                    continue
                pair = wide[[a, b]].dropna()
                if len(pair) < 3 or pair[a].nunique() < 2 or pair[b].nunique() < 2:
                    rows.append({"condition": study, "a": a, "b": b, "rho": None, "p": None, "n": len(pair)})
                    continue
                result = stats.spearmanr(pair[a], pair[b])
                rows.append({"condition": study, "a": a, "b": b, "rho": float(result.statistic),
                             "p": float(result.pvalue), "n": len(pair)})
    return rows


def alpha_cell(part: pd.DataFrame, level: str) -> dict[str, Any]:
    """Krippendorff's alpha of one condition × criterion on the normalised ``score`` (the ICC's input),
    or None with the reason it cannot be computed yet: alpha compares values pairable within a unit, so
    it needs a unit with two raters and some variation (Krippendorff 2004, ch. 11)."""
    usable = part.assign(v=part["score"].to_numpy()).dropna(subset=["v"])
    if not _two_raters_on_a_unit(usable):
        return {"alpha": None, "note": NEEDS_TWO_RATERS}
    if usable["v"].nunique() < 2:
        return {"alpha": None, "note": "every rating has the same value: alpha is undefined without variation"}
    try:
        value = krippendorff_alpha(usable["unit"], usable["rater"], usable["v"], level=level)
    except (ValueError, ZeroDivisionError, FloatingPointError) as error:
        return {"alpha": None, "note": f"cannot be computed: {error}"}
    return {"alpha": _finite(value), "note": "" if np.isfinite(value) else "undefined for these ratings"}


def completion_times(frame: pd.DataFrame, conditions: list[str]) -> list[dict[str, Any]]:
    per_assignment = frame.drop_duplicates("assignment")[["study", "total_seconds"]].dropna()
    rows = []
    for study in conditions:
        seconds = per_assignment.loc[per_assignment["study"] == study, "total_seconds"].to_numpy()
        rows.append({"condition": study, "n": int(seconds.size),
                     "mean_minutes": _finite(seconds.mean() / 60) if seconds.size else None,
                     "median_minutes": _finite(np.median(seconds) / 60) if seconds.size else None,
                     "minutes": [float(s / 60) for s in seconds]})
    return rows


def with_z(frame: pd.DataFrame) -> pd.DataFrame:
    """Add ``z``: each rater's normalised scores z-scored within rater and criterion."""
    key = frame["rater"].astype(str) + "\x1f" + frame["criterion"].astype(str)
    return frame.assign(z=per_rater_z(frame["score"].to_numpy(), key.to_numpy()))


def condition_comparison(frame: pd.DataFrame, criteria: list[str]) -> list[dict[str, Any]]:
    """Two-way ANOVA (condition × system) and Tukey HSD between conditions, per criterion, on z."""
    rows = []
    for criterion in criteria:
        part = frame[frame["criterion"] == criterion].rename(columns={"study": "condition"})
        if part["condition"].nunique() < 2 or part["system"].nunique() < 2:
            continue
        systems = common_systems(part)
        if len(systems) < 2:
            continue
        table = two_way_anova(part)
        effects = [{"effect": name.replace("C(", "").replace(")", ""), "sum_sq": float(r["sum_sq"]), "df": float(r["df"]),
                    "F": _finite(r["F"]), "p": _finite(r["PR(>F)"]), "eta_sq": float(r["eta_sq"])}
                   for name, r in table.iterrows()]
        pairs = [{"a": r["group1"], "b": r["group2"], "mean_diff": float(r["meandiff"]), "p": float(r["p-adj"]),
                  "significant": bool(r["reject"])}
                 for _, r in tukey(part[part["system"].isin(systems)]).iterrows()]
        rows.append({"criterion": criterion, "systems": systems, "effects": effects, "tukey": pairs})
    return rows


def _sorted_codes(column: pd.Series) -> np.ndarray:
    """Integer codes of a column's values in sorted order, missing values NaN (left out of group-bys, as there)."""
    codes = pd.factorize(column, sort=True)[0]
    return np.where(codes < 0, np.nan, codes) if (codes < 0).any() else codes


def rater_quality(frame: pd.DataFrame, options: ReportOptions, ranked: Any = ()) -> pd.DataFrame:
    """Per rater: Spearman with the leave-one-out mean of the other raters on the same responses
    (ranks within rater, Pearson of ranks — vectorised), mean seconds per item, straight-lining
    (share of item screens where every response got the same value), and a flag."""
    # conditions and criteria as integer codes in sorted order (the groups and their order the texts give,
    # without hashing a text per row in every group-by)
    criterion, study = (_sorted_codes(frame[column]) for column in ("criterion", "study"))
    f = frame[["unit", "rater", "score"]].assign(study=study, criterion=criterion)
    group = [f["study"], f["criterion"], f["unit"]]
    total, count = f.groupby(group)["score"].transform("sum"), f.groupby(group)["score"].transform("count")
    f["loo"] = (total - f["score"]) / (count - 1)
    f = f[count > 1]
    by = [f["rater"], f["criterion"]]
    f["rx"] = f.groupby(by)["score"].rank()
    f["ry"] = f.groupby(by)["loo"].rank()
    g = f.groupby(["rater", "criterion"])
    moments = g.agg(n=("rx", "size"), mx=("rx", "mean"), my=("ry", "mean"))
    f = f.join(moments[["mx", "my"]], on=["rater", "criterion"])
    f["dx"], f["dy"] = f["rx"] - f["mx"], f["ry"] - f["my"]
    sums = f.assign(xy=f["dx"] * f["dy"], xx=f["dx"] ** 2, yy=f["dy"] ** 2).groupby(["rater", "criterion"])[["xy", "xx", "yy"]].sum()
    with np.errstate(divide="ignore", invalid="ignore"):
        sums["loo_r"] = sums["xy"] / np.sqrt(sums["xx"] * sums["yy"])
    per_rater = sums.groupby("rater")["loo_r"].mean().rename("loo_r").to_frame()

    # Ranks on one screen always differ: straight-lining is read on the other conditions (``ranked``: their slugs).
    read = frame[["rater", "item", "score"]].assign(criterion=criterion)
    screens = read[~frame["study"].isin(list(ranked)).to_numpy()].groupby(["rater", "item", "criterion"])["score"].agg(
        ["nunique", "size"])
    screens = screens[screens["size"] > 1]
    per_rater["straight_lining"] = (screens["nunique"] == 1).groupby("rater").mean()
    per_rater["seconds_per_item"] = frame.drop_duplicates(["rater", "item"]).groupby("rater")["seconds"].mean()
    first = frame.drop_duplicates("rater").set_index("rater")
    per_rater["study"] = first["study"]
    per_rater["name"] = first["rater_name"] if "rater_name" in first else first.index.astype(str)
    per_rater["ratings"] = frame.groupby("rater").size()
    # A flag needs its evidence: a rater with no leave-one-out ρ (nobody else rated their responses) or no
    # screen of two or more responses (chat and dialogue studies rate one) is not flagged on what is missing.
    low_loo = per_rater["loo_r"].notna() & (per_rater["loo_r"] < options.min_loo)
    straight = per_rater["straight_lining"].notna() & (per_rater["straight_lining"] > options.max_straight)
    if "failed_checks" in frame:  # attention checks / gold items failed (studies.rating.checks)
        per_rater["failed_checks"] = frame.groupby("rater")["failed_checks"].any().astype(bool)
    else:
        per_rater["failed_checks"] = False
    per_rater["flagged"] = low_loo | straight | per_rater["failed_checks"]
    per_rater["flag_reasons"] = [
        "; ".join(reason for reason, shown in (
            (f"LOO ρ {rho:.2f} < {options.min_loo:g}", is_low),
            (f"straight-lining {share:.2f} > {options.max_straight:g}", is_straight),
            ("attention checks failed (pass rate below the study's minimum)", failed)) if shown)
        for rho, share, is_low, is_straight, failed in zip(
            per_rater["loo_r"], per_rater["straight_lining"], low_loo, straight, per_rater["failed_checks"],
            strict=True)]
    return per_rater.reset_index()


def system_means(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Mean z per system, condition and criterion with a t 95% CI over the rated responses."""
    units = frame.groupby(["study", "criterion", "system", "unit"])["z"].mean().reset_index()
    rows = []
    for (study, criterion, system), g in units.groupby(["study", "criterion", "system"]):
        values = g["z"].to_numpy()
        mean = float(values.mean())
        half = float(stats.t.ppf(0.975, values.size - 1) * values.std(ddof=1) / np.sqrt(values.size)) if values.size > 1 else None
        rows.append({"condition": study, "criterion": criterion, "system": system, "mean_z": mean, "n": int(values.size),
                     "low": mean - half if half is not None else None, "high": mean + half if half is not None else None})
    return rows


def distributions(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Box-plot statistics of normalised scores per condition × criterion × system (Tukey whiskers:
    the most extreme scores within 1.5 IQR of the quartiles), so figures need no raw ratings."""
    rows = []
    for (study, criterion, system), scores in frame.groupby(["study", "criterion", "system"])["score"]:
        values = np.sort(scores.to_numpy())
        q1, med, q3 = np.percentile(values, [25, 50, 75])
        iqr = q3 - q1
        inside = values[(values >= q1 - 1.5 * iqr) & (values <= q3 + 1.5 * iqr)]
        rows.append({"condition": study, "criterion": criterion, "system": system, "n": int(values.size),
                     "q1": float(q1), "med": float(med), "q3": float(q3), "mean": float(values.mean()),
                     "whislo": float(inside.min()), "whishi": float(inside.max())})
    return rows


def _records(quality: pd.DataFrame) -> list[dict[str, Any]]:
    return [{k: (_finite(v) if isinstance(v, float) else v) for k, v in r.items()} for r in quality.to_dict("records")]


def _explain_choice_cells(report: Report) -> Report:
    """A condition whose judgments are choices (``icc_reason``: pairwise, ACUTE-Eval) has no ICC by design:
    its cells say so instead of "no submitted ratings yet" beside its hundreds of judgments."""
    reasons = {c["slug"]: c["icc_reason"] for c in report.conditions if c.get("icc_reason")}
    for rows in report.tables.values():
        for row in rows:
            if row["condition"] in reasons and "icc" not in row:
                row["error"] = reasons[row["condition"]]
    if reasons and len(reasons) == len(report.conditions):
        report.notes = [n for n in report.notes if not n.startswith("No submitted ratings yet")]
    return report


def build_report(frame: pd.DataFrame, conditions: list[dict[str, Any]], options: ReportOptions | None = None) -> Report:
    """Everything the report page shows. ``conditions``: [{"slug", "title", "design", "benchmark"}]."""
    return _explain_choice_cells(_build_report(frame, conditions, options))


def _build_report(frame: pd.DataFrame, conditions: list[dict[str, Any]], options: ReportOptions | None = None) -> Report:
    options = options or ReportOptions()
    slugs = [c["slug"] for c in conditions]
    configured = [name for c in conditions for name in c.get("criteria", ())]
    criteria = list(dict.fromkeys([*configured, *(frame["criterion"].unique() if len(frame) else [])]))
    report = Report(conditions=conditions, criteria=criteria)
    if frame.empty:
        report.tables = empty_tables(slugs, criteria, NO_RATINGS)
        report.notes.append("No submitted ratings yet: every figure and table fills in from the first submission; "
                            "reliability (ICC, Krippendorff's alpha) needs at least two raters on one item.")
        return report
    quality = rater_quality(frame, options, ranked=[c["slug"] for c in conditions if c.get("ranks")])
    if options.exclude_flagged:
        report.excluded_raters = quality.loc[quality["flagged"], "rater"].tolist()
        frame = frame[~frame["rater"].isin(report.excluded_raters)]
        report.notes.append(f"Recomputed without {len(report.excluded_raters)} flagged rater(s).")
        if frame.empty:
            report.raters = _records(quality)
            report.tables = empty_tables(slugs, criteria, "every rater is flagged")
            report.notes.append("Every rater is flagged: nothing is left to compute.")
            return report
    if not frame.groupby(["study", "criterion", "unit"])["rater"].nunique().gt(1).any():
        report.notes.append("Reliability (ICC, Krippendorff's alpha, raters needed, leave-one-out ρ) cannot be "
                            "computed yet: it needs at least two raters on one item.")
    report.system_scores = scale_scores(frame)
    frame = with_z(frame)
    report.tables = icc_tables(frame, slugs, criteria)
    report.criteria_correlation = criteria_correlation(frame, slugs, criteria)
    report.completion = completion_times(frame, slugs)
    report.anova = condition_comparison(frame, criteria)
    facts = {c["slug"]: c for c in conditions}
    cells = dict(iter(frame.groupby(["study", "criterion"], sort=False)))
    for study in slugs:
        for criterion in criteria:
            part = cells.get((study, criterion))
            if part is None or part.empty:
                continue
            level = facts[study].get("alpha_level", "interval")
            report.alpha.append({"condition": study, "criterion": criterion,
                                 "level": level, "values": facts[study].get("alpha_values", "normalised score"),
                                 **alpha_cell(part, level)})
    for row in report.tables["table1"]:
        if "icc" not in row:
            continue
        planned = {}
        for form in ("ICC(C,1)", "ICC(A,1)"):
            rho = row["icc"][form]["value"]
            planned[form] = _finite(np.ceil(raters_needed(rho, options.target_icc))) if rho is not None else None
        report.planning.append({"condition": row["condition"], "criterion": row["criterion"],
                                "target": options.target_icc, "raters_needed": planned})
    report.raters = _records(quality)
    report.systems = system_means(frame)
    report.distributions = distributions(frame)
    if any(c.get("benchmark") for c in conditions):
        report.notes.append("Imported benchmark: each 'rater' is an annotator position, not the same person across "
                            "items, so only the one-way forms ICC(1,1) and ICC(1,k) are meaningful here.")
    if any(row.get("method") == "incomplete" for row in report.tables["table1"]):
        report.notes.append("Some designs are incomplete (not every rater rated every response): ICCs use the "
                            "Ebel (one-way) and Brueckl (two-way) generalisations with k0 raters per item.")
    report.notes.append("Scores: Likert as given; RME/BME log10(max(value,1)/reference) (Bard et al. 1996); "
                        "BWS m+1-rank. Comparisons across conditions use per-rater z-scores.")
    present = set(frame["study"].unique())
    report.notes += list(dict.fromkeys(c["report_note"] for c in conditions if c.get("report_note")
                                       and c["slug"] in present))
    report.notes.append("Krippendorff's α reads the same normalised scores as the ICC: ordinal level for Likert "
                        "values and BWS ranks, interval level for the magnitude log ratios (raw magnitudes scale "
                        "with each item's reference and would measure agreement about the references).")
    return report


def report_rows(report: Report) -> list[dict[str, Any]]:
    """The ICC tables as tidy rows (one per table × condition × criterion × form) for CSV/XLSX."""
    rows = []
    for key, table in report.tables.items():
        for cell in table:
            for form in FORMS:
                entry = cell.get("icc", {}).get(form, {})
                rows.append({"table": key, "condition": cell["condition"], "criterion": cell["criterion"], "form": form,
                             "value": entry.get("value"), "F": entry.get("F"), "df1": entry.get("df1"),
                             "df2": entry.get("df2"), "p": entry.get("p"),
                             "ci_low": (entry.get("ci95") or [None, None])[0],
                             "ci_high": (entry.get("ci95") or [None, None])[1], "n_items": cell.get("n_items"),
                             "n_raters": cell.get("n_raters"), "n_ratings": cell.get("n_ratings"),
                             "k0": cell.get("k0"), "method": cell.get("method"), "note": cell.get("error", "")})
    return rows
