"""The metric registry: key -> implementation class, discovered, never listed.

Every module of ``metrics/implementations/`` is imported once, by name (``_load``); each class defined
there that subclasses ``MetricImplementation`` and sets its own ``key`` is a metric. Adding a metric is
adding a module (docs/architecture.md, "How to add a metric"). What a metric is (its level, heuristic or
learned, how it is trained, whether it is a baseline) is declared on its class, and the questions below
read only that."""
from __future__ import annotations

import importlib
import pkgutil
from functools import cache

import metrics.implementations as package
from metrics.implementations.base import MetricImplementation, Trainable


@cache
def _load() -> dict[str, type[MetricImplementation]]:
    """Import every implementation module (by name: the registry depends on none of them) and collect the
    metrics defined in them; two classes with one key is an error naming both."""
    found: dict[str, type[MetricImplementation]] = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for cls in vars(module).values():
            if not (isinstance(cls, type) and issubclass(cls, MetricImplementation) and "key" in vars(cls)
                    and cls.__module__ == module.__name__):
                continue
            if cls.key in found:
                raise ImportError(f"two metrics with the key {cls.key!r}: {found[cls.key].__module__}."
                                  f"{found[cls.key].__qualname__} and {module.__name__}.{cls.__qualname__}")
            found[cls.key] = cls
    return dict(sorted(found.items()))


def implementation_class(key: str) -> type[MetricImplementation]:
    registered = _load()
    if key not in registered:
        raise KeyError(f"unknown metric {key!r}; registered: {', '.join(registered)}")
    return registered[key]


def implementation(key: str, config: dict | None = None) -> MetricImplementation:
    return implementation_class(key)(config=dict(config or {}))


def all_metrics() -> dict[str, type[MetricImplementation]]:
    return dict(_load())


def heuristic_keys() -> tuple[str, ...]:
    """The metrics usable as they are (``kind = "heuristic"``): each has a default instance, sorted."""
    return tuple(key for key, cls in _load().items() if cls.kind == "heuristic")


def trainable_keys() -> tuple[str, ...]:
    """The keys of the metrics that can be trained, sorted."""
    return tuple(key for key, cls in _load().items() if cls.training is not None)


def trainable(key: str) -> Trainable:
    """A metric's training declaration; ValueError("metric: ...") when it cannot be trained."""
    cls = _load().get(key)
    if cls is None or cls.training is None:
        raise ValueError(f"metric: {key!r} cannot be trained here (trainable: {', '.join(trainable_keys())})")
    return cls.training


def trainer_keys() -> tuple[str, ...]:
    """The trainable metrics one ``ml.trainers`` module trains stage by stage (``Trainable.trainer``): those
    /metrics/'s training form offers (MDD-Eval, trained by its own runner, has a form of its own), sorted."""
    return tuple(key for key in trainable_keys() if trainable(key).trainer)


def all_stages() -> tuple[str, ...]:
    """Every trainable metric's stages, in declaration order, each once."""
    return tuple(dict.fromkeys(stage for key in trainable_keys() for stage in trainable(key).stages))


def baseline_keys() -> tuple[str, ...]:
    """The untrained baselines (``baseline = True``), sorted."""
    return tuple(key for key, cls in _load().items() if cls.baseline)
