"""Coherence scoring throughput with the packaged MiniLM on this machine: the metric's batched path
vs a naive loop that scores one response at a time, in the same process on the same inputs.

    python benchmarks/coherence_throughput.py [--responses 512] [--naive 128]

Inputs are DailyDialog++ test responses when ../shared/data is present, else generated sentences.
Prints JSON with responses/s for each and the ratio."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from metrics.implementations.base import ScoringInput  # noqa: E402
from metrics.registry import implementation  # noqa: E402

DDPP = ROOT.parent / "shared" / "data" / "dailydialog_pp" / "test.json"


def inputs(n: int) -> list[ScoringInput]:
    items: list[ScoringInput] = []
    if DDPP.is_file():
        for line in DDPP.open():
            record = json.loads(line)
            for key in ("positive_responses", "adversarial_negative_responses", "random_negative_responses"):
                items += [ScoringInput(turns=record["context"], response=r) for r in record[key]]
            if len(items) >= n:
                break
    while len(items) < n:
        i = len(items)
        items.append(ScoringInput(turns=[f"What did you do on day {i}?"], response=f"On day {i} I walked to the river."))
    return items[:n]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--responses", type=int, default=512)
    parser.add_argument("--naive", type=int, default=128)
    args = parser.parse_args()
    metric = implementation("coherence", {"device": "cpu"})
    data = inputs(args.responses)
    metric.score(data[:8])  # load the model once, outside the timings
    started = time.perf_counter()
    batched = metric.score(data)
    batched_s = time.perf_counter() - started
    started = time.perf_counter()
    naive = [metric.score([item])[0] for item in data[: args.naive]]
    naive_s = time.perf_counter() - started
    difference = max(abs(a - b) for a, b in zip(batched[: args.naive], naive, strict=True))
    print(json.dumps({
        "benchmark": "coherence metric (MiniLM, CPU), responses per second",
        "inputs": "DailyDialog++ test" if DDPP.is_file() else "generated",
        "batched": {"responses": len(data), "seconds": round(batched_s, 2), "per_s": round(len(data) / batched_s, 1)},
        "one_at_a_time": {"responses": len(naive), "seconds": round(naive_s, 2), "per_s": round(len(naive) / naive_s, 1)},
        "speedup": round((len(data) / batched_s) / (len(naive) / naive_s), 2),
        "max_abs_difference": difference,
    }, indent=2))


if __name__ == "__main__":
    main()
