"""One on-disk cache of a frozen encoder's text embeddings, shared by every metric, run and seed.

A frozen encoder is a fixed function of its input, so the embedding of a text need be computed once
per machine, not once per run: QuantiDCE's ``windows`` features, SelF-Eval's ``pairs`` turns, MDD-Eval's
frozen ``paired`` features, the coherence heuristic and the cosine baselines all embed the same
DailyDialog++, GRADE and FED texts with the same packaged MiniLM.

Key: the encoder's fingerprint (a hash of its architecture and weights, so a fine-tuned encoder never
reads a frozen one's vectors) and the token ids the encoder reads (``[CLS] text [SEP]`` after
truncation: they stand for the text, the maximum length and which end was cut). Value: the
mean-pooled last hidden state, float32 (H,) — not normalised, so a caller that wants unit vectors
normalises. Storage: one SQLite file, ``embeddings.sqlite3``, in WAL mode so that several processes
(seeds run side by side, a worker and a command) read and add at once.

This module imports no torch (the web process configures it at start-up); the encoder side is in
``ml.embedding``. The directory comes from ``configure`` (Django's ``EMBEDDING_CACHE_DIR``) or the
environment variable ``CONCORD_EMBEDDING_CACHE``; with neither, nothing is cached on disk."""
from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

FILE = "embeddings.sqlite3"
ENVIRONMENT = "CONCORD_EMBEDDING_CACHE"
_CHUNK = 500  # SQLite's host-parameter limit is 999 on old builds
_default: list[str | None] = [os.environ.get(ENVIRONMENT) or None]


def configure(directory: str | Path | None) -> None:
    """Where the default cache lives (None: no disk cache)."""
    _default[0] = str(directory) if directory else None


def default_store() -> EmbeddingStore | None:
    return EmbeddingStore(_default[0]) if _default[0] else None


def ids_key(ids: Sequence[int]) -> bytes:
    """The cache key of one encoder input (its token ids), 16 bytes."""
    return hashlib.blake2b(",".join(map(str, ids)).encode(), digest_size=16).digest()


class EmbeddingStore:
    """(encoder fingerprint, input key) -> float32 vector bytes, in ``DIRECTORY/embeddings.sqlite3``."""

    _local = threading.local()

    def __init__(self, directory: str | Path):
        self.path = Path(directory) / FILE

    def _connection(self) -> sqlite3.Connection:
        connections = self._local.__dict__.setdefault("connections", {})
        connection = connections.get(self.path)
        if connection is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.execute("CREATE TABLE IF NOT EXISTS vectors (encoder TEXT NOT NULL, key BLOB NOT NULL, "
                               "vector BLOB NOT NULL, PRIMARY KEY (encoder, key)) WITHOUT ROWID")
            connections[self.path] = connection
        return connection

    def get(self, encoder: str, keys: Iterable[bytes]) -> dict[bytes, bytes]:
        keys = list(dict.fromkeys(keys))
        found: dict[bytes, bytes] = {}
        connection = self._connection()
        for start in range(0, len(keys), _CHUNK):
            chunk = keys[start:start + _CHUNK]
            rows = connection.execute(f"SELECT key, vector FROM vectors WHERE encoder = ? AND key IN "
                                      f"({','.join('?' * len(chunk))})", (encoder, *chunk))
            found.update(rows)
        return found

    def put(self, encoder: str, rows: Iterable[tuple[bytes, bytes]]) -> None:
        connection = self._connection()
        connection.execute("BEGIN")
        try:
            connection.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?, ?)",
                                   ((encoder, key, vector) for key, vector in rows))
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")

    def count(self, encoder: str | None = None) -> int:
        query, args = ("SELECT COUNT(*) FROM vectors", ()) if encoder is None else (
            "SELECT COUNT(*) FROM vectors WHERE encoder = ?", (encoder,))
        return int(self._connection().execute(query, args).fetchone()[0])
