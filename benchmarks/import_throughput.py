"""Import throughput: the streaming, batched import vs a plain row-by-row ORM baseline, same process.

    python benchmarks/import_throughput.py [--responses 100000] [--baseline-responses 10000]

Prints JSON: rows (responses) per second for each and the ratio. Runs on a throw-away SQLite
database under a temporary folder (or DATABASE_URL if set)."""
from __future__ import annotations

import argparse
import io
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.common import django_on_throwaway_database  # noqa: E402

SYSTEMS = ("seq2seq", "hred", "thred", "human")


def corpus_bytes(responses: int) -> bytes:
    header = {"concord": "dialogues/1", "systems": list(SYSTEMS), "reference": "human"}
    lines = [json.dumps(header)]
    for i in range(responses // len(SYSTEMS)):
        lines.append(json.dumps({
            "id": f"c{i}", "turns": [f"Hello, this is turn one of conversation {i}.", "Hi! Nice to hear from you."],
            "responses": {s: f"{s} says something plausible about conversation {i}." for s in SYSTEMS}}))
    return ("\n".join(lines) + "\n").encode()


def baseline_import(data: bytes, slug: str) -> None:
    """The unoptimised way: parse everything, then one INSERT per row, in one transaction."""
    from django.db import transaction

    from studies.models import Conversation, Corpus, Response, System

    records = [json.loads(line) for line in data.decode().splitlines()[1:]]
    with transaction.atomic():
        corpus = Corpus.objects.create(slug=slug, title=slug, source_format="jsonl")
        systems = {s: System.objects.get_or_create(name=s)[0] for s in SYSTEMS}
        for record in records:
            conversation = Conversation.objects.create(
                corpus=corpus, external_id=record["id"],
                turns=[{"speaker": "AB"[i % 2], "text": t} for i, t in enumerate(record["turns"])])
            for name, text in record["responses"].items():
                Response.objects.create(conversation=conversation, system=systems[name], text=text,
                                        is_reference=name == "human")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--responses", type=int, default=100_000)
    parser.add_argument("--baseline-responses", type=int, default=10_000)
    args = parser.parse_args()
    django_on_throwaway_database()
    import django

    from studies.corpora.services import dialogues_import

    big, small = corpus_bytes(args.responses), corpus_bytes(args.baseline_responses)

    started = time.perf_counter()
    summary = dialogues_import(stream=io.BytesIO(big), source_name="bench.jsonl", corpus_slug="bench-streaming")
    streaming_seconds = time.perf_counter() - started

    started = time.perf_counter()
    baseline_import(small, "bench-baseline")
    baseline_seconds = time.perf_counter() - started

    streaming_rate = summary.responses / streaming_seconds
    baseline_rate = args.baseline_responses / baseline_seconds
    print(json.dumps({
        "benchmark": "dialogue import", "database": django.db.connection.vendor,
        "streaming": {"responses": summary.responses, "conversations": summary.conversations,
                      "seconds": round(streaming_seconds, 3), "responses_per_s": round(streaming_rate, 1)},
        "baseline_row_by_row": {"responses": args.baseline_responses, "seconds": round(baseline_seconds, 3),
                                "responses_per_s": round(baseline_rate, 1)},
        "speedup": round(streaming_rate / baseline_rate, 2),
    }, indent=2))


if __name__ == "__main__":
    main()
