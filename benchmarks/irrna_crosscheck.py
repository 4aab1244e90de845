"""Cross-check of Concord's sparse-design ICC against R irrNA's ``iccNA`` (not a test: needs R).

    python benchmarks/irrna_crosscheck.py --irrna PATH/iccNA.R [--rscript Rscript]

R is not a dependency of Concord. Point ``--irrna`` at irrNA's ``R/iccNA.R`` (CRAN package irrNA,
by M. Brueckl); the script sources it into a plain Rscript, so the package need not be installed.
It runs both on seeded sparse crowd-like designs (and a few degenerate ones) for ``oneG = TRUE`` and
``FALSE`` and prints JSON: per data set the largest absolute difference over every ICC, p and CI
bound (irrNA's own ICC(A,k) interval is compared with ``ak_interval="irrna"``), and R's values."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from studies.analysis.icc import icc  # noqa: E402

R_ROWS = {"ICC(1)": "ICC(1,1)", "ICC(k)": "ICC(1,k)", "ICC(A,1)": "ICC(A,1)", "ICC(A,k)": "ICC(A,k)",
          "ICC(C,1)": "ICC(C,1)", "ICC(C,k)": "ICC(C,k)"}

R_SCRIPT = """
source(commandArgs(TRUE)[1])
X <- as.matrix(read.csv(commandArgs(TRUE)[2], header = FALSE))
out <- list()
for (g in c(TRUE, FALSE)) {
  r <- suppressWarnings(iccNA(X, oneG = g))
  out[[length(out) + 1]] <- c(as.vector(t(r$ICCs)), r$k_0)
}
write.table(do.call(rbind, out), sep = ",", row.names = FALSE, col.names = FALSE)
"""


def sparse(n: int, k: int, ratings: int, *, seed: int, likert: bool = False) -> pd.DataFrame:
    """A crowd-like design: every item gets at least two raters, the rest at random."""
    rng = np.random.default_rng(seed)
    cells = {(i, j) for i in range(n) for j in rng.choice(k, 2, replace=False)}
    while len(cells) < ratings:
        cells.add((int(rng.integers(n)), int(rng.integers(k))))
    items, raters = map(np.array, zip(*sorted(cells), strict=True))
    truth, bias = rng.normal(0, 1, n), rng.normal(0, 0.6, k)
    score = truth[items] + bias[raters] + rng.normal(0, 0.9, items.size)
    if likert:
        score = np.clip(np.round(3.5 + score), 1, 6)
    return pd.DataFrame({"item": items, "rater": raters, "score": score})


def datasets() -> dict[str, pd.DataFrame]:
    sets = {
        "crowd-80x25-540": sparse(80, 25, 540, seed=16),
        "crowd-80x25-540-likert": sparse(80, 25, 540, seed=17, likert=True),
        "small-12x5-30": sparse(12, 5, 30, seed=3),
        "wide-200x60-900": sparse(200, 60, 900, seed=4),
    }
    # Perfect consistency with rater offsets (irrNA's ConsistNA situation) and zero item variance.
    rows = [(i, j, i + 2 * j) for i in range(6) for j in range(4) if (i + j) % 3]
    sets["consistent-offsets"] = pd.DataFrame(rows, columns=["item", "rater", "score"])
    rows = [(i, j, float(j)) for i in range(5) for j in range(3) if (i + j) % 4]
    sets["raters-only"] = pd.DataFrame(rows, columns=["item", "rater", "score"])
    return sets


def run_r(rscript: str, irrna: str, frame: pd.DataFrame) -> np.ndarray:
    wide = frame.pivot(index="item", columns="rater", values="score")
    with tempfile.TemporaryDirectory() as tmp:
        data, script = Path(tmp) / "x.csv", Path(tmp) / "run.R"
        wide.to_csv(data, header=False, index=False, na_rep="NA")
        script.write_text(R_SCRIPT)
        out = subprocess.run([rscript, str(script), irrna, str(data)], capture_output=True, text=True, check=True)
    return np.array([[float(v) for v in line.split(",")] for line in out.stdout.strip().splitlines()])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--irrna", required=True, help="path to irrNA's R/iccNA.R")
    parser.add_argument("--rscript", default="Rscript")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    report = {}
    for name, frame in datasets().items():
        r_values = run_r(args.rscript, args.irrna, frame)
        entry = {"ratings": len(frame), "items": int(frame["item"].nunique()), "raters": int(frame["rater"].nunique())}
        for row, ipsation in zip(r_values, ("grand-mean", "sub-means"), strict=True):
            r_table = dict(zip(R_ROWS.values(), row[:24].reshape(6, 4), strict=True))
            for interval in ("spearman-brown", "irrna"):
                ours = icc(frame["item"], frame["rater"], frame["score"], method="incomplete", ipsation=ipsation,
                           ak_interval=interval)
                diffs = {}
                for form, (value, p, low, high) in r_table.items():
                    f = ours[form]
                    mine, theirs = np.array([f.value, f.p, *f.ci95]), np.array([value, p, low, high])
                    same_inf = np.isinf(mine) & (mine == theirs)
                    diffs[form] = float(np.max(np.where(same_inf, 0.0, np.abs(mine - theirs))))
                entry[f"{ipsation}/{interval}"] = {"max_abs_diff": max(diffs.values()), "per_form": diffs,
                                                    "k0_diff": abs(ours.k0 - row[24])}
            entry[f"R/{ipsation}"] = {form: [float(v) for v in values] for form, values in r_table.items()}
        report[name] = entry
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
