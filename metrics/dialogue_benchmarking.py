"""Benchmarks of dialogue-level metrics (SelF-Eval and its baselines) against public judgments, read
straight from the files (nothing is written), with the published SelF-Eval numbers beside each.

- ``fed`` (dialogue level: records with ``dialog``) and ``dstc9``: per quality, Pearson / Spearman /
  Kendall (with p, n) between the metric's dialogue score and the mean human rating;
- ``fed`` (turn level: ``context`` + ``response``) and ``grade``: the response scored as context +
  response (the turn-level readers of ``metrics.benchmarking``);
- ``ddpp``: replacement-level accuracy on DailyDialog++ (the paper's Table 2). Each dialogue (context +
  its first relevant response) gives three seeded samples: Rep-0 the dialogue, Rep-1 one turn replaced,
  Rep-2 2..n turns replaced, replacement turns from the other dialogues of the file
  (``ml.data.replacement.rep_levels``). The paper does not define the accuracy further; here a sample is
  correct when it is ordered right against both other samples of its dialogue (above every sample with
  more replacements, below every one with fewer; a tie is wrong), the accuracy of Rep-r is the share of
  correct Rep-r samples, and the overall accuracy is their mean."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from studies.analysis.correlation import correlate_all

# Ma et al. COLING 2022, SelF-Eval(full): Table 2 (accuracy), Table 3 (DSTC9), Table 4 (FED, Spearman)
PUBLISHED = {
    "ddpp": {"Rep-0": 0.973, "Rep-1": 0.898, "Rep-2": 0.914, "overall": 0.928},
    "dstc9": {"pearson": 0.163, "spearman": 0.173},
    "fed-dialogue": {"spearman": {
        "Coherent": 0.436, "Error recovery": 0.393, "Consistent": 0.347, "Diverse": 0.263, "Depth": 0.327,
        "Likeable": 0.390, "Understanding": 0.406, "Flexible": 0.317, "Informative": 0.318, "Inquisitive": 0.421,
        "Overall": 0.435}},
    "fed-turn": {"spearman": {
        "Interesting": 0.183, "Engaging": 0.206, "Specific": 0.169, "Relevant": 0.282, "Correct": 0.291,
        "Semantically appropriate": 0.247, "Understandable": 0.173, "Fluent": 0.038, "Overall": 0.292}},
}
# the paper's names for FED's qualities, where the files spell them otherwise
FED_ALIASES = {"coherence": "Coherent", "error recovery": "Error recovery", "consistency": "Consistent",
               "diversity": "Diverse", "topic depth": "Depth", "likability": "Likeable", "flexibility": "Flexible",
               "informativeness": "Informative", "inquisitiveness": "Inquisitive", "interestingness": "Interesting",
               "engagement": "Engaging", "specificity": "Specific", "relevance": "Relevant",
               "correctness": "Correct", "fluency": "Fluent"}


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _published(table: dict, quality: str) -> float | None:
    """The paper's Spearman for a quality, whatever the spelling (``Relevant``, ``relevant``, ``relevance``,
    the importer's slug ``semantically-appropriate``)."""
    spearman = table.get("spearman", {})
    if not isinstance(spearman, dict):
        return spearman
    published = {_key(name): value for name, value in spearman.items()}
    aliases = {_key(alias): _key(name) for alias, name in FED_ALIASES.items()}
    key = _key(quality)
    return published.get(key, published.get(aliases.get(key, "")))


def correlations(values: list[float], dialogues, published: dict | None = None) -> dict[str, Any]:
    """Per quality: n and Pearson/Spearman/Kendall (r, p) between metric and mean human score."""
    qualities = sorted({q for d in dialogues for q in d.scores})
    table = {}
    for quality in qualities:
        metric, human = [], []
        for value, dialogue in zip(values, dialogues, strict=True):
            score = dialogue.human(quality)
            if score is not None:
                metric.append(value)
                human.append(score)
        row: dict[str, Any] = {"n": len(metric)}
        if len(metric) >= 3:
            row.update({m: {"r": c.as_dict()["r"], "p": c.as_dict()["p"]} for m, c in correlate_all(metric, human).items()})
        if published:
            row["published"] = ({"pearson": published.get("pearson"), "spearman": published.get("spearman")}
                                if "pearson" in published else {"spearman": _published(published, quality)})
        table[quality] = row
    return table


def replacement_accuracy(scores: list[list[float]]) -> dict[str, Any]:
    """``scores[d] = [s_Rep0, s_Rep1, s_Rep2]`` per dialogue -> accuracy per level and overall."""
    grid = np.asarray(scores, dtype=float).reshape(-1, 3)
    correct = {
        "Rep-0": (grid[:, 0] > grid[:, 1]) & (grid[:, 0] > grid[:, 2]),
        "Rep-1": (grid[:, 1] < grid[:, 0]) & (grid[:, 1] > grid[:, 2]),
        "Rep-2": (grid[:, 2] < grid[:, 0]) & (grid[:, 2] < grid[:, 1]),
    }
    accuracy = {k: float(v.mean()) if len(grid) else None for k, v in correct.items()}
    accuracy["overall"] = float(np.mean([accuracy[k] for k in correct])) if len(grid) else None
    return {"dialogues": len(grid), "samples_per_level": len(grid), "accuracy": accuracy,
            "published": PUBLISHED["ddpp"]}


def benchmark(implementation, dataset: Path, file_format: str, *, offset: int = 0, limit: int | None = None,
              seed: int = 71) -> dict[str, Any]:
    """The JSON result of ``benchmark_metric`` for a metric that scores dialogues (``score_dialogues``)."""
    from ml.data import dialogue_judgments as judgments

    kind = file_format
    if file_format == "fed":
        kind = judgments.detect_format(dataset)
    result: dict[str, Any] = {"level": "turn" if kind in ("fed-turn", "grade") else "dialogue", "format": kind}
    if kind == "ddpp":
        from ml.data.replacement import read_dialogues, rep_levels

        dialogues = read_dialogues(dataset)  # replacement turns come from the whole file, then the slice
        samples = rep_levels(dialogues, seed=seed)[offset:]
        samples = samples[:limit] if limit else samples
        values = implementation.score_dialogues([s.turns for triple in samples for s in triple])
        result["replacement"] = {**replacement_accuracy([values[i:i + 3] for i in range(0, len(values), 3)]),
                                 "seed": seed}
    elif kind in ("fed-dialogue", "dstc9"):
        dialogues = (judgments.read_fed_dialogues if kind == "fed-dialogue" else judgments.read_dstc9)(dataset)
        dialogues = dialogues[offset:]
        dialogues = dialogues[:limit] if limit else dialogues
        values = implementation.score_dialogues([d.turns for d in dialogues], [d.speakers for d in dialogues])
        result["records"] = len(dialogues)
        result["qualities"] = correlations(values, dialogues, PUBLISHED[kind])
    else:
        from metrics.benchmarking import human_correlations, read_records, score_records

        records = read_records(dataset, "fed" if kind == "fed-turn" else "grade")[offset:]
        records = records[:limit] if limit else records
        result["records"] = len(records)
        result["qualities"] = human_correlations(score_records(implementation, records))
        if kind == "fed-turn":
            for quality, row in result["qualities"].items():
                row["published"] = {"spearman": _published(PUBLISHED["fed-turn"], quality)}
    result["truncated_dialogues"] = getattr(implementation, "truncated", 0)
    return result
