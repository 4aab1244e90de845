"""Cold scoring of a human-judgment set with the packaged MiniLM cosines (DSTC9's 54k turns once took
16.5 minutes on a CPU with an empty embedding cache), before and after, in one run on the same slice.

    python benchmarks/cold_scoring.py [--dataset PATH ...] [--metric cosine_turns] [--turns 2000] [--rounds 2]

Passes, each with a fresh metric instance and an empty embedding cache in a temporary directory, the encoder
loaded once beforehand, alternated for ``--rounds`` rounds so that a busy machine slows all alike:

- ``base``: what ``benchmark_metric`` did before: 256 items at a time, each batch embedding its own distinct
  texts (its own cache read and write), torch on its default number of CPU threads;
- ``prepared``: ``metrics.benchmarking.benchmarks.score_set`` now: every distinct text of the slice embedded once, in one
  length-sorted pass, then scored from memory — on the same threads as ``base``;
- ``new``: ``prepared`` with torch's threads set by ``ml.devices.cpu_threads`` (affinity less load).

The slice: the first items of ``--dataset`` (files or folders, e.g. DSTC9's eleven per-chatbot files) whose
turns (dialogue level; a response counts one at turn level) add up to ``--turns``. Without ``--dataset``:
DSTC9-shaped dialogues made from DailyDialog++ ``positives.json`` (../shared/data or ``CONCORD_SHARED_DATA``;
each context with three of its responses, so turns recur across dialogues as a context recurs across
systems), written in DSTC9's format and read by its parser.

Reports per pass the median seconds and turns/s, ``ratio`` (new over base turns/s), ``ratio_prepared`` (the
same-threads share of it), the threads used, and the largest absolute difference between the passes' scores
(must stay under 1e-6). The last line printed is one JSON object.

Measured (a24231c, a 2-CPU machine shared with other jobs, load average 10-11; DSTC9 itself is not in the
shared data here):
- ``--turns 2000 --rounds 2`` (cosine_turns, DSTC9-shaped, 903 dialogues): base 22.8 turns/s, prepared 23.9
  (×1.05), new 65.2 on 1 thread (×2.86); largest difference 2.7e-7;
- ``--dataset ../shared/data/dailydialog_pp/test.json --metric cosine_context --turns 1500 --rounds 1``
  (each context with its 15 responses): base 7.7 responses/s, prepared 10.3 (×1.35), new 13.6 (×1.78);
  largest difference 1.8e-7.
The encoder's forward pass is ~96 % of a cold run (cProfile, 2,000 turns): what is left to gain is texts not
embedded (repeats) and threads that do not wait on each other; on an idle machine ``new`` uses every free
CPU, as ``base`` did, and its gain is the repeats'."""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CONCORD_SHARED_DATA", ROOT.parent / "shared" / "data"))


def dstc9_shaped(turns: int, folder: Path) -> Path:
    """DailyDialog++ positives as DSTC9 records (``User:``/``System:`` turns, one rating each) until ``turns``."""
    records, count = [], 0
    with (SHARED / "dailydialog_pp" / "positives.json").open(encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            for k, response in enumerate(record["positive_responses"][:3]):
                dialogue = [*record["context"], response]
                text = "\n".join(("User: " if i % 2 == 0 else "System: ") + t for i, t in enumerate(dialogue))
                records.append({"context": text, "dialogue_id": f"{record['dialog_id']}-{k}",
                                "human (overall)": 1 + len(records) % 5})
                count += len(dialogue)
            if count >= turns:
                break
    path = folder / "dstc9_shaped.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def load_slice(paths: list[str], turns: int, fmt: str):
    from metrics.benchmarking.judgments import JudgmentSet, expand, read_set

    sets = [read_set(p, fmt) for p in expand(paths)]
    items, count = [], 0
    for judgments in sets:
        for item in judgments.items:
            if count >= turns:
                break
            items.append(item)
            count += len(item.turns) if judgments.level == "dialogue" else 1
    return JudgmentSet(sets[0].name, sets[0].kind, items, {}, sets[0].dataset), count


def one_pass(metric: str, judgments, *, prepare: bool, threads: int):
    import torch

    from metrics import registry
    from metrics.benchmarking.benchmarks import score_set
    from ml import embedding_cache

    torch.set_num_threads(threads)
    with tempfile.TemporaryDirectory(prefix="concord-cold-") as directory:
        embedding_cache.configure(directory)
        started = time.perf_counter()
        values = score_set(registry.implementation(metric, {"device": "cpu"}), judgments, prepare=prepare)
        return time.perf_counter() - started, values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", nargs="+", help="judgment files or folders (default: DSTC9-shaped DailyDialog++)")
    parser.add_argument("--format", default="auto")
    parser.add_argument("--metric", default="cosine_turns")
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
    import django

    django.setup()
    import numpy as np
    import torch

    from ml.devices import cpu_threads
    from ml.embedding import embed_texts

    default_threads = torch.get_num_threads()
    chosen = cpu_threads(default=default_threads)
    with tempfile.TemporaryDirectory(prefix="concord-slice-") as folder:
        paths = args.dataset or [str(dstc9_shaped(args.turns, Path(folder)))]
        judgments, turns = load_slice(paths, args.turns, args.format)
    embed_texts(["load the encoder outside the timings"], store=None, device="cpu")
    passes = {"base": (False, default_threads), "prepared": (True, default_threads), "new": (True, chosen)}
    seconds: dict[str, list[float]] = {name: [] for name in passes}
    values: dict[str, object] = {}
    for _ in range(args.rounds):
        for name, (prepare, threads) in passes.items():
            took, values[name] = one_pass(args.metric, judgments, prepare=prepare, threads=threads)
            seconds[name].append(took)
    median = {name: statistics.median(times) for name, times in seconds.items()}
    rate = {name: turns / median[name] for name in passes}
    print(json.dumps({
        "benchmark": f"cold scoring with {args.metric} on the CPU (empty embedding cache)",
        "dataset": "DSTC9-shaped DailyDialog++ positives" if not args.dataset else ", ".join(args.dataset),
        "items": len(judgments.items), "turns": turns, "rounds": args.rounds,
        "threads": {"base": default_threads, "prepared": default_threads, "new": chosen},
        "load_average": round(os.getloadavg()[0], 2),
        "seconds": {name: round(value, 2) for name, value in median.items()},
        "turns_per_s": {name: round(value, 1) for name, value in rate.items()},
        "ratio": round(rate["new"] / rate["base"], 2), "ratio_prepared": round(rate["prepared"] / rate["base"], 2),
        "max_abs_difference": float(max(np.abs(values[name] - values["base"]).max() for name in passes)),
    }))


if __name__ == "__main__":
    main()
