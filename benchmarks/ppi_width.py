"""How much a metric narrows the interval of a human mean: prediction-powered vs human-only, on a real
judgment file, over random draws of which items are human-rated.

    python benchmarks/ppi_width.py FILE [FILE ...] --metric cosine_last [--quality overall]
        [--labels 50] [--draws 1000] [--seed 0] [--metrics cosine_last,cosine_context]

For each draw, ``--labels`` of the file's items keep their human score (the mean of their annotators)
and the rest keep only the metric's; ``studies.analysis.ppi.mean_estimate`` estimates the mean human
score of all items, and the truth is that mean over every item. Reported per estimator: coverage of the
truth, the mean and median width ratio (prediction-powered width / human-only width on the same draw),
and the median lambda:

- ``unclipped``: power tuning as ``mean_estimate`` does it now (lambda = cov / ((1 + n/N) var));
- ``clipped``: ppi_py's default, lambda clipped to [0, 1] (what Concord did before);
- ``combined`` (with ``--metrics``): several metrics as control variates (``combined_estimate``);
- ``theory``: sqrt(1 - rho^2 N/(n + N)) with rho over all items, the single-metric optimum.

Files: any format ``benchmark_metric`` reads (GRADE, FED, DSTC9). The metric runs once over the file
(the embedding cache makes a second run fast). Prints one JSON object."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import django_on_throwaway_database  # noqa: E402


def _scores(key: str, judgments) -> list[float]:
    from metrics import registry
    from metrics.benchmarking.benchmarks import score_set

    return list(score_set(registry.implementation(key), judgments))


def _draws(y, metric_columns, *, labels: int, draws: int, seed: int) -> dict:
    import numpy as np

    from studies.analysis import ppi

    rng = np.random.default_rng(seed)
    y = np.asarray(y, dtype=float)
    columns = np.column_stack(metric_columns)
    truth = float(y.mean())
    out: dict[str, dict] = {}
    ways = {"unclipped": lambda lab, unl: ppi.mean_estimate(y[lab], columns[lab, 0], columns[unl, 0]),
            "clipped": lambda lab, unl: ppi.mean_estimate(y[lab], columns[lab, 0], columns[unl, 0], clip=True)}
    if columns.shape[1] > 1:
        ways["combined"] = lambda lab, unl: ppi.combined_estimate(y[lab], columns[lab], columns[unl])[0]
    figures = {name: {"covered": 0, "ratios": [], "lams": []} for name in ways}
    for _ in range(draws):
        order = rng.permutation(len(y))
        lab, unl = order[:labels], order[labels:]
        for name, way in ways.items():
            est = way(lab, unl)
            figures[name]["covered"] += est.ci_low <= truth <= est.ci_high
            figures[name]["ratios"].append(est.width / est.human_width)
            figures[name]["lams"].append(est.lam)
    for name, f in figures.items():
        out[name] = {"coverage": f["covered"] / draws, "width_ratio_mean": float(np.mean(f["ratios"])),
                     "width_ratio_median": float(np.median(f["ratios"])), "lambda_median": float(np.median(f["lams"]))}
    rho = float(np.corrcoef(y, columns[:, 0])[0, 1])
    out["theory"] = {"rho": rho, "width_ratio": float(np.sqrt(1 - rho**2 * (len(y) - labels) / len(y)))}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--metric", default="cosine_last")
    parser.add_argument("--metrics", default="", help="comma-separated: also combine these (the first is --metric)")
    parser.add_argument("--quality", default="", help="the human quality (default: the file's first)")
    parser.add_argument("--labels", type=int, default=50)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    django_on_throwaway_database()
    from metrics.benchmarking.judgments import expand, read_set

    judgments = [read_set(path) for path in expand(args.files)]
    items = [item for j in judgments for item in j.items]
    quality = args.quality or sorted({q for item in items for q in item.human})[0]
    keys = [args.metric] + [k for k in args.metrics.split(",") if k and k != args.metric]
    scores = {key: [v for j in judgments for v in _scores(key, j)] for key in keys}
    keep = [i for i, item in enumerate(items) if quality in item.human]
    if len(keep) <= args.labels + 2:
        raise SystemExit(f"{len(keep)} items with a human {quality!r} score: too few for {args.labels} labels")
    y = [items[i].human[quality] for i in keep]
    columns = [[scores[key][i] for i in keep] for key in keys]
    result = {"files": [str(p) for p in expand(args.files)], "quality": quality, "metrics": keys,
              "items": len(keep), "labels": args.labels, "draws": args.draws, "seed": args.seed,
              **_draws(y, columns, labels=args.labels, draws=args.draws, seed=args.seed)}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
