"""The small interface every metric implements: what it scores and how to score a batch."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar


@dataclass(frozen=True)
class ScoringInput:
    """A response given its context (turn level); ``turns`` are the context's texts, oldest first."""

    turns: list[str]
    response: str
    reference: str | None = None


@dataclass
class MetricImplementation:
    """Subclasses set the class attributes and implement ``score``; ``config`` holds their settings.
    ``warnings`` counts inputs that got a defined fallback value instead of a real score."""

    key: ClassVar[str]
    name: ClassVar[str]
    level: ClassVar[str] = "turn"
    kind: ClassVar[str] = "heuristic"
    range: ClassVar[tuple[float | None, float | None]] = (None, None)
    higher_is_better: ClassVar[bool] = True
    description: ClassVar[str] = ""

    config: dict = field(default_factory=dict)
    warnings: int = 0

    def score(self, batch: list[ScoringInput]) -> list[float]:  # pragma: no cover - interface
        raise NotImplementedError

    @property
    def device(self) -> str:
        return "cpu"
