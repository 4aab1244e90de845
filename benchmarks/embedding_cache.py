"""The on-disk embedding cache (``ml.embedding_cache``), cold vs warm, in one run on the same texts.

    python benchmarks/embedding_cache.py [--texts 1000] [--batch-size 64] [--device cpu|cuda]

Texts: the first ``--texts`` distinct turns and responses of DailyDialog++ test (../shared/data, or
``CONCORD_SHARED_DATA``), the inputs every learned metric's frozen features and the cosine baselines embed.
Three passes of ``ml.embedding.embed_texts`` over them, each with a fresh in-memory state (the store is
the only thing shared between passes):

- ``no_cache``: the encoder runs on every text, nothing stored (what every run and seed paid before the cache);
- ``cold``: an empty cache in a temporary directory: every text computed and written;
- ``warm``: the same cache, now full: every vector read back, the encoder not run.

Reports wall seconds, texts/s, ``cold_over_warm`` and ``no_cache_over_warm`` (how many times faster a warm
run is), the cache file's size, and the largest absolute difference between the cached and the computed
vectors (must be 0: the cache returns the float32 vectors it was given). Prints JSON."""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import numpy as np  # noqa: E402

from ml.embedding import embed_texts  # noqa: E402
from ml.embedding_cache import FILE, EmbeddingStore  # noqa: E402

DATA = Path(os.environ.get("CONCORD_SHARED_DATA", ROOT.parent / "shared" / "data")) / "dailydialog_pp" / "test.json"


def distinct_texts(limit: int) -> list[str]:
    texts: dict[str, None] = {}
    with DATA.open(encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            for text in [*record["context"], *record["positive_responses"], *record["adversarial_negative_responses"],
                         *record["random_negative_responses"]]:
                texts.setdefault(text, None)
                if len(texts) >= limit:
                    return list(texts)
    return list(texts)


def timed(texts: list[str], store, *, encoder: str | None, device: str | None,
          batch_size: int) -> tuple[float, np.ndarray]:
    started = time.perf_counter()
    rows = embed_texts(texts, encoder=encoder, store=store, device=device, batch_size=batch_size, normalize=False)
    return time.perf_counter() - started, rows


def measure(texts: list[str], *, encoder: str | None = None, device: str | None = None, batch_size: int = 64) -> dict:
    """The three passes over ``texts`` (no cache, cold, warm) with a cache in a temporary directory."""
    options = {"encoder": encoder, "device": device, "batch_size": batch_size}
    embed_texts(texts[:8], store=None, encoder=encoder, device=device)  # load the encoder outside the timings
    with tempfile.TemporaryDirectory(prefix="concord-embcache-") as directory:
        store = EmbeddingStore(directory)
        no_cache, computed = timed(texts, None, **options)
        cold, written = timed(texts, store, **options)
        warm, read = timed(texts, store, **options)
        size = sum(path.stat().st_size for path in Path(directory).glob(f"{FILE}*"))  # the file and its WAL
        stored = store.count()
    return {
        "texts": len(texts), "device": str(device or "auto"), "batch_size": batch_size,
        "seconds": {"no_cache": round(no_cache, 3), "cold": round(cold, 3), "warm": round(warm, 3)},
        "texts_per_second": {"no_cache": round(len(texts) / no_cache, 1), "cold": round(len(texts) / cold, 1),
                             "warm": round(len(texts) / warm, 1)},
        "cold_over_warm": round(cold / warm, 1), "no_cache_over_warm": round(no_cache / warm, 1),
        "cold_over_no_cache": round(cold / no_cache, 3),
        "vectors_stored": stored, "cache_file_bytes": size,
        "max_abs_difference_warm_vs_computed": float(np.abs(read - computed).max()),
        "max_abs_difference_cold_vs_computed": float(np.abs(written - computed).max()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=1000, help="distinct DailyDialog++ test texts to embed")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--device", default=None, help="cpu or cuda (default: what ml.devices picks)")
    args = parser.parse_args()
    if not DATA.is_file():
        sys.exit(f"--texts: {DATA} not found (set CONCORD_SHARED_DATA to the shared data folder)")
    print(json.dumps(measure(distinct_texts(args.texts), device=args.device, batch_size=args.batch_size), indent=2))


if __name__ == "__main__":
    main()
