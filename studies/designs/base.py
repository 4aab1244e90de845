"""The protocol every study design implements (``StudyDesign``).

A design (Likert, RME, BME, BWS, BWS tuples, pairwise) owns everything that differs between designs:
its configuration (defaults, cleaning with field-level errors, the researcher's explanation and the
rater's description), how its items are built from a corpus (and scheduled), the rater form (template,
context, parsing the posted answer, storing it), gold/check scoring, its export rows, its report
sections and its live panels. What differs by the thing judged is the unit's (``units.base.StudyUnit``:
response, dialogue); how one criterion is answered is its judgement kind's (``kinds.base.JudgementKind``).

Each is an instance of a subclass registered with one line (``registry.DESIGNS``, ``units.UNITS``,
``kinds.KINDS``); callers ask ``design_for(study)``, ``unit_for(study)``, ``kind_for(criterion)`` and
never compare a study's design or unit to a specific value. The methods here are the defaults; a design
overrides what it changes. The shared parts of recording an answer (the slot lock, timings,
idempotency, ``answered_at``) are the one answer service's (``studies.rating.answers.ratings_record``),
which runs the design's own ``answers_store`` inside the slot lock. The pure statistics stay in ``studies.analysis`` (no Django); a
design's report methods load its judgments and call them.
"""
from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Q, QuerySet
from django.utils.translation import gettext

from studies.designs.common import Answers, CheckAnswers, Errors, ItemSpec, Section
from studies.designs.units import unit_for
from studies.designs.units.base import StudyUnit

if TYPE_CHECKING:
    import pandas as pd
    from django.db.models import Expression

    from studies.models import Assignment, AssignmentItem, Criterion, Study, StudyItem

class StudyDesign:
    """A study design: one instance per ``Design`` value, registered in ``studies.designs.registry``.

    Class attributes say what the design is; methods do what differs. Designs whose answers are
    ``Rating`` rows (one number or rank per shown target and criterion) subclass
    ``studies.designs.ratings.RatingsDesign``, which implements the rater, check and export methods
    for them; designs with their own judgment table (``bws_tuples``, ``pairwise``) implement them here."""

    key: ClassVar[str]                          # the Design value
    explanation: ClassVar[str] = ""             # for researchers choosing a design (the study form)
    defaults: ClassVar[Mapping[str, Any]] = {}  # design_config defaults (the keys a config may have)
    template: ClassVar[str] = ""                # the rater form partial (raters/designs/<key>.html)
    whole_form: ClassVar[bool] = False          # the partial renders the whole form, not one criterion
    script: ClassVar[str] = ""                  # extra static JS of the rater form, if any
    form_fields: ClassVar[Mapping[str, forms.Field]] = {}  # the study form's fields of this design's settings
    item_shaping: ClassVar[tuple[str, ...]] = ()  # settings the items are drawn under: a change drops them
    unit_refusals: ClassVar[Mapping[str, str]] = {}  # unit level -> why this design cannot judge it
    field_prefixes: ClassVar[tuple[str, ...]] = ("r",)  # posted fields re-shown after a refused answer
    # Whether its criteria may be of other judgement kinds than its scale (studies.designs.kinds): the
    # designs whose answers are Rating rows, one per target and criterion.
    takes_kinds: ClassVar[bool] = False
    free_text_prefixes: ClassVar[tuple[str, ...]] = ()  # form fields of free text (autosaved at full length)
    anchored: ClassVar[bool] = False            # items show a reference that is not judged (magnitude)
    anchor_from_metric: ClassVar[bool] = False  # the anchor's value comes from a metric, per item (BME)
    ranks: ClassVar[bool] = False               # answers rank every target an item shows (BWS)
    compares_pairs: ClassVar[bool] = False      # answers choose between two targets (A/B): win rates, not means
    check_rule_kinds: ClassVar[tuple[str, ...]] = ("response", "greater")  # studies.checks rule keys
    # A check item of this design shows this many whole conversations written for it (ACUTE-Eval's known-
    # answer pairs; its rules number the conversations), not responses to one conversation; 0: responses.
    check_conversations: ClassVar[int] = 0
    normalisation: ClassVar[str] = "none"       # how reports normalise a value (the export's column)
    alpha_level: ClassVar[str] = "interval"     # Krippendorff's alpha level of the normalised scores
    alpha_values: ClassVar[str] = "normalised score"  # what alpha reads, in the report's words
    report_note: ClassVar[str] = ""             # a note the report adds when a condition is of this design
    # The live panel has ICCs (Rating rows scored per target): only then do the ICC target and the close
    # rule act, so only then does the study page offer them. Otherwise: why not, in the researcher's words.
    live_icc: ClassVar[bool] = True
    live_icc_absent: ClassVar[str] = ""
    screen_nouns: ClassVar[Mapping[str, str]] = {"response": "conversations", "dialogue": "dialogues"}
    items_hint: ClassVar[str] = ""              # a note beside the researcher's item build form

    def __repr__(self) -> str:
        return f"<design {self.key}>"

    # --- configuration -----------------------------------------------------------------------------

    def config_clean(self, config: Mapping[str, Any] | None) -> dict[str, Any]:
        """The configuration with defaults filled in, or ValidationError naming each bad field
        (``design_config.<key>``)."""
        if config is not None and not isinstance(config, Mapping):
            raise ValidationError({"design_config": "must be an object"})
        merged = {**self.defaults, **(config or {})}
        errors: Errors = {}
        unknown = sorted(set(merged) - set(self.defaults))
        if unknown:
            errors["design_config"] = f"unknown setting(s) for {self.key}: {', '.join(unknown)}"
        self.config_problems(merged, errors)
        if errors:
            raise ValidationError(errors)
        return merged

    def config_problems(self, config: dict[str, Any], errors: Errors) -> None:
        """Add the ``design_config.<key>`` problems of a merged configuration to ``errors``."""

    def config(self, study: Study) -> dict[str, Any]:
        """The study's configuration, with defaults for keys it lacks."""
        return {**self.defaults, **(study.design_config or {})}

    def describe(self, config: Mapping[str, Any], *, anchors: tuple[float, float] | None = None,
                 unit: StudyUnit | None = None) -> str:
        """What a rater will do, in the study's own terms (the start page); ``anchors``: the lowest
        and highest reference value its items show, when known; ``unit``: dialogues are described
        as dialogues. Falls back to the researcher's explanation."""
        return gettext(self.explanation) if self.explanation else ""

    def description(self, study: Study) -> str:
        """``describe`` for a study, with the anchors its items show."""
        return self.describe(self.config(study), anchors=self.anchors_shown(study), unit=unit_for(study))

    def study_title(self, study: Study) -> str:
        """The design's name as pages list the study ("Likert scale")."""
        return study.get_design_display()

    def study_settings_summary(self, study: Study) -> str:
        """``settings_summary`` for a study (a rating design without scale criteria has no scale to summarise)."""
        return self.settings_summary(self.config(study))

    def anchors_shown(self, study: Study) -> tuple[float, float] | None:
        """The lowest and highest reference value the study's items show, where it varies by item."""
        return None

    def settings_summary(self, config: Mapping[str, Any]) -> str:
        """One line for the study page saying how the design is set up."""
        return ""

    def screen_noun(self, unit: StudyUnit) -> str:
        """What one screen shows, as the start page counts them ("pairs of responses")."""
        return self.screen_nouns.get(unit.level, "conversations")

    def config_from_form(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """The configuration the study form's cleaned ``data`` asks for (``form_fields``)."""
        return {}

    def form_initial(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """The study form's values of ``form_fields`` for an existing configuration."""
        return {}

    def config_change(self, study: Study, config: Mapping[str, Any]) -> tuple[Errors, bool]:
        """A draft's new configuration (same design): (problems by field, whether the built items
        must go). By default they go when a setting they were drawn under (``item_shaping``) changed."""
        old = study.design_config or {}
        return {}, any(old.get(key) != config.get(key) for key in self.item_shaping)

    def unit_problem(self, unit: StudyUnit) -> str | None:
        """Why this design cannot judge the unit, or None: the design's refusal of the unit's level, or
        the unit's own of the design (``StudyUnit.design_problem``: a chat has no anchor dialogue)."""
        return self.unit_refusals.get(unit.level) or unit.design_problem(self)

    def default_criteria(self, unit: StudyUnit) -> list[dict[str, str]]:
        """The criteria of a new study whose researcher names none (empty: the seed study's two)."""
        return unit.default_criteria()

    # --- values (designs whose answers are numbers) ---------------------------------------------------

    def value_range(self, config: Mapping[str, Any], *, scale_min: float | None = None,
                    scale_max: float | None = None) -> tuple[float, float] | None:
        """The inclusive range of a rating value, None where answers are ranks or choices; a
        criterion's own ``scale_min``..``scale_max`` (imported benchmarks) wins."""
        if scale_min is not None and scale_max is not None:
            return scale_min, scale_max
        return None

    def value_problem(self, config: Mapping[str, Any], value: Any, *, scale_min: float | None = None,
                      scale_max: float | None = None) -> str | None:
        """Why ``value`` is not an acceptable rating value (check rules use it), or None."""
        return "this design takes no values"

    def fixed_reference_value(self, config: Mapping[str, Any]) -> float | None:
        """The anchor value every item shows (RME), or None (no anchor, or one per item)."""
        return None

    # --- items ---------------------------------------------------------------------------------------

    def items_build(self, *, study: Study, spec: ItemSpec) -> int:
        """(Re)build a draft study's items (the caller holds the study row lock and has checked that
        it is a draft without raters); returns how many. By default the study's unit builds them."""
        return unit_for(study).items_build(study=study, spec=spec, design=self)

    def items_shown(self, study: Study, shown: int) -> None:
        """The response unit's builder says how many responses each item will show; a design that
        depends on it checks or follows it here (BWS ranks all of them)."""

    def publish_problems(self, study: Study) -> list[str]:
        """Why a study with items and criteria cannot be published yet; empty when it can."""
        problems = []
        if self.anchored:
            anchor = "reference_conversation" if unit_for(study).level == "dialogue" else "reference_response"
            lacking = study.items.filter(Q(reference_value__isnull=True) | Q(**{f"{anchor}__isnull": True})).count()
            if lacking:
                problems.append(f"{lacking} item(s) have no reference response or reference value"
                                + (" (fill them from a metric first)" if self.anchor_from_metric else ""))
        return problems + unit_for(study).publish_problems(study)

    def assignment_orders(self, *, study: Study, chosen: Sequence[int], shown: Mapping[int, list[int]],
                          rng: random.Random) -> dict[int, list[int]]:
        """item id -> the order a new assignment shows its targets in, for the items the design places
        itself (pairwise: balanced sides); the caller shuffles the others with ``rng``."""
        return {}

    # --- the rater's form ----------------------------------------------------------------------------

    def form_context(self, *, study: Study, item: StudyItem, order: Sequence[int], values: Mapping[str, Any],
                     errors: Mapping[str, str], criteria: Sequence[Criterion]) -> dict[str, Any]:
        """What raters/item.html needs of this design (``design_partial`` and what it shows)."""
        raise NotImplementedError

    def answers_parse(self, post: Mapping[str, Any], *, study: Study, order: Sequence[int],
                      criteria: Sequence[Criterion]) -> tuple[dict[str, Any], Errors]:
        """The answers in a posted item form and, per form field, what is wrong (the rater's words)."""
        raise NotImplementedError

    def answers_store(self, *, slot: AssignmentItem, answers: Answers, criteria: Sequence[Criterion],
                      seconds: float | None) -> tuple[int, bool]:
        """Check and store one item's answers, called by the one answer service
        (``studies.rating.answers.ratings_record``) with the slot's assignment row locked, inside its
        transaction; the service marks the slot answered when something changed. A problem raises
        ValidationError keyed by form field or criterion and stores nothing. Returns (answers stored,
        whether anything changed: the same answers sent twice change nothing)."""
        raise NotImplementedError

    def stored_values(self, slot: AssignmentItem, study: Study, criteria: Sequence[Criterion]) -> dict[str, str]:
        """The slot's stored answers as form values (empty before the first answer)."""
        raise NotImplementedError

    def answers_simulate(self, *, study: Study, slot: AssignmentItem, quality: Mapping[tuple[int, str], float],
                         reference_quality: Mapping[str, float], rng: Any,
                         criteria: Sequence[Criterion]) -> dict[str, Any]:
        """What a simulated rater answers on ``slot`` (``quality``: (target id, criterion) -> latent
        quality as this rater sees it, higher is better; ``reference_quality``: criterion -> the
        quality of the item's reference, for anchored designs), in the shape ``record`` takes."""
        raise NotImplementedError

    # --- attention checks and gold items ---------------------------------------------------------------

    def checks_problem(self) -> str | None:
        """Why check items are not available for this design yet, or None."""
        return None

    def check_item_problem(self, config: Mapping[str, Any], n_responses: int) -> str | None:
        """Why a check item showing ``n_responses`` responses does not fit the design, or None."""
        return None

    def check_speaker(self, config: Mapping[str, Any], turns: Sequence[Mapping[str, Any]]) -> str:
        """The speaker judged in a conversation written for a check item (``check_conversations``) where
        the researcher named none; "" where the design marks no speaker."""
        return ""

    def check_reference_value(self, config: Mapping[str, Any], given: Any) -> tuple[float | None, str | None]:
        """An anchored design's check item reference value from what the researcher gave: (value,
        problem)."""
        return None, None

    def check_answers(self, *, assignment: Assignment, item_ids: Sequence[int]) -> CheckAnswers:
        """The assignment's answers to these check items as item -> (criterion, response) -> value,
        what ``studies.checks.check_passed`` scores (a rank in ranking designs)."""
        raise NotImplementedError

    def practice_values(self, *, study: Study, answers: Mapping[str, Any], order: Sequence[int],
                        criteria: Sequence[Criterion]) -> tuple[dict[tuple[str, int], Any], Errors]:
        """A practice item's parsed answers (``answers_parse``) checked as ``answers_store`` would and
        turned into what ``check_answers`` gives for one item, ``(criterion, response id) -> value``,
        without storing anything (``studies.onboarding``: practice answers never become ratings).
        Designs without check items (``checks_problem``) have no practice either."""
        raise NotImplementedError

    # --- reports, the live panel, exports ----------------------------------------------------------------

    def pairs_frame(self, studies: QuerySet[Study]) -> pd.DataFrame:
        """A design that compares pairs (``compares_pairs``): its judgments as ``studies.analysis.pairwise``
        reads them, ``left``/``right`` the targets the study's unit rates (responses or conversations)."""
        raise NotImplementedError(f"{self.key} does not compare pairs")

    def studies_of(self, studies: QuerySet[Study]) -> QuerySet[Study]:
        """The studies of this design among ``studies``."""
        return studies.filter(design=self.key)

    def normalised_value(self, shown: Any) -> tuple[Q, Expression] | None:
        """(when, expression): a Rating's normalised score in the database where ``when`` holds
        (``shown``: how many targets its item shows); None: the value itself. ``normalisation`` names it."""
        return None

    def report_facts(self) -> dict[str, Any]:
        """What the seed report's tables (``studies.analysis.report``) need to know of a condition of
        this design: Krippendorff's alpha level and what its values are, whether a rater's scores of a
        screen are ranks (no straight-lining), a note for the report."""
        return {"alpha_level": self.alpha_level, "alpha_values": self.alpha_values, "ranks": self.ranks,
                "report_note": self.report_note}

    def judgments_per_study(self, study_ids: Sequence[int]) -> dict[int, int]:
        """Study id -> judgments stored outside Rating that progress counts as ratings."""
        return {}

    def judgments_stamp(self, study_ids: Sequence[int]) -> tuple:
        """Changes whenever this design's own judgments of these studies change (cache keys of the
        report and the live panel)."""
        return ()

    def report_frame(self, studies: QuerySet[Study], *, keep: int | None = None) -> pd.DataFrame | None:
        """Rows for the seed report's ratings frame from judgments that are not Ratings, or None
        (excluded raters left out but ``keep``, one rater id put back)."""
        return None

    def report_sections(self, studies: QuerySet[Study], *, exclude_flagged: bool,
                        excluded_raters: Iterable[Any] = ()) -> list[Section]:
        """This design's own sections of the reliability report, beside the ICC tables, each keyed by
        the design's ``key`` (a section with empty data where none of ``studies`` is of this design:
        the report API keeps its key)."""
        return []

    def report_replaces_icc(self) -> bool:
        """True where ICCs mean nothing for this design: a report of only its studies hides them."""
        return False

    def report_sheets(self, section: Section) -> dict[str, pd.DataFrame]:
        """One of this design's report sections as spreadsheet sheets (the report's XLSX)."""
        return {}

    def report_figure(self, studies: QuerySet[Study], name: str, *, exclude_flagged: bool) -> str | None:
        """The SVG of this design's report figure ``<key>-<name>``; None: no such figure."""
        return None

    def live_panels(self, study: Study) -> list[Section]:
        """The live panels this design adds to the study page (computed once per ratings version)."""
        return []

    def export_fields(self) -> tuple[str, ...] | None:
        """The columns of an export of only this design's studies, where it has its own (else None:
        the ratings columns)."""
        return None

    def export_rows(self, studies: QuerySet[Study], *, raw_ids: bool) -> Iterator[dict[str, Any]]:
        """This design's own judgments as export rows: in ``export_fields`` where it has them, else in
        the ratings columns (after the Rating rows)."""
        return iter(())

    def mixed_export_fields(self) -> tuple[str, ...]:
        """Columns an export of several designs adds for this design's judgments."""
        return ()

    def mixed_export_rows(self, studies: QuerySet[Study], fields: tuple[str, ...], *,
                          raw_ids: bool) -> Iterator[dict[str, Any]]:
        """This design's own judgments as rows of an export of several designs (columns ``fields``)."""
        return iter(())

    def export_sheet_name(self) -> str:
        """The XLSX sheet of an export of only this design's studies."""
        return "ratings"
