"""Split-half reliability of best-worst tuples (studies.analysis.bws.split_half_reliability, vectorised
with integer codes and np.bincount) vs the earlier pandas group-by per trial (kept here as the
baseline), in the same process on the same simulated annotations; both must agree to 1e-9.

    python benchmarks/bws_split_half.py [--items 2000] [--annotations 3] [--trials 100]

Prints JSON: seconds for each, the speed-up ratio, and the largest difference between them."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import pearsonr, spearmanr

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from studies.analysis.bws import balanced_tuples, counting_scores, split_half_reliability  # noqa: E402


def pandas_split_half(items, ranks, tuple_ids, annotation_ids, *, trials: int, seed: int):
    """The pandas implementation this module had before (one group-by per half per trial)."""
    frame = pd.DataFrame({"item": np.asarray(items), "rank": np.asarray(ranks, dtype=float),
                          "tuple": np.asarray(tuple_ids), "annotation": np.asarray(annotation_ids)})
    annotations = frame.drop_duplicates("annotation")[["annotation", "tuple"]].reset_index(drop=True)
    rng = np.random.default_rng(seed)
    rs, ps = [], []
    for _ in range(trials):
        key = rng.random(len(annotations))
        order = annotations.assign(key=key).sort_values(["tuple", "key"])
        order["half"] = order.groupby("tuple").cumcount() % 2
        half = frame["annotation"].map(order.set_index("annotation")["half"])
        a = counting_scores(frame.item[half == 0], frame["rank"][half == 0], frame.annotation[half == 0])["score"]
        b = counting_scores(frame.item[half == 1], frame["rank"][half == 1], frame.annotation[half == 1])["score"]
        common = a.index.intersection(b.index)
        rs.append(spearmanr(a[common], b[common]).statistic)
        ps.append(pearsonr(a[common], b[common]).statistic)
    r = float(np.mean(rs))
    p = float(np.mean(ps))
    return r, float(np.std(rs)), p, float(np.std(ps)), 2 * r / (1 + r), 2 * p / (1 + p)


def simulate(n_items: int, per_tuple: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=n_items)
    tuples = balanced_tuples(n_items, size=4, seed=seed)
    seen = quality[np.repeat(tuples, per_tuple, axis=0)] + rng.normal(0, 1, (len(tuples) * per_tuple, 4))
    members = np.repeat(tuples, per_tuple, axis=0)
    best, worst = seen.argmax(axis=1), seen.argmin(axis=1)
    ranks = np.full(members.shape, 2)
    ranks[np.arange(len(ranks)), best], ranks[np.arange(len(ranks)), worst] = 1, 4
    tuple_ids = np.repeat(np.arange(len(tuples)), per_tuple)[:, None].repeat(4, axis=1)
    annotation_ids = np.arange(len(members))[:, None].repeat(4, axis=1)
    return members.ravel(), ranks.ravel(), tuple_ids.ravel(), annotation_ids.ravel()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--annotations", type=int, default=3, help="annotations per tuple")
    parser.add_argument("--trials", type=int, default=100)
    args = parser.parse_args()
    data = simulate(args.items, args.annotations)
    start = time.perf_counter()
    ours = split_half_reliability(*data, trials=args.trials, seed=0)
    vectorised = time.perf_counter() - start
    start = time.perf_counter()
    baseline = pandas_split_half(*data, trials=args.trials, seed=0)
    pandas_seconds = time.perf_counter() - start
    got = (ours.spearman_mean, ours.spearman_sd, ours.pearson_mean, ours.pearson_sd, ours.spearman_brown,
           ours.pearson_brown)
    print(json.dumps({"items": args.items, "tuples": 2 * args.items, "annotations": 2 * args.items * args.annotations,
                      "trials": args.trials, "vectorised_s": round(vectorised, 4), "pandas_s": round(pandas_seconds, 4),
                      "speedup": round(pandas_seconds / vectorised, 1),
                      "max_abs_difference": float(np.max(np.abs(np.subtract(got, baseline)))),
                      "spearman_mean": ours.spearman_mean, "spearman_brown": ours.spearman_brown}))


if __name__ == "__main__":
    main()
