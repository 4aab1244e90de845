"""Token-level agreement of span annotation (see ``analysis.spans`` for the methods and their sources):
Krippendorff's α, Fleiss' κ, Cohen's κ and raw agreement over every (document, token) unit. No Django."""
from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from studies.analysis.agreement import krippendorff_alpha
from studies.analysis.labels import fleiss_kappa, pairwise_agreement
from studies.analysis.spans import NONE, TOKEN_METHOD, annotations_by_doc, cohen_kappa, token_labels


def token_table(texts: Mapping[Hashable, str], annotations: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per (document, token, rater): ``unit`` (doc, token index), ``rater``, ``label``."""
    rows: list[tuple[Any, Any, str]] = []
    for doc, by_rater in annotations_by_doc(annotations).items():
        text = texts[doc]
        for rater, spans in by_rater.items():
            rows.extend(((doc, i), rater, label) for i, label in enumerate(token_labels(text, spans)))
    return pd.DataFrame(rows, columns=["unit", "rater", "label"])


def token_agreement(texts: Mapping[Hashable, str], annotations: Iterable[Mapping[str, Any]],
                    labels: Sequence[str]) -> dict[str, Any]:
    """Token-level α, Fleiss' κ, Cohen's κ (exactly two raters on every document, else None) and raw
    agreement (see the module docstring)."""
    table = token_table(texts, annotations)
    out: dict[str, Any] = {"alpha": math.nan, "fleiss_kappa": math.nan, "cohen_kappa": None, "raw_agreement": None,
                           "tokens": 0, "method": TOKEN_METHOD}
    if table.empty:
        return out
    codes_of = {NONE: 0, **{label: i + 1 for i, label in enumerate(labels)}}
    codes = table["label"].map(lambda label: codes_of.setdefault(label, len(codes_of))).to_numpy()
    units = table["unit"].map(str)  # tuples as one hashable the frames group by
    out["alpha"] = krippendorff_alpha(units, table["rater"].map(str), codes.astype(float), level="nominal")
    out["fleiss_kappa"], _ = fleiss_kappa(units, codes.astype(int), len(codes_of))
    out["raw_agreement"] = pairwise_agreement(units, table["label"])["agreement"]
    out["tokens"] = int((table.groupby(units).size() >= 2).sum())
    raters = table["rater"].unique()
    if len(raters) == 2:
        wide = table.assign(unit=units).pivot(index="unit", columns="rater", values="label").dropna()
        if len(wide) == table["unit"].nunique():
            out["cohen_kappa"] = cohen_kappa(list(wide[raters[0]]), list(wide[raters[1]]))
    return out


def mean_spans(annotations: Sequence[Mapping[str, Any]]) -> float:
    """The mean number of spans per annotation."""
    return float(np.mean([len(a["spans"]) for a in annotations])) if annotations else math.nan

