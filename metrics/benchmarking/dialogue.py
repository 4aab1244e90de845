"""SelF-Eval's own benchmark: replacement-level accuracy on DailyDialog++ (the paper's Table 2), for a
dialogue-level metric (SelF-Eval and its baselines; every other file goes through ``metrics.benchmarking.benchmarks``).

Each dialogue (context + its first relevant response) gives three seeded samples: Rep-0 the dialogue, Rep-1
one turn replaced, Rep-2 2..n turns replaced, replacement turns from the other dialogues of the file
(``ml.data.replacement.rep_levels``). The paper does not define the accuracy further; here a sample is
correct when it is ordered right against both other samples of its dialogue (above every sample with more
replacements, below every one with fewer; a tie is wrong), the accuracy of Rep-r is the share of correct
Rep-r samples, and the overall accuracy is their mean."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from metrics.benchmarking.published import PUBLISHED


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
            "published": PUBLISHED["self_eval"]["ddpp-replacement"]}


def replacement(implementation, dataset: Path, *, offset: int = 0, limit: int | None = None,
                seed: int = 71) -> dict[str, Any]:
    """``{"replacement": ...}`` for a metric with ``score_dialogues`` on a DailyDialog++ file."""
    from ml.data.replacement import read_dialogues, rep_levels

    dialogues = read_dialogues(dataset)  # replacement turns come from the whole file, then the slice
    samples = rep_levels(dialogues, seed=seed)[offset:]
    samples = samples[:limit] if limit else samples
    values = implementation.score_dialogues([s.turns for triple in samples for s in triple])
    return {"level": "dialogue", "format": "ddpp",
            "replacement": {**replacement_accuracy([values[i:i + 3] for i in range(0, len(values), 3)]), "seed": seed}}
