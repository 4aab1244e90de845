"""Comparing conditions: two-way ANOVA (condition × system) on a common scale, with Tukey HSD.

Scores from different designs are first put on one scale (per-rater z-scores, see normalise.py);
then ``statsmodels`` fits score ~ C(condition) * C(system) by OLS and ``anova_lm(typ=2)`` gives the
type-II table. Only systems rated in every condition enter (magnitude designs do not rate the human
reference, which would leave empty cells).

Tukey HSD (Tukey-Kramer for unequal groups): for groups a, b with means m, sizes n and pooled
within-group mean square MSE on N − g df, q = |m_b − m_a| / sqrt(MSE/2 · (1/n_a + 1/n_b)) and
p = P(Q > q) under the studentized range with g groups. p-values equal ``scipy.stats.tukey_hsd``;
the confidence intervals are left out because the studentized-range quantile is slow to compute.
"""
from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from scipy.stats import studentized_range
from statsmodels.stats.anova import anova_lm


def common_systems(frame: pd.DataFrame, *, condition: str = "condition", system: str = "system") -> list[str]:
    per_condition = frame.groupby(condition)[system].agg(set)
    return sorted(set.intersection(*per_condition)) if len(per_condition) else []


def two_way_anova(frame: pd.DataFrame, *, score: str = "z", condition: str = "condition",
                  system: str = "system") -> pd.DataFrame:
    """Type-II ANOVA table: rows C(condition), C(system), their interaction, Residual; columns
    sum_sq, df, F, PR(>F), plus eta_sq (effect SS / total SS)."""
    data = frame[[score, condition, system]].rename(columns={score: "score", condition: "condition", system: "system"})
    data = data[data["system"].isin(common_systems(data))]
    model = smf.ols("score ~ C(condition) * C(system)", data=data).fit()
    table = anova_lm(model, typ=2)
    table["eta_sq"] = table["sum_sq"] / table["sum_sq"].sum()
    return table


def tukey(frame: pd.DataFrame, *, score: str = "z", group: str = "condition", alpha: float = 0.05) -> pd.DataFrame:
    """Tukey HSD between every pair of groups: group1, group2, meandiff (group2 − group1), p-adj, reject."""
    values = frame[score].to_numpy(dtype=float)
    codes, labels = pd.factorize(frame[group], sort=True)
    g = len(labels)
    counts = np.bincount(codes, minlength=g).astype(float)
    means = np.bincount(codes, weights=values, minlength=g) / counts
    dof = values.size - g
    mse = np.sum((values - means[codes]) ** 2) / dof
    rows = []
    for a, b in itertools.combinations(range(g), 2):
        diff = means[b] - means[a]
        q = abs(diff) / np.sqrt(mse / 2 * (1 / counts[a] + 1 / counts[b]))
        p = float(studentized_range.sf(q, g, dof))
        rows.append({"group1": labels[a], "group2": labels[b], "meandiff": float(diff), "p-adj": p, "reject": p < alpha})
    return pd.DataFrame(rows, columns=["group1", "group2", "meandiff", "p-adj", "reject"])
