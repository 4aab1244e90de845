"""Metrics against public human judgments, straight from the files (no database): what
``benchmark_metric`` prints and what a model card (``metrics.benchmarking.model_cards``) compares.

- Human scores (GRADE, FED turn and dialogue level, DSTC9): per quality, the human score of an item is the
  mean over its annotators; Pearson, Spearman, Kendall (with p) between metric and human, n items.
- DailyDialog++: ranking accuracy between quality levels (the share of response pairs from one context
  where the better level scores higher; ties count half) and Spearman with the level. A dialogue-level
  metric is benchmarked on the replacement levels instead (``metrics.benchmarking.dialogue``).
- Several files: each file's figures, and pooled ones (every item of the files of one kind together:
  DSTC9's eleven per-chatbot files are one evaluation).
The paper's own figure is shown beside each quality where it gives one (``metrics.benchmarking.published``)."""
from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from metrics.benchmarking.judgments import JudgedItem, JudgmentSet, expand, read_set, select
from metrics.benchmarking.published import published
from metrics.implementations.base import MetricImplementation, ScoringInput
from studies.analysis.correlation import correlate_all


def scores_dialogues(implementation: MetricImplementation) -> bool:
    return implementation.level == "dialogue"


def score_set(implementation: MetricImplementation, judgments: JudgmentSet, *, batch: int = 256,
              on_progress: Callable[[int], None] | None = None, prepare: bool = True) -> np.ndarray:
    """The metric's value of every item, in order: a response given its context, or a whole dialogue.
    ``prepare`` first computes ahead what the whole set needs (an embedding metric: each distinct text once,
    in one length-sorted pass), its progress reported as the share of the items it stands for; then the
    items are scored ``batch`` at a time."""
    items = judgments.items
    if judgments.level == "dialogue" and not scores_dialogues(implementation):
        raise ValueError(f"{judgments.kind}: dialogue-level judgments, and {implementation.key} scores responses only")

    reported = [0]  # progress only moves forward: the scoring batches then go over what prepare reported

    def report(done: int) -> None:
        if on_progress and done > reported[0]:
            reported[0] = done
            on_progress(done)

    def ahead(done: int, total: int) -> None:
        if total:
            report(len(items) * done // total)

    if prepare:
        if judgments.level == "dialogue":
            implementation.prepare(dialogues=[i.turns for i in items], on_progress=ahead)
        else:
            implementation.prepare(inputs=[ScoringInput(turns=i.turns, response=i.response or "") for i in items],
                                   on_progress=ahead)
    values: list[float] = []
    for start in range(0, len(items), batch):
        chunk = items[start:start + batch]
        if judgments.level == "dialogue":
            values += implementation.score_dialogues([i.turns for i in chunk], [i.speakers for i in chunk])
        else:
            values += implementation.score([ScoringInput(turns=i.turns, response=i.response or "") for i in chunk])
        report(len(values))
    return np.asarray(values, dtype=float)


def correlations(values: Sequence[float] | np.ndarray, items: Sequence[JudgedItem]) -> dict[str, Any]:
    """Per human quality: n and Pearson/Spearman/Kendall (r, p) between the metric and the mean human score."""
    qualities = sorted({q for item in items for q in item.human})
    table = {}
    for quality in qualities:
        pairs = [(v, item.human[quality]) for v, item in zip(values, items, strict=True) if quality in item.human]
        row: dict[str, Any] = {"n": len(pairs)}
        if len(pairs) >= 3:
            metric, human = zip(*pairs, strict=True)
            row.update({m: {"r": c.r, "p": c.p} for m, c in correlate_all(list(metric), list(human)).items()})
        table[quality] = row
    return table


def ranking_accuracy(values: Sequence[float] | np.ndarray, items: Sequence[JudgedItem]) -> dict[str, Any]:
    by_context: dict[str, list[tuple[int, float]]] = {}
    for item, value in zip(items, values, strict=True):
        by_context.setdefault(item.group, []).append((item.level, float(value)))
    pairs: dict[str, list[float]] = {}
    for entries in by_context.values():
        for (la, va), (lb, vb) in itertools.combinations(entries, 2):
            if la == lb:
                continue
            (low, lv), (high, hv) = sorted([(la, va), (lb, vb)])
            pairs.setdefault(f"level{high}>level{low}", []).append(1.0 if hv > lv else 0.5 if hv == lv else 0.0)
    spearman = stats.spearmanr(list(values), [item.level for item in items])
    return {"contexts": len(by_context), "responses": len(items),
            "accuracy": {k: {"value": float(np.mean(v)), "pairs": len(v)} for k, v in sorted(pairs.items())},
            "overall_accuracy": float(np.mean([x for v in pairs.values() for x in v])) if pairs else None,
            "spearman_with_level": {"r": float(spearman.statistic), "p": float(spearman.pvalue)}}


def set_figures(values: Sequence[float] | np.ndarray, judgments: JudgmentSet, *, metric: str = "") -> dict[str, Any]:
    """A set's figures: ranking (DailyDialog++) or per-quality correlations, with the published figure."""
    if judgments.kind == "ddpp":
        return {"ranking": ranking_accuracy(values, judgments.items)}
    table = correlations(values, judgments.items)
    for quality, row in table.items():
        row["published"] = published(metric, judgments.kind, quality, judgments.dataset)
    return {"qualities": table}


def held_out_only(judgments: JudgmentSet, seed: int, path: Path) -> JudgmentSet:
    """GRADE: only the 10 % validation share of the seeded split KD fine-tuning held out."""
    from ml.data.human_scores import read_grade, split

    _, held = split(read_grade(path), seed=seed)
    keep = {pair.id for pair in held}
    return JudgmentSet(judgments.name, judgments.kind, [i for i in judgments.items if i.group in keep],
                       judgments.missing, judgments.dataset)


def benchmark(implementation: MetricImplementation, paths: Sequence[str | Path], *, metric: str, fmt: str = "auto",
              offset: int = 0, limit: int | None = None, held_out: int | None = None, seed: int = 71,
              progress: Callable[[str, int], Callable[[int], None] | None] | None = None) -> dict[str, Any]:
    """Every file's figures and, for several files of one kind, the pooled ones. ``progress(name, total)``
    returns the callback a file's scoring reports to (a progress bar)."""
    files: list[dict[str, Any]] = []
    pooled_values: dict[str, list[np.ndarray]] = {}
    pooled_sets: dict[str, list[JudgmentSet]] = {}
    for path in expand(paths):
        try:
            judgments = read_set(path, fmt)
        except ValueError as error:
            raise ValueError(f"{path.name}: {error}") from None
        if held_out is not None:
            if judgments.kind != "grade":
                raise ValueError(f"{path.name}: --held-out is only for GRADE files (the KD fine-tuning split)")
            judgments = held_out_only(judgments, held_out, path)
        entry: dict[str, Any] = {"dataset": path.name, "format": judgments.kind, "level": judgments.level,
                                 "missing_values": judgments.missing}
        if judgments.kind == "ddpp" and scores_dialogues(implementation):  # replacement levels (SelF-Eval's task)
            from metrics.benchmarking.dialogue import replacement

            entry.update(replacement(implementation, path, offset=offset, limit=limit, seed=seed))
            files.append(entry)
            continue
        judgments = select(judgments, offset=offset, limit=limit)
        on_progress = progress(path.name, len(judgments.items)) if progress else None
        values = score_set(implementation, judgments, on_progress=on_progress)
        entry["records"] = len({i.group for i in judgments.items}) if judgments.kind == "ddpp" else len(judgments.items)
        entry.update(set_figures(values, judgments, metric=metric))
        files.append(entry)
        pooled_values.setdefault(judgments.kind, []).append(values)
        pooled_sets.setdefault(judgments.kind, []).append(judgments)
    result: dict[str, Any] = {"files": files}
    pooled = {}
    for kind, sets in pooled_sets.items():
        if len(sets) < 2:
            continue
        items = [dataclasses.replace(i, group=f"{k}:{i.group}") for k, s in enumerate(sets) for i in s.items]
        # a paper's figure belongs to one data set: files of several (GRADE's ConvAI2 + Empathetic) pool to none
        datasets = {s.dataset for s in sets}
        merged = JudgmentSet(f"{len(sets)} files", kind, items,
                             {q: sum(s.missing.get(q, 0) for s in sets) for q in {q for s in sets for q in s.missing}},
                             datasets.pop() if len(datasets) == 1 else "")
        pooled[kind] = {"files": len(sets), "records": sum(f["records"] for f in files if f["format"] == kind),
                        **set_figures(np.concatenate(pooled_values[kind]), merged, metric=metric)}
    if pooled:
        result["pooled"] = pooled
    return result


def compare(implementations: dict[str, MetricImplementation], paths: Sequence[str | Path], *, fmt: str = "auto",
            offset: int = 0, limit: int | None = None, resamples: int = 2000, seed: int = 0,
            progress: Callable[[str, int], Callable[[int], None] | None] | None = None) -> dict[str, Any]:
    """Several metrics on the same files: per file (and pooled per kind) and human quality, their Spearman
    with the humans ranked, with the paired bootstrap gap to the best (``studies.analysis.metric_ranking``)."""
    from studies.analysis.metric_ranking import rank_metrics, ranking_sentence

    files: list[dict[str, Any]] = []
    pooled_items: dict[str, list] = {}
    pooled_values: dict[str, dict[str, list]] = {}
    for path in expand(paths):
        try:
            judgments = select(read_set(path, fmt), offset=offset, limit=limit)
        except ValueError as error:
            raise ValueError(f"{path.name}: {error}") from None
        if judgments.kind == "ddpp":
            raise ValueError(f"{path.name}: DailyDialog++ has levels, not human scores; compare metrics on "
                             "GRADE, FED or DSTC9 files")
        values = {label: score_set(impl, judgments, on_progress=progress(f"{label} {path.name}", len(judgments.items))
                                   if progress else None) for label, impl in implementations.items()}
        files.append({"dataset": path.name, "format": judgments.kind,
                      "qualities": _ranked(judgments.items, values, resamples, seed, rank_metrics, ranking_sentence)})
        pooled_items.setdefault(judgments.kind, []).extend(judgments.items)
        for label, column in values.items():
            pooled_values.setdefault(judgments.kind, {}).setdefault(label, []).extend(column.tolist())
    result: dict[str, Any] = {"metrics": list(implementations), "files": files}
    if len(files) > 1:
        result["pooled"] = {kind: _ranked(items, {k: np.asarray(v) for k, v in pooled_values[kind].items()}, resamples,
                                          seed, rank_metrics, ranking_sentence)
                            for kind, items in pooled_items.items()}
    return result


def _ranked(items, values, resamples, seed, rank_metrics, ranking_sentence) -> dict[str, Any]:
    table = {}
    for quality in sorted({q for item in items for q in item.human}):
        human = [item.human.get(quality) for item in items]
        ranking = rank_metrics(human, {label: column.tolist() for label, column in values.items()},
                               resamples=resamples, seed=seed)
        table[quality] = {**ranking, "summary": ranking_sentence(ranking)}
    return table
