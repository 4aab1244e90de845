"""The metric registry: key -> implementation class. Implementations register on import; a learned
metric declares how it is trained (its stages, runner and recipes) on its class (``Trainable``)."""
from __future__ import annotations

from metrics.implementations.base import MetricImplementation, Trainable

REGISTRY: dict[str, type[MetricImplementation]] = {}


def register(cls: type[MetricImplementation]) -> type[MetricImplementation]:
    REGISTRY[cls.key] = cls
    return cls


def implementation(key: str, config: dict | None = None) -> MetricImplementation:
    _load()
    if key not in REGISTRY:
        raise KeyError(f"unknown metric {key!r}; registered: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[key](config=dict(config or {}))


def implementation_class(key: str) -> type[MetricImplementation]:
    _load()
    if key not in REGISTRY:
        raise KeyError(f"unknown metric {key!r}; registered: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[key]


def trainable_keys() -> tuple[str, ...]:
    """The keys of the metrics that can be trained, sorted."""
    _load()
    return tuple(sorted(key for key, cls in REGISTRY.items() if cls.training is not None))


def trainable(key: str) -> Trainable:
    """A metric's training declaration; ValueError("metric: ...") when it cannot be trained."""
    _load()
    spec = REGISTRY[key].training if key in REGISTRY else None
    if spec is None:
        raise ValueError(f"metric: {key!r} cannot be trained here (trainable: {', '.join(trainable_keys())})")
    return spec


def all_stages() -> tuple[str, ...]:
    """Every trainable metric's stages, in declaration order, each once."""
    return tuple(dict.fromkeys(stage for key in trainable_keys() for stage in trainable(key).stages))


def baseline_keys() -> tuple[str, ...]:
    """The untrained baselines (``baseline = True``), sorted."""
    _load()
    return tuple(sorted(key for key, cls in REGISTRY.items() if cls.baseline))


def all_metrics() -> dict[str, type[MetricImplementation]]:
    _load()
    return dict(REGISTRY)


def _load() -> None:
    from metrics.implementations import (  # noqa: F401  (registration side effect)
        coherence,
        consecutive_turns,
        cosine,
        llm_judge,
        mdd_eval,
        quantidce,
        readability,
        self_eval,
    )
