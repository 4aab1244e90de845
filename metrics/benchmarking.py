"""Metrics against public human judgments, straight from the files (no database).

- GRADE / FED: per quality, the human score of a response is the mean over its annotators;
  Pearson, Spearman, Kendall (with p) between metric and human, n responses.
- DailyDialog++: ranking accuracy between quality levels (the share of response pairs from one
  context where the better level scores higher; ties count half) and Spearman with the level."""
from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from metrics.implementations.base import MetricImplementation, ScoringInput
from studies.analysis.correlation import correlate_all
from studies.corpora.importing.parsers import PARSERS
from studies.corpora.importing.records import ImportProblem, ParsedConversation, ParsedHeader

LEVELS = {"ddpp-random": 1, "ddpp-adversarial": 2, "ddpp-relevant": 3}


def read_records(path: Path, file_format: str) -> list[ParsedConversation]:
    header = ParsedHeader()
    with path.open("rb") as stream:
        records = list(PARSERS[file_format](stream, header))
    problems = [r for r in records if isinstance(r, ImportProblem)]
    if problems:
        raise ValueError("; ".join(str(p) for p in problems[:5]))
    return records


def score_records(implementation: MetricImplementation, records: list[ParsedConversation], *, batch: int = 256,
                  on_progress: Callable[[int], None] | None = None) -> list[tuple[ParsedConversation, Any, float]]:
    pairs = [(record, response) for record in records for response in record.responses]
    values: list[float] = []
    for start in range(0, len(pairs), batch):
        chunk = pairs[start:start + batch]
        values += implementation.score([ScoringInput(turns=[t["text"] for t in r.turns], response=p.text) for r, p in chunk])
        if on_progress:
            on_progress(len(values))
    return [(r, p, v) for (r, p), v in zip(pairs, values, strict=True)]


def human_correlations(scored) -> dict[str, Any]:
    qualities = sorted({q for _, p, _ in scored for q in p.human_scores})
    table = {}
    for quality in qualities:
        metric, human = [], []
        for _, response, value in scored:
            given = [s for s in response.human_scores.get(quality, []) if s is not None]
            if given:
                metric.append(value)
                human.append(float(np.mean(given)))
        table[quality] = {"n": len(metric), **{m: {"r": c.r, "p": c.p} for m, c in correlate_all(metric, human).items()}}
    return table


def ranking_accuracy(scored) -> dict[str, Any]:
    by_context: dict[str, list[tuple[int, float]]] = {}
    for record, response, value in scored:
        by_context.setdefault(record.external_id, []).append((LEVELS[response.system], value))
    pairs: dict[str, list[float]] = {}
    for entries in by_context.values():
        for (la, va), (lb, vb) in itertools.combinations(entries, 2):
            if la == lb:
                continue
            (low, lv), (high, hv) = sorted([(la, va), (lb, vb)])
            pairs.setdefault(f"level{high}>level{low}", []).append(1.0 if hv > lv else 0.5 if hv == lv else 0.0)
    levels = [LEVELS[p.system] for _, p, _ in scored]
    values = [v for _, _, v in scored]
    spearman = stats.spearmanr(values, levels)
    return {"contexts": len(by_context), "responses": len(scored),
            "accuracy": {k: {"value": float(np.mean(v)), "pairs": len(v)} for k, v in sorted(pairs.items())},
            "overall_accuracy": float(np.mean([x for v in pairs.values() for x in v])),
            "spearman_with_level": {"r": float(spearman.statistic), "p": float(spearman.pvalue)}}
