"""One benchmark, two revisions, side by side in one run: is the change slower?

    python benchmarks/compare_revisions.py --base 8af4b4e [--head HEAD] [--rounds 3] -- rating_submit.py --submits 200

Checks both revisions out into throw-away git worktrees beside this checkout (so ``../shared`` is
found the same way), then runs ``benchmarks/SCRIPT ARGS`` of each revision with this virtualenv's
Python, alternating base and head for ``--rounds`` rounds so that a busy machine slows both alike.
Each run prints one JSON object (the benchmarks' own output). Prints JSON: every run's numbers, and
for every numeric field the median over rounds for base and head and their ratio (head / base: above
1 is slower where the field is a time)."""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _worktree(revision: str) -> Path:
    place = Path(tempfile.mkdtemp(prefix="bench-", dir=ROOT.parent))
    shutil.rmtree(place)
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(place), revision], check=True)
    return place


def _run(place: Path, script: str, args: list[str]) -> dict:
    done = subprocess.run([sys.executable, f"benchmarks/{script}", *args], cwd=place, capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"{script} failed in {place}:\n{done.stderr[-3000:]}")
    text = done.stdout.strip()
    start = text.rfind("\n{") + 1  # the last top-level JSON object (one line or indented)
    return json.loads(text[start:])


def _numbers(value, prefix: str = "") -> dict[str, float]:
    """Every numeric leaf of a JSON object, by its dotted path."""
    found: dict[str, float] = {}
    if isinstance(value, dict):
        for key, inner in value.items():
            found.update(_numbers(inner, f"{prefix}{key}."))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        found[prefix.rstrip(".")] = float(value)
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True)
    parser.add_argument("--head", default="HEAD")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    places = {"base": _worktree(options.base), "head": _worktree(options.head)}
    runs: dict[str, list[dict]] = {"base": [], "head": []}
    try:
        for round_number in range(options.rounds):
            order = ("base", "head") if round_number % 2 == 0 else ("head", "base")
            for side in order:
                runs[side].append(_run(places[side], options.script, options.args))
                print(f"round {round_number + 1}/{options.rounds}: {side} done", file=sys.stderr)
    finally:
        for place in places.values():
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(place)], check=False)
    medians = {side: {} for side in runs}
    for side, results in runs.items():
        leaves = [_numbers(result) for result in results]
        for key in leaves[0]:
            medians[side][key] = statistics.median(leaf[key] for leaf in leaves if key in leaf)
    ratio = {key: round(medians["head"][key] / medians["base"][key], 3)
             for key in medians["base"] if key in medians["head"] and medians["base"][key]}
    print(json.dumps({"script": options.script, "args": options.args, "base": options.base, "head": options.head,
                      "rounds": options.rounds, "median_base": medians["base"], "median_head": medians["head"],
                      "ratio_head_over_base": ratio, "runs": runs}))


if __name__ == "__main__":
    main()
