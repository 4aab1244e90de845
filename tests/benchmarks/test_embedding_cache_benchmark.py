"""benchmarks/embedding_cache.py: one run measures the encoder without a cache, a cold cache and a warm one on
the same texts; the warm pass reads back exactly the vectors computed, and is faster than computing them."""
from __future__ import annotations

from benchmarks.embedding_cache import measure
from tests.ml.toy import tiny_encoder_dir


def test_cold_then_warm_in_one_run(tmp_path):
    encoder = str(tiny_encoder_dir(tmp_path / "encoder"))
    texts = [f"turn number {i} about {'tea' if i % 2 else 'the weather'} " * (1 + i % 7) for i in range(60)]
    result = measure(texts, encoder=encoder, device="cpu", batch_size=16)
    assert result["texts"] == 60 and result["vectors_stored"] == 60
    assert result["max_abs_difference_warm_vs_computed"] == 0.0
    assert result["max_abs_difference_cold_vs_computed"] == 0.0
    assert set(result["seconds"]) == {"no_cache", "cold", "warm"}
    assert result["seconds"]["warm"] < result["seconds"]["cold"]
    assert result["cold_over_warm"] > 1 and result["cache_file_bytes"] > 0
