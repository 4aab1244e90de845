"""The protocol of a judgement kind: how one criterion is answered.

``scale`` (``kinds.scale``, the default) is the design's own number or rank; other kinds
(categorical, multi-label, free text) answer a criterion of a rating design with their own field,
parsing, storage, check rule and report. A rating design (``studies.designs.ratings.RatingsDesign``)
asks ``kind_for(criterion)`` for every criterion and calls these methods with itself as ``design``;
so a kind works in every rating design without the design knowing it.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from studies.designs.common import field_name

if TYPE_CHECKING:
    from studies.designs.common import Errors
    from studies.models import Criterion


class RatingsDesign(Protocol):
    """What a kind may ask of the rating design it answers in (``ratings.RatingsDesign`` has it all):
    its own scale, which the default kind (``scale``) hands every call back to."""

    @property
    def key(self) -> str: ...

    def scale_parse(self, config: Mapping[str, Any], criterion: Criterion, post: Mapping[str, Any],
                    order: Sequence[int]) -> tuple[dict[int, Any], Errors]: ...

    def scale_problems(self, config: Mapping[str, Any], criterion: Criterion, answers: Mapping[int, Any],
                       order: Sequence[int]) -> Errors: ...

    def scale_fields(self, answer: Any) -> dict[str, Any]: ...

    def scale_form_value(self, stored: Mapping[str, Any]) -> str: ...

    def scale_check_value(self, stored: Mapping[str, Any]) -> Any: ...


class JudgementKind:
    """One instance per kind, registered in ``studies.designs.kinds`` (``KINDS``, ``kind_for``)."""

    key: ClassVar[str]
    label: ClassVar[str] = ""
    template: ClassVar[str] = ""  # the criterion's partial on the rater form ("": the design's own)
    many_values: ClassVar[bool] = False  # a field may be posted several times (ticked boxes); else once

    def options_clean(self, options: Any) -> dict[str, Any]:
        """The criterion's options for this kind (labels, lengths) with defaults, or ValidationError
        naming each bad field."""
        return {}

    def row_context(self, design: RatingsDesign, config: Mapping[str, Any], criterion: Criterion) -> dict[str, Any]:
        """Extra template context of the criterion's fieldset (its labels, limits, ...)."""
        return {}

    def criterion_parse(self, design: RatingsDesign, config: Mapping[str, Any], criterion: Criterion,
                        post: Mapping[str, Any], order: Sequence[int]) -> tuple[dict[int, Any], Errors]:
        """The posted answers of one criterion (target id -> answer) and the problems by form field."""
        raise NotImplementedError

    def criterion_problems(self, design: RatingsDesign, config: Mapping[str, Any], criterion: Criterion,
                           answers: Mapping[int, Any], order: Sequence[int]) -> Errors:
        """What is wrong with a criterion's answers at store time (an API may skip the form): keys are
        ``<criterion>`` or ``<criterion>.<target id>``."""
        raise NotImplementedError

    def rating_fields(self, design: RatingsDesign, answer: Any) -> dict[str, Any]:
        """The Rating fields an answer is stored in (``value``, ``rank``, or the kind's own)."""
        raise NotImplementedError

    def stored_fields(self) -> tuple[str, ...]:
        """The Rating fields ``rating_fields`` writes (compared to find a changed answer)."""
        return ("value", "rank")

    def form_value(self, design: RatingsDesign, stored: Mapping[str, Any]) -> str:
        """A stored rating (its ``stored_fields``) as the form shows it."""
        raise NotImplementedError

    def check_value(self, design: RatingsDesign, stored: Mapping[str, Any]) -> Any:
        """A stored rating as check rules see it (``studies.checks``)."""
        raise NotImplementedError

    # --- what other kinds than the scale add (the scale kind keeps these defaults) ------------------------

    check_rule_key: ClassVar[str | None] = None  # the check rule key this kind's expected answer goes in
    numeric: ClassVar[bool] = True  # whether its answers are numbers the report's scale analyses read
    rater_task: ClassVar[str] = ""  # what a rater does for it, for the start page ("pick one label")
    long_text: ClassVar[bool] = False  # whether its form field holds free text (autosave keeps more of it)
    own_report: ClassVar[bool] = False  # whether the report shows it in a section of its own, not the labels' one
    # its check rules expect answers about the turns of a dialogue written for the check (per turn), so a
    # dialogue-unit study asking it takes check items of one written dialogue (studies.rating.dialogue_checks)
    checks_dialogues: ClassVar[bool] = False
    shows_dialogue: ClassVar[bool] = False  # its partial shows the dialogue itself (per turn), not the unit's view
    levels: ClassVar[tuple[str, ...]] = ("response", "dialogue")  # the unit levels whose targets it can judge

    def rows_extend(self, design: RatingsDesign, criterion: Criterion, rows: list[dict[str, Any]], *,
                    values: Mapping[str, Any], errors: Mapping[str, str], show: Any) -> None:
        """Add what the kind's partial shows per row beyond one field (a dialogue's turns); ``show``: the
        unit's view of a transcript (``StudyUnit.shown_turns``)."""

    def form_values(self, design: RatingsDesign, field: str, stored: Mapping[str, Any],
                    criterion: Criterion | None = None) -> dict[str, Any]:
        """A stored rating as the form's values: one field by default (``form_value``)."""
        return {field: self.form_value(design, stored)}

    def expected_clean(self, criterion: Criterion, expected: Any) -> tuple[Any, str | None]:
        """A check rule's expected answer for this criterion (``check_rule_key``), cleaned, or the problem."""
        return None, "this criterion takes no expected answer"

    def simulate(self, criterion: Criterion, quality: float, rng: Any) -> Any:
        """What a simulated rater of latent ``quality`` (higher is better, about N(0, 1)) answers."""
        raise NotImplementedError

    def export_text(self, stored: Mapping[str, Any]) -> str:
        """A stored answer as one export cell ("" for the scale: its number has its own columns)."""
        return ""

    def target_simulate(self, criterion: Criterion, target_id: int, quality: float, rng: Any) -> Any:
        """What a simulated rater answers for one target (a kind that reads the target's text overrides it)."""
        return self.simulate(criterion, quality, rng)

    def target_context(self, study: Any, criterion: Criterion, target_ids: Sequence[int]) -> dict[int, Any]:
        """Extra template context per target row (a kind that shows the target's text its own way)."""
        return {}


class PerTargetKind(JudgementKind):
    """A kind whose every target has a field of its own, answered and checked alone (labels, free text). A
    subclass says what one target's answer is (``answer``) and what the form posted for it (``form_given``);
    the form's problems by field and an API's by ``<criterion>.<target>`` follow from those, in one wording."""

    def answer(self, criterion: Criterion, given: Any) -> tuple[Any, str | None]:
        """(the answer to store, None), or (None, what is wrong in the rater's words)."""
        raise NotImplementedError

    def form_given(self, post: Mapping[str, Any], name: str) -> Any:
        """What the form posted for one target's field, as ``answer`` takes it."""
        raise NotImplementedError

    def api_given(self, given: Any) -> Any:
        """An API's answer as ``answer`` takes it."""
        return given

    def criterion_parse(self, design: RatingsDesign, config: Mapping[str, Any], criterion: Criterion,
                        post: Mapping[str, Any], order: Sequence[int]) -> tuple[dict[int, Any], Errors]:
        answers: dict[int, Any] = {}
        errors: Errors = {}
        for target in order:
            name = field_name(target, criterion.name, order)
            answer, problem = self.answer(criterion, self.form_given(post, name))
            if problem:
                errors[name] = problem
            else:
                answers[target] = answer
        return answers, errors

    def criterion_problems(self, design: RatingsDesign, config: Mapping[str, Any], criterion: Criterion,
                           answers: Mapping[int, Any], order: Sequence[int]) -> Errors:
        return {f"{criterion.name}.{target}": problem for target, given in answers.items()
                if (problem := self.answer(criterion, self.api_given(given))[1])}
