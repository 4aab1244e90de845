"""Comparing conditions: two-way ANOVA (condition × system) on a common scale, with Tukey HSD.

Scores from different designs are first put on one scale (per-rater z-scores, see normalise.py);
then ``statsmodels`` fits score ~ C(condition) * C(system) by OLS and ``anova_lm(typ=2)`` gives the
type-II table; ``pairwise_tukeyhsd`` compares conditions pairwise.
"""
from __future__ import annotations

import pandas as pd
import statsmodels.formula.api as smf
from statsmodels.stats.anova import anova_lm
from statsmodels.stats.multicomp import pairwise_tukeyhsd


def two_way_anova(frame: pd.DataFrame, *, score: str = "z", condition: str = "condition",
                  system: str = "system") -> pd.DataFrame:
    """Type-II ANOVA table: rows C(condition), C(system), their interaction, Residual; columns
    sum_sq, df, F, PR(>F), plus eta_sq (effect SS / total SS)."""
    data = frame[[score, condition, system]].rename(columns={score: "score", condition: "condition", system: "system"})
    model = smf.ols("score ~ C(condition) * C(system)", data=data).fit()
    table = anova_lm(model, typ=2)
    table["eta_sq"] = table["sum_sq"] / table["sum_sq"].sum()
    return table


def tukey(frame: pd.DataFrame, *, score: str = "z", group: str = "condition") -> pd.DataFrame:
    """Tukey HSD between the groups: group1, group2, meandiff, p-adj, lower, upper, reject."""
    result = pairwise_tukeyhsd(frame[score].to_numpy(), frame[group].to_numpy())
    table = pd.DataFrame(result.summary().data[1:], columns=result.summary().data[0])
    table["p-adj"] = result.pvalues
    return table
