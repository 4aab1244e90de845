"""Concord's ICC vs pingouin.intraclass_corr on complete long tables, side by side in one process.

    python benchmarks/icc_vs_pingouin.py [--repeats 5]

Prints JSON: per size, the median seconds of each, the speed ratio, and the largest absolute
difference over all six forms and every column (ICC, F, df, p, CI)."""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pingouin as pg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from studies.analysis.icc import FORMS, icc  # noqa: E402

pg.options["round"] = None
pg.options["round.column.CI95"] = None
warnings.filterwarnings("ignore")
SIZES = [(1_000, 40), (10_000, 40), (50_000, 10)]


def table(n: int, k: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    scores = rng.normal(0, 1, (n, 1)) + rng.normal(0, 0.5, (1, k)) + rng.normal(0, 1, (n, k))
    return pd.DataFrame({"item": np.repeat(np.arange(n), k), "rater": np.tile(np.arange(k), n), "score": scores.ravel()})


def median_seconds(fn, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rows = []
    for n, k in SIZES:
        data = table(n, k)
        ours_s, ours = median_seconds(lambda d=data: icc(d["item"].to_numpy(), d["rater"].to_numpy(), d["score"].to_numpy()),
                                      args.repeats)
        theirs_s, theirs = median_seconds(lambda d=data: pg.intraclass_corr(d, "item", "rater", "score"), args.repeats)
        theirs = theirs.set_index("Type")
        worst = max(
            float(np.max(np.abs(np.array([ours[f].value, ours[f].F, ours[f].df1, ours[f].df2, ours[f].p, *ours[f].ci95])
                                - np.array([theirs.loc[f, "ICC"], theirs.loc[f, "F"], theirs.loc[f, "df1"],
                                            theirs.loc[f, "df2"], theirs.loc[f, "pval"], *theirs.loc[f, "CI95"]]))))
            for f in FORMS)
        rows.append({"items": n, "raters": k, "ratings": n * k, "concord_s": round(ours_s, 5),
                     "pingouin_s": round(theirs_s, 5), "speedup": round(theirs_s / ours_s, 1),
                     "max_abs_difference": worst})
    print(json.dumps({"benchmark": "ICC, six forms with F, df, p and 95% CI", "repeats": args.repeats,
                      "results": rows}, indent=2))


if __name__ == "__main__":
    main()
