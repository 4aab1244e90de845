"""The metric registry: key -> implementation class. Implementations register on import."""
from __future__ import annotations

from metrics.implementations.base import MetricImplementation

REGISTRY: dict[str, type[MetricImplementation]] = {}


def register(cls: type[MetricImplementation]) -> type[MetricImplementation]:
    REGISTRY[cls.key] = cls
    return cls


def implementation(key: str, config: dict | None = None) -> MetricImplementation:
    _load()
    if key not in REGISTRY:
        raise KeyError(f"unknown metric {key!r}; registered: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[key](config=dict(config or {}))


def all_metrics() -> dict[str, type[MetricImplementation]]:
    _load()
    return dict(REGISTRY)


def _load() -> None:
    from metrics.implementations import (  # noqa: F401  (registration side effect)
        coherence,
        consecutive_turns,
        mdd_eval,
        quantidce,
        readability,
        self_eval,
    )
