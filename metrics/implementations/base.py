"""The small interface every metric implements: what it scores and how to score a batch."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar


@dataclass(frozen=True)
class ScoringInput:
    """A response given its context (turn level); ``turns`` are the context's texts, oldest first."""

    turns: list[str]
    response: str
    reference: str | None = None


@dataclass(frozen=True)
class RecipeStep:
    """One stage of a recipe: its settings, and what it starts from — ``init_from`` / ``dataset`` name an
    earlier step's stage, whose model (or augmented data set) it takes."""

    stage: str
    settings: Mapping[str, Any] = field(default_factory=dict)
    init_from: str = ""
    dataset: str = ""


@dataclass(frozen=True)
class Recipe:
    """A named, ordered list of stages that trains a usable model with one command (``train_metric
    METRIC --name NAME [--recipe NAME]``); ``summary`` says what it is and how long it takes."""

    steps: tuple[RecipeStep, ...]
    summary: str


@dataclass(frozen=True)
class Trainable:
    """How a learned metric is trained, declared where it is registered.

    ``stages``: its stages (the first starts a new model); ``runner``: the dotted path of the module that
    configures and executes a stage (``configure(stage=, **settings)`` -> a validated config, ``execute(run=,
    callbacks=)`` -> the TrainingRun; imported when training, so a web process never loads torch);
    ``recipes``: ``default`` (sized for a CPU) and ``paper`` (the paper's configuration), at least;
    ``trainer``: the ``ml.trainers`` module whose ``build(config, callbacks)`` trains a stage, and ``data``:
    each stage's default (training, validation) files under the shared data directory, where the runner
    reads them (``metrics.training.stages``). A metric with a ``trainer`` is offered on /metrics/'s training
    form, as ``label`` (its name where blank) with each stage as ``stage_labels`` says (the stage's key
    where it says nothing)."""

    stages: tuple[str, ...]
    runner: str
    recipes: Mapping[str, Recipe] = field(default_factory=dict)
    trainer: str = ""
    data: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    label: str = ""
    stage_labels: Mapping[str, str] = field(default_factory=dict)


@dataclass
class MetricImplementation:
    """Subclasses set the class attributes and implement ``score``; ``config`` holds their settings.
    ``warnings`` counts inputs that got a defined fallback value instead of a real score.

    A class that sets ``key`` in a module of ``metrics/implementations/`` is a metric: the registry finds
    it there (``metrics.registry``); nothing else lists it. What the metric is, the rest of the code reads
    from these class attributes, never from its key:

    - ``level``: "turn" (a response given its context) or "dialogue" (a whole conversation, scored by
      ``score_dialogues``);
    - ``kind``: "heuristic" (usable as it is: /metrics/ and the API offer its default instance,
      ``default_model``, created on first use with ``encoder`` as its base encoder) or "learned" (needs a
      trained model: an instance's config names its ``path``);
    - ``training``: how a learned metric is trained (``Trainable``), None where it is not trained here;
    - ``baseline``: an untrained baseline every trained model's card is compared with."""

    key: ClassVar[str]
    name: ClassVar[str]
    level: ClassVar[str] = "turn"
    kind: ClassVar[str] = "heuristic"
    range: ClassVar[tuple[float | None, float | None]] = (None, None)
    higher_is_better: ClassVar[bool] = True
    description: ClassVar[str] = ""
    training: ClassVar[Trainable | None] = None  # a learned metric's stages and recipes
    baseline: ClassVar[bool] = False  # an untrained baseline every trained model's card is compared with
    default_model: ClassVar[str] = ""  # a heuristic's default instance's name ("" -> its key)
    encoder: ClassVar[str] = ""  # the base encoder recorded on that instance

    config: dict = field(default_factory=dict)
    warnings: int = 0

    def score(self, batch: list[ScoringInput]) -> list[float]:  # pragma: no cover - interface
        raise NotImplementedError

    def prepare(self, *, inputs: Sequence[ScoringInput] = (), dialogues: Sequence[Sequence[str]] = (),
                on_progress: Callable[[int, int], None] | None = None) -> None:
        """Optionally compute ahead what scoring these inputs (or whole dialogues) will need, before they are
        scored in batches: an embedding metric embeds each distinct text once, in one length-sorted pass
        (``metrics.implementations.coherence.EmbeddingMetric``). ``on_progress(done, total)`` in the
        implementation's own units. Scores are the same with or without it; the default does nothing."""

    @classmethod
    def default_model_name(cls) -> str:
        return cls.default_model or cls.key

    @property
    def scores_conversations(self) -> bool:
        """Whether a scoring run gives one score per conversation (``score_dialogues``): a dialogue-level
        metric, unless its config asks for ``level: turn``."""
        return self.level == "dialogue" and self.config.get("level", "dialogue") == "dialogue"

    def score_dialogues(self, dialogues: list[list[str]], speakers: list[list[str] | None] | None = None) -> list[float]:
        """A dialogue-level metric's score of each whole dialogue (its turns' texts, oldest first)."""
        raise NotImplementedError(f"{self.key} is a turn-level metric: it scores a response given its context")

    @property
    def device(self) -> str:
        return "cpu"
