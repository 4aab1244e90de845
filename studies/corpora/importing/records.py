"""Plain records that the format parsers produce, and the problems they report."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ImportProblem:
    """One thing wrong with the input, located by line (1-based) and field."""

    line: int | None
    field: str
    message: str
    source: str = ""  # the file's name, when one import reads several files

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line is not None else "file"
        if self.source:
            where = f"{self.source}, {where}"
        return f"{where}, {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


class ImportFailed(Exception):
    """Raised when an import is refused; nothing was written. ``problems`` lists what to fix."""

    def __init__(self, problems: list[ImportProblem]):
        self.problems = problems
        self.detected = ""  # the format's name when it was detected (auto), so a wrong guess is plain
        super().__init__("; ".join(str(p) for p in problems))


@dataclass
class ParsedResponse:
    system: str
    text: str
    position: int = 0
    is_reference: bool = False
    metadata: dict = field(default_factory=dict)
    # criterion name -> one score per annotator position (None where that annotator gave none)
    human_scores: dict[str, list[float | None]] = field(default_factory=dict)


@dataclass
class ParsedConversation:
    external_id: str
    turns: list[dict[str, str]]
    responses: list[ParsedResponse]
    line: int
    metadata: dict = field(default_factory=dict)
    id_generated: bool = False  # the file gave no id (FED turn level): the record number stands in
    # Dialogue-level judgments (FED dialogue level, DSTC9): scores of the whole conversation, which has
    # no responses; criterion name -> one score per annotator position, as for ParsedResponse.
    human_scores: dict[str, list[float | None]] = field(default_factory=dict)
    # Annotations by named raters (a Label Studio export): each {"rater", "system" (None: the whole
    # conversation), "criterion", "type" (rating, number, choices, textarea), "value"}; they become a
    # closed study with one rater per annotator (``studies.corpora.annotated_study``).
    annotations: list[dict] = field(default_factory=list)


@dataclass
class ParsedHeader:
    """What a file declares about itself (Concord JSON lines header; implied by public formats)."""

    systems: dict[str, str] = field(default_factory=dict)  # name -> description
    human_systems: set[str] = field(default_factory=set)
    benchmark: bool = False
    scales: dict[str, tuple[float, float]] = field(default_factory=dict)  # criterion -> (min, max)
    missing_scores: dict[str, int] = field(default_factory=dict)  # criterion -> records with an empty list
    unit: str = "response"  # "dialogue" when the judgments are of whole conversations (studies.models.Unit)
    source: str = ""  # the name of the file being read (DSTC9 names a chatbot's file after it)
    # What was read but had to be guessed (a turn without a speaker): shown after the import, by line.
    warnings: list[ImportProblem] = field(default_factory=list)
    # ParlAI ACUTE-Eval pairings: the pairs to judge and the onboarding (check) pairs, in file order;
    # each {"line", "conversations": [external id, external id], "speakers": [judged, judged]} or, for an
    # onboarding pair, {"line", "onboarding": True, "dialogues": [turns, turns], "speakers", "correct": index}.
    pairs: list[dict] = field(default_factory=list)
    annotated: bool = False  # named raters' annotations (Label Studio): a closed study of them after the import
    judged_speaker: str = ""  # the import form's choice: the speaker judged wherever a conversation has it


def detected_text(failure: ImportFailed) -> str:
    """"Read as Label Studio task export (detected); name the format if that is wrong." or ""."""
    if not failure.detected:
        return ""
    return f"Read as {failure.detected} (detected); choose the format if that is wrong."


def missing_scores_text(missing: dict[str, int], unit: str = "response") -> str:
    """The missing values of an import in words, e.g. "Missing values (no score given): error-recovery in
    1 dialogue." (empty when there are none); shown after an import on the page and by the command."""
    if not missing:
        return ""
    noun = "dialogue" if unit == "dialogue" else "record"
    parts = [f"{name} in {n} {noun}{'s' if n != 1 else ''}" for name, n in sorted(missing.items())]
    return "Missing values (no score given, left out of that quality only): " + ", ".join(parts) + "."
