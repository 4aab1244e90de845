"""Statistics of per-turn labels (ABC-Eval's behaviour rates; Finch, Finch & Choi, ACL 2023).

Input: one row per rater and judged turn, ``unit`` (the rated conversation), ``turn`` (its index), ``rater``,
``system`` and ``answer`` (the turn's labels; a categorical turn's one label).

- Rate of a behaviour per system: p = k / n, k the rater-turn answers with the label, n all rater-turn
  answers of the system (ABC-Eval's "behaviour rate": the share of bot turns showing it).
- Two 95 % intervals beside it, because the answers are not independent (turns of one dialogue, and of one
  rater, go together):
  * Wilson's score interval over the n answers (Wilson 1927; ``labels.wilson_interval``, the same formula as
    statsmodels' ``proportion_confint(method="wilson")``): exact for independent answers, too narrow when a
    behaviour clusters in some dialogues;
  * a cluster (dialogue) bootstrap percentile interval (Davison & Hinkley 1997, §3.8; Field & Welsh 2007):
    the system's dialogues are resampled with replacement B = 2000 times, each replicate's rate is
    Σ k_d / Σ n_d over the drawn dialogues d, and the interval is the 2.5th and 97.5th percentiles. It keeps
    every dialogue's turns (and raters) together, so it is the one to read when dialogues differ; the report
    shows both, and the width ratio says how much the clustering matters.
- Between systems: Pearson's chi-square test of the systems × (present, absent) table and Fisher's exact
  test for two systems (``labels.system_association``; scipy). It treats answers as independent too: read
  its p-value with the cluster interval beside it.
- Agreement per behaviour: the unit is one turn of one dialogue; Krippendorff's α at the nominal level of
  present/absent (``agreement.krippendorff_alpha``, equal to the ``krippendorff`` package) over turns
  labelled by two or more raters, with raw agreement (the share of agreeing pairs of answers on a turn,
  ``labels.pairwise_agreement``) beside it: a rare behaviour has α near 0 at high raw agreement
  (Feinstein & Cicchetti 1990). A categorical per-turn criterion also gets one nominal α over its labels.

No Django: the report hands in plain frames.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from studies.analysis.agreement import krippendorff_alpha
from studies.analysis.labels import pairwise_agreement, system_association, wilson_interval

BOOTSTRAP_REPLICATES = 2000


def has_label(answers: pd.Series, label: str) -> np.ndarray:
    """1.0 where an answer (a label or a list of labels) holds ``label``, else 0.0."""
    return answers.map(lambda given: float(label == given if isinstance(given, str) else label in given)) \
        .to_numpy(dtype=float)


def cluster_bootstrap_interval(k: Sequence[float], n: Sequence[float], *, replicates: int = BOOTSTRAP_REPLICATES,
                               seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of Σk/Σn over clusters resampled with replacement (see the module); NaN for
    fewer than two clusters."""
    k_arr, n_arr = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
    if len(k_arr) < 2 or n_arr.sum() == 0:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(k_arr), size=(replicates, len(k_arr)))
    totals = n_arr[draws].sum(axis=1)
    rates = np.divide(k_arr[draws].sum(axis=1), totals, out=np.full(replicates, np.nan), where=totals > 0)
    tail = (1 - level) / 2 * 100
    low, high = np.nanpercentile(rates, [tail, 100 - tail])
    return (float(low), float(high))


def behaviour_rates(frame: pd.DataFrame, labels: Sequence[str], *, seed: int = 0) -> list[dict[str, Any]]:
    """Per label: each system's rate with its Wilson and dialogue-bootstrap intervals, and the test between
    systems (see the module)."""
    systems = sorted(frame["system"].unique()) if len(frame) else []
    out = []
    for label in labels:
        present = has_label(frame["answer"], label) if len(frame) else np.array([])
        part = frame.assign(present=present)
        rows, table = [], []
        for system in systems:
            group = part[part["system"] == system]
            k, n = int(group["present"].sum()), len(group)
            per_dialogue = group.groupby("unit")["present"].agg(["sum", "count"])
            low, high = wilson_interval(k, n)
            c_low, c_high = cluster_bootstrap_interval(per_dialogue["sum"], per_dialogue["count"], seed=seed)
            rows.append({"system": system, "count": k, "n": n, "dialogues": len(per_dialogue),
                         "rate": k / n if n else math.nan, "ci95": [low, high], "ci95_dialogues": [c_low, c_high]})
            table.append([k, n - k])
        test = system_association(np.array(table)) if len(table) >= 2 else {
            "chi2": math.nan, "df": 0, "p": math.nan, "cramers_v": math.nan, "fisher_p": None,
            "note": "needs two systems"}
        out.append({"label": label, "systems": rows, "test": test})
    return out


def behaviour_agreement(frame: pd.DataFrame, labels: Sequence[str], *, categorical: bool = False) -> dict[str, Any]:
    """Per label: nominal α of present/absent and raw agreement over turns (unit: dialogue and turn); for a
    categorical criterion also α over its labels. ``units``: turns labelled by two or more raters."""
    if frame.empty:
        return {"units": 0, "per_label": [{"label": label, "alpha": math.nan, "raw_agreement": None, "pairs": 0}
                                          for label in labels], "alpha": math.nan}
    unit = frame["unit"].astype(str) + ":" + frame["turn"].astype(str)
    per_label = []
    for label in labels:
        present = has_label(frame["answer"], label)
        raw = pairwise_agreement(unit, list(present))
        per_label.append({"label": label, "alpha": krippendorff_alpha(unit, frame["rater"], present, level="nominal"),
                          "raw_agreement": raw["agreement"], "pairs": raw["pairs"], "present": int(present.sum())})
    result: dict[str, Any] = {"units": int((unit.value_counts() >= 2).sum()), "per_label": per_label,
                              "alpha": math.nan}
    if categorical:
        codes = frame["answer"].map({label: i for i, label in enumerate(labels)}).to_numpy(dtype=float)
        result["alpha"] = krippendorff_alpha(unit, frame["rater"], codes, level="nominal")
        result["raw_agreement"] = pairwise_agreement(unit, frame["answer"])["agreement"]
    return result


def turns_frame(rows: Sequence[tuple[Any, Any, Any, dict[str, Any] | None]]) -> pd.DataFrame:
    """(conversation, system, rater, stored turns) rows as one row per rater and judged turn."""
    long = [(unit, system, rater, int(index), answer) for unit, system, rater, turns in rows
            for index, answer in (turns or {}).items()]
    return pd.DataFrame(long, columns=["unit", "system", "rater", "turn", "answer"])
