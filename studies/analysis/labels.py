"""Statistics of label judgements (categorical and multi-label criteria): counts and shares per system
with confidence intervals, agreement, association with the system, and a label against a metric.

- Shares: p = k / n per system and label, with the Wilson score interval (Wilson 1927; Agresti & Coull
  1998): (p + z²/2n ± z √(p(1−p)/n + z²/4n²)) / (1 + z²/n), z = Φ⁻¹(0.975); as statsmodels'
  ``proportion_confint(method="wilson")``.
- Agreement, categorical: Krippendorff's α at the nominal level (``agreement.krippendorff_alpha``,
  Krippendorff 2011) over every target rated twice or more, and Fleiss' κ (Fleiss 1971) over the targets
  rated by the most common number of raters m (κ needs the same m per target):
  κ = (P̄ − P̄_e) / (1 − P̄_e), P_i = (Σ_j n_ij² − m) / (m(m − 1)), P̄_e = Σ_j p_j², p_j = Σ_i n_ij / (N m);
  as statsmodels' ``fleiss_kappa``.
- Raw agreement beside each: the share of agreeing pairs among all pairs of answers on the same target
  (``pairwise_agreement``: Σ_u Σ_k C(n_uk, 2) / Σ_u C(m_u, 2)), since a chance-corrected coefficient
  alone misleads where one label is prevalent: α or κ near 0 at 94 % raw agreement (Feinstein & Cicchetti
  1990, "High agreement but low kappa"; Gwet 2008).
- Agreement, multi-label: one binary (label present / absent) α, κ and raw agreement per label.
- Association of system and label: Pearson's chi-square test of independence on the systems × labels
  table (``scipy.stats.chi2_contingency``, Yates' correction off for 2 × 2), and Fisher's exact test
  where the table is 2 × 2 (``scipy.stats.fisher_exact``); Cramér's V = √(χ² / (N (min(r, c) − 1))).
- A binary label against a metric: the point-biserial correlation r_pb (Pearson's r of the 0/1 label
  and the score; ``scipy.stats.pointbiserialr``) and the AUC, the probability that a target with the
  label scores above one without it (ties count ½): U / (n₁ n₀), Mann–Whitney's U (Hanley & McNeil
  1982); as scikit-learn's ``roc_auc_score``.

No Django: the report hands in plain frames.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from studies.analysis.agreement import krippendorff_alpha

Z95 = 1.959963984540054


def wilson_interval(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion k / n (see the module)."""
    if n == 0:
        return (math.nan, math.nan)
    p = k / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    scale = 1 + z * z / n
    return ((centre - half) / scale, (centre + half) / scale)


def label_shares(frame: pd.DataFrame, labels: Sequence[str]) -> list[dict[str, Any]]:
    """Per system: n (answers) and for each label its count, share and 95% Wilson interval. ``frame``:
    one row per answer with ``system`` and ``label`` (for a multi-label criterion one row per answer and
    chosen label, with ``answer`` identifying the answer so that n counts answers, not labels)."""
    rows = []
    for system, group in frame.groupby("system", sort=True):
        n = int(group["answer"].nunique()) if "answer" in group else len(group)
        counts = group["label"].value_counts()
        entry = {"system": system, "n": n, "labels": []}
        for label in labels:
            k = int(counts.get(label, 0))
            low, high = wilson_interval(k, n)
            entry["labels"].append({"label": label, "count": k, "share": k / n if n else math.nan,
                                    "ci95": [low, high]})
        rows.append(entry)
    return rows


def fleiss_kappa(units: Sequence[Any], codes: Sequence[int], n_categories: int) -> tuple[float, int]:
    """Fleiss' κ of (unit, category code) answers over the units with the most common number of
    answers m (at least 2); returns (κ, units used). NaN when fewer than two such units."""
    frame = pd.DataFrame({"unit": list(units), "code": list(codes)})
    if frame.empty:
        return math.nan, 0
    sizes = frame.groupby("unit").size()
    sizes = sizes[sizes >= 2]
    if sizes.empty:
        return math.nan, 0
    m = int(sizes.mode().max())
    kept = frame[frame["unit"].isin(sizes[sizes == m].index)]
    table = np.zeros((kept["unit"].nunique(), n_categories))
    unit_index = pd.factorize(kept["unit"])[0]
    np.add.at(table, (unit_index, kept["code"].to_numpy()), 1)
    n_units = table.shape[0]
    if n_units < 2:
        return math.nan, n_units
    p_j = table.sum(axis=0) / (n_units * m)
    p_i = ((table ** 2).sum(axis=1) - m) / (m * (m - 1))
    p_bar, p_e = p_i.mean(), (p_j ** 2).sum()
    return (float((p_bar - p_e) / (1 - p_e)) if p_e < 1 else math.nan), n_units


def pairwise_agreement(units: Sequence[Any], codes: Sequence[Any]) -> dict[str, Any]:
    """Raw agreement of (unit, answer) pairs: {"agreement": agreeing pairs / pairs of answers on the same
    unit (None without any), "pairs"}; a unit with m answers has m(m − 1)/2 pairs."""
    counts = pd.DataFrame({"unit": np.asarray(units), "code": np.asarray(codes)}).groupby(["unit", "code"]).size()
    if counts.empty:
        return {"agreement": None, "pairs": 0}
    per_unit = counts.groupby(level=0).sum()
    pairs = int((per_unit * (per_unit - 1) // 2).sum())
    agreeing = int((counts * (counts - 1) // 2).sum())
    return {"agreement": agreeing / pairs if pairs else None, "pairs": pairs}


def categorical_agreement(frame: pd.DataFrame, labels: Sequence[str]) -> dict[str, Any]:
    """Krippendorff's α (nominal) and Fleiss' κ of one categorical criterion. ``frame``: ``unit``
    (the rated target), ``rater``, ``label``."""
    codes = frame["label"].map({label: i for i, label in enumerate(labels)}).to_numpy(dtype=float)
    alpha = krippendorff_alpha(frame["unit"], frame["rater"], codes, level="nominal") if len(frame) else math.nan
    kappa, used = fleiss_kappa(frame["unit"], codes.astype(int), len(labels)) if len(frame) else (math.nan, 0)
    raw = pairwise_agreement(frame["unit"], frame["label"]) if len(frame) else {"agreement": None, "pairs": 0}
    return {"alpha": alpha, "kappa": kappa, "kappa_units": used, "raw_agreement": raw["agreement"],
            "pairs": raw["pairs"], "units": int((frame.groupby("unit").size() >= 2).sum()) if len(frame) else 0}


def multilabel_agreement(frame: pd.DataFrame, labels: Sequence[str]) -> list[dict[str, Any]]:
    """One binary agreement per label (present / absent) of a multi-label criterion. ``frame``: ``unit``,
    ``rater``, ``labels`` (the chosen labels of each answer)."""
    rows = []
    for label in labels:
        present = frame["labels"].map(lambda chosen, label=label: label in chosen).astype(float).to_numpy()
        alpha = krippendorff_alpha(frame["unit"], frame["rater"], present, level="nominal") if len(frame) else math.nan
        kappa, used = fleiss_kappa(frame["unit"], present.astype(int), 2) if len(frame) else (math.nan, 0)
        raw = pairwise_agreement(frame["unit"], present) if len(frame) else {"agreement": None, "pairs": 0}
        rows.append({"label": label, "alpha": alpha, "kappa": kappa, "kappa_units": used,
                     "raw_agreement": raw["agreement"], "pairs": raw["pairs"],
                     "present": int(present.sum()) if len(frame) else 0})
    return rows


def system_association(table: np.ndarray) -> dict[str, Any]:
    """Chi-square test of independence of a systems × labels count table (rows and columns that are all
    zero are dropped), Cramér's V, and Fisher's exact test where the table is 2 × 2."""
    table = np.asarray(table, dtype=float)
    table = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]
    if table.shape[0] < 2 or table.shape[1] < 2:
        return {"chi2": math.nan, "df": 0, "p": math.nan, "cramers_v": math.nan, "fisher_p": None,
                "note": "needs two systems and two labels that occur"}
    chi2, p, df, expected = stats.chi2_contingency(table, correction=False)
    n = table.sum()
    result = {"chi2": float(chi2), "df": int(df), "p": float(p),
              "cramers_v": float(math.sqrt(chi2 / (n * (min(table.shape) - 1)))),
              "fisher_p": None, "note": "some expected counts are below 5" if (expected < 5).any() else ""}
    if table.shape == (2, 2):
        result["fisher_p"] = float(stats.fisher_exact(table.astype(int))[1])
    return result


def label_metric_association(has_label: Sequence[bool], scores: Sequence[float]) -> dict[str, Any]:
    """Point-biserial correlation and AUC of a binary label against a metric's scores (see the module)."""
    y = np.asarray(has_label, dtype=bool)
    x = np.asarray(scores, dtype=float)
    keep = np.isfinite(x)
    y, x = y[keep], x[keep]
    n1, n0 = int(y.sum()), int((~y).sum())
    if n1 == 0 or n0 == 0 or np.ptp(x) == 0:
        return {"n": int(len(x)), "positives": n1, "r_pb": math.nan, "p": math.nan, "auc": math.nan}
    r, p = stats.pointbiserialr(y.astype(float), x)
    ranks = stats.rankdata(x)  # average ranks: ties count ½
    u = ranks[y].sum() - n1 * (n1 + 1) / 2
    return {"n": int(len(x)), "positives": n1, "r_pb": float(r), "p": float(p), "auc": float(u / (n1 * n0))}
