"""Reliability reports of every design, from the database: a seven-condition experiment (Likert, RME, BME,
BWS, best-worst tuples, pairwise, Likert on whole dialogues; ``benchmarks.report_fixture``), 10,000
judgments by default, on a throw-away SQLite database (or DATABASE_URL).

    python benchmarks/report_speed.py [--judgments 10000] [--repeats 3] [--var DIR] [--full-baseline]

``--var DIR`` keeps the database there, so a second run skips the fixture (built through the services,
a few minutes). Prints JSON:

- ``cold``: median wall and CPU seconds of each report page with every cache cleared first (the whole
  experiment and each condition alone), i.e. computed from the database; the issue's target is < 2 s;
- ``warm``: the experiment page again with the report in the cache;
- ``statistics``: the parts that used to dominate, each against its reference in the same run on the same
  data: Krippendorff's alpha against the ``krippendorff`` package (its dense units x values x values
  tensor takes tens of seconds and ~0.5 GB for a magnitude cell of 720 distinct scores, so those cells are
  left out unless ``--full-baseline``), the Bradley-Terry bootstrap against fitting each resample alone,
  split-half against one trial at a time with SciPy's correlations, and the raters' side tests against
  SciPy's binomtest with statsmodels' Holm; ``speedup`` = reference / Concord.

CPU seconds are this process's (SQLite runs in it): on a shared machine they are the better guide to an
idle machine's wall time."""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

warnings.filterwarnings("ignore")
MAGNITUDE_LIMIT = 300  # distinct values above which the package's alpha is left out of the default baseline


def timed(fn, repeats: int, before=None) -> dict[str, float]:
    walls, cpus = [], []
    for _ in range(repeats):
        if before:
            before()
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return {"wall_s": round(statistics.median(walls), 3), "cpu_s": round(statistics.median(cpus), 3)}


def reference_split_half(frame, trials: int, seed: int) -> tuple[float, float]:
    """One trial at a time with SciPy's correlations (the draws of studies.analysis.bws)."""
    import numpy as np
    import pandas as pd
    from scipy.stats import pearsonr, spearmanr

    item_code, names = pd.factorize(frame["unit"])
    ann_code, anns = pd.factorize(frame["choice"])
    ranks = frame["rank"].to_numpy(dtype=float)
    worst = np.full(len(anns), -np.inf)
    np.maximum.at(worst, ann_code, ranks)
    net = (ranks == 1).astype(float) - (ranks == worst[ann_code]).astype(float)
    first = np.full(len(anns), -1)
    first[ann_code[::-1]] = np.arange(len(ann_code))[::-1]
    _, tuple_of = np.unique(frame["item"].to_numpy()[first], return_inverse=True)
    rng = np.random.default_rng(seed)
    rs, ps = [], []
    for _ in range(trials):
        order = np.lexsort((rng.random(len(anns)), tuple_of))
        sorted_tuples = tuple_of[order]
        starts = np.flatnonzero(np.r_[True, sorted_tuples[1:] != sorted_tuples[:-1]])
        rank_in = np.arange(len(anns)) - np.repeat(starts, np.diff(np.r_[starts, len(anns)]))
        half = np.empty(len(anns), dtype=int)
        half[order] = rank_in % 2
        scores = []
        for h in (0, 1):
            mask = half[ann_code] == h
            seen = np.bincount(item_code[mask], minlength=len(names))
            total = np.bincount(item_code[mask], weights=net[mask], minlength=len(names))
            with np.errstate(invalid="ignore", divide="ignore"):
                scores.append(np.where(seen > 0, total / np.maximum(seen, 1), np.nan))
        both = ~np.isnan(scores[0]) & ~np.isnan(scores[1])
        rs.append(spearmanr(scores[0][both], scores[1][both]).statistic)
        ps.append(pearsonr(scores[0][both], scores[1][both]).statistic)
    return float(np.mean(rs)), float(np.mean(ps))


def reference_bootstrap(frame, resamples: int, seed: int):
    import numpy as np
    import pandas as pd

    from studies.analysis import pairwise as pw

    data = pw.canonical(frame)
    systems = sorted(set(data["system_a"]) | set(data["system_b"]))
    wins, n = pw._counts(data, systems)
    theta = pw._mm(wins, n, tol=1e-12, max_iter=100000)
    codes, _ = pd.factorize(data["rater"], sort=True)
    clusters = [pw._counts(data[codes == c], systems)[0] for c in range(codes.max() + 1)]
    rng = np.random.default_rng(seed)
    fits = []
    for _ in range(resamples):
        sample = sum(clusters[c] for c in rng.integers(0, len(clusters), size=len(clusters)))
        try:
            pw._check_exists(sample, sample + sample.T, systems)
        except pw.BTError:
            continue
        fits.append(pw._newton(sample, sample + sample.T, theta))
    return np.quantile(np.array(fits), [0.025, 0.975], axis=0)


def reference_sides(frame):
    from scipy import stats
    from statsmodels.stats.multitest import multipletests

    ps = []
    for _, part in frame.groupby("rater", sort=True):
        decisive = part[part["choice"] != "tie"]
        if len(decisive):
            ps.append(stats.binomtest(int((decisive["choice"] == "left").sum()), len(decisive), 0.5).pvalue)
    return multipletests(ps, method="holm")[1]


def statistics_against_references(experiment, repeats: int, full: bool) -> dict:
    import krippendorff

    from studies.analysis import pairwise as pw
    from studies.analysis.agreement import krippendorff_alpha, reliability_matrix
    from studies.analysis.bws import split_half_reliability
    from studies.designs import bws_tuples_report, pairwise_report
    from studies.designs.registry import DESIGNS
    from studies.reports import selectors

    studies = experiment.studies.all()
    frame = selectors.ratings_frame(studies)
    design = {s.slug: s.design for s in studies}
    cells, skipped = [], []
    for (study, criterion), part in frame.dropna(subset=["score"]).groupby(["study", "criterion"]):
        level = DESIGNS[design[study]].alpha_level
        if part["score"].nunique() > MAGNITUDE_LIMIT and not full:
            skipped.append(f"{study.removeprefix(experiment.slug + '-')}/{criterion} ({part['score'].nunique()} values)")
            continue
        cells.append((part["unit"].to_numpy(), part["rater"].to_numpy(), part["score"].to_numpy(), level))
    ours = timed(lambda: [krippendorff_alpha(u, r, v, level=lv) for u, r, v, lv in cells], repeats)
    theirs = timed(lambda: [krippendorff.alpha(reliability_data=reliability_matrix(u, r, v), level_of_measurement=lv)
                            for u, r, v, lv in cells], 1)
    worst = max(abs(krippendorff_alpha(u, r, v, level=lv)
                    - krippendorff.alpha(reliability_data=reliability_matrix(u, r, v), level_of_measurement=lv))
                for u, r, v, lv in cells)
    out = {"krippendorff_alpha": {"cells": len(cells), "left_out": skipped, "concord": ours, "reference": theirs,
                                  "largest_difference": worst, "speedup": round(theirs["cpu_s"] / max(ours["cpu_s"], 1e-6), 1)}}

    comparisons = pairwise_report.comparisons_frame(pairwise_report.pairwise_studies(studies))
    part = comparisons[comparisons["criterion"] == comparisons["criterion"].iloc[0]].reset_index(drop=True)
    ours = timed(lambda: pw.bradley_terry_bootstrap(part, resamples=1000, seed=0), repeats)
    theirs = timed(lambda: reference_bootstrap(part, 1000, 0), 1)
    out["bradley_terry_bootstrap_1000"] = {"judgments": len(part), "concord": ours, "reference": theirs,
                                           "speedup": round(theirs["cpu_s"] / max(ours["cpu_s"], 1e-6), 1)}
    ours = timed(lambda: pw.rater_sides(part), repeats)
    theirs = timed(lambda: reference_sides(part), 1)
    out["rater_side_tests"] = {"raters": int(part["rater"].nunique()), "concord": ours, "reference": theirs,
                               "speedup": round(theirs["cpu_s"] / max(ours["cpu_s"], 1e-6), 1)}

    annotations = bws_tuples_report.annotation_rows(studies)
    one = annotations[annotations["criterion"] == annotations["criterion"].iloc[0]]
    ours = timed(lambda: split_half_reliability(one["unit"], one["rank"], one["item"], one["choice"], trials=100,
                                                seed=0), repeats)
    theirs = timed(lambda: reference_split_half(one, 100, 0), 1)
    mine = split_half_reliability(one["unit"], one["rank"], one["item"], one["choice"], trials=100, seed=0)
    ref = reference_split_half(one, 100, 0)
    out["split_half_100_trials"] = {"annotations": int(one["choice"].nunique()), "concord": ours, "reference": theirs,
                                    "largest_difference": max(abs(mine.spearman_mean - ref[0]), abs(mine.pearson_mean - ref[1])),
                                    "speedup": round(theirs["cpu_s"] / max(ours["cpu_s"], 1e-6), 1)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--judgments", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--var", help="keep the throw-away database in this folder (reused when there)")
    parser.add_argument("--full-baseline", action="store_true",
                        help="also run the krippendorff package on the magnitude cells (minutes, ~0.5 GB each)")
    args = parser.parse_args()
    if args.var:
        os.environ["CONCORD_VAR_DIR"] = str(Path(args.var).resolve())
        Path(args.var).mkdir(parents=True, exist_ok=True)
    from benchmarks.common import django_on_throwaway_database

    django_on_throwaway_database()
    from django.core.cache import cache
    from django.test import Client

    from benchmarks import report_fixture
    from studies.authoring.demo import demo_user

    started = time.perf_counter()
    experiment = report_fixture.build(owner=demo_user(), judgments=args.judgments)
    built_s = time.perf_counter() - started
    client = Client()
    client.force_login(demo_user())
    pages = {"experiment (7 conditions)": f"/experiments/{experiment.slug}/report/"}
    pages.update({f"study: {s.slug.removeprefix(experiment.slug + '-')}": f"/studies/{s.slug}/report/"
                  for s in experiment.studies.order_by("id")})

    def get(url):
        response = client.get(url, HTTP_HOST="127.0.0.1")
        assert response.status_code == 200, (url, response.status_code)

    for url in pages.values():
        get(url)  # imports (pandas, SciPy, statsmodels load on the first report) and template compilation
    cold = {name: timed(lambda u=url: get(u), args.repeats, before=cache.clear) for name, url in pages.items()}
    experiment_url = pages["experiment (7 conditions)"]
    get(experiment_url)
    warm = timed(lambda: get(experiment_url), args.repeats)
    figures = {name: timed(lambda n=name: get(f"{experiment_url}figures/{n}.svg"), args.repeats)
               for name in ("icc", "distributions-readability", "ranking-readability", "completion")}
    download = timed(lambda: get(experiment_url.rstrip("/") + ".xlsx"), args.repeats, before=cache.clear)
    slowest = max(cold.values(), key=lambda t: t["wall_s"])
    print(json.dumps({
        "benchmark": "reliability reports of every design from the database (seven conditions)",
        "judgments": report_fixture.judgments_per_condition(experiment),
        "fixture_built_s": round(built_s, 1),
        "cold": cold, "warm_experiment_page": warm, "figures_after_page": figures, "xlsx_cold": download,
        "target_s": 2.0, "slowest_cold_wall_s": slowest["wall_s"], "slowest_cold_cpu_s": slowest["cpu_s"],
        "load_average": os.getloadavg()[0], "cpus": os.cpu_count(),
        "statistics": statistics_against_references(experiment, args.repeats, args.full_baseline),
    }, indent=2))


if __name__ == "__main__":
    main()
