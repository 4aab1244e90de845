"""Bradley–Terry bootstrap: studies.analysis.pairwise's cluster-matrix resampling (one weighted sum of
per-cluster win matrices and the MM fit per resample) vs a naive loop that rebuilds each resample's
DataFrame and refits from it, in the same process on the same simulated judgments and the same
resample draws (so the intervals must agree).

    python benchmarks/pairwise_bootstrap.py [--raters 40] [--per-rater 60] [--systems 6] [--resamples 200]

Prints JSON: seconds for each, the ratio, and the largest difference between their interval ends."""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from studies.analysis import pairwise as pw  # noqa: E402


def simulate(raters: int, per_rater: int, systems: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    names = [f"s{k}" for k in range(systems)]
    theta = dict(zip(names, np.linspace(1, -1, systems), strict=True))
    rows = []
    for rater in range(raters):
        for k in range(per_rater):
            i, j = rng.choice(systems, 2, replace=False)
            p = 1 / (1 + math.exp(theta[names[j]] - theta[names[i]]))
            choice = "tie" if rng.random() < 0.1 else ("left" if rng.random() < p else "right")
            rows.append({"criterion": "c", "item": f"{k}-{i}-{j}", "rater": rater, "left_system": names[i],
                         "right_system": names[j], "choice": choice})
    return pd.DataFrame(rows)


def naive(frame: pd.DataFrame, resamples: int, seed: int) -> dict[str, tuple[float, float]]:
    groups = [g for _, g in frame.groupby("rater", sort=True)]
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(resamples):
        picked = rng.integers(0, len(groups), size=len(groups))
        try:
            fitted = pw.bradley_terry_mm(pd.concat([groups[i] for i in picked], ignore_index=True), tol=1e-9)
        except pw.BTError:
            continue
        draws.append(fitted)
    table = pd.DataFrame(draws)
    return {s: tuple(np.quantile(table[s], [0.025, 0.975])) for s in table.columns}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--raters", type=int, default=40)
    parser.add_argument("--per-rater", type=int, default=60)
    parser.add_argument("--systems", type=int, default=6)
    parser.add_argument("--resamples", type=int, default=200)
    args = parser.parse_args()
    frame = simulate(args.raters, args.per_rater, args.systems)
    started = time.perf_counter()
    fast = pw.bradley_terry_bootstrap(frame, resamples=args.resamples, seed=1, over="rater")
    fast_s = time.perf_counter() - started
    started = time.perf_counter()
    slow = naive(frame, args.resamples, seed=1)
    naive_s = time.perf_counter() - started
    gap = max(max(abs(r["ci_low"] - slow[r["system"]][0]), abs(r["ci_high"] - slow[r["system"]][1]))
              for r in fast["strengths"])
    print(json.dumps({"benchmark": "pairwise_bootstrap", "judgments": len(frame), "systems": args.systems,
                      "resamples": args.resamples, "cluster_matrix_s": round(fast_s, 4), "naive_s": round(naive_s, 4),
                      "speedup": round(naive_s / fast_s, 1), "max_interval_difference": gap}, indent=2))


if __name__ == "__main__":
    main()
