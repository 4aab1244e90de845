"""Designs whose answers are ``Rating`` rows: one number (or rank) per shown target and criterion.

Likert, magnitude estimation (RME, BME) and BWS ranking subclass ``RatingsDesign``; it implements the
rater form (rows of targets per criterion, one partial per design), parsing, storing, stored values,
check answers and exports for all of them. Each criterion is answered through its judgement kind
(``kind_for``): the default kind hands back to the design's scale (``scale_parse``,
``scale_problems``, ``scale_fields``), so a new kind works in every rating design.

Storing (``answers_store``) is one upsert on the unique (assignment, target, criterion) for a first
answer: a double submit that waited on the assignment lock may have read the slot as it was before the
first one committed (PostgreSQL re-reads only the locked row) and still stores one rating each; a
changed answer reads the stored ones and writes only what changed.
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.translation import gettext, gettext_noop

from studies.designs.base import StudyDesign
from studies.designs.common import CheckAnswers, Errors, field_name, letter, number_text
from studies.designs.kinds import kind_for
from studies.designs.kinds.rationale import (
    SUFFIX,
    rationale_field,
    rationale_key,
    rationale_parse,
    rationale_problems,
)
from studies.designs.units import unit_for
from studies.models import Rating

if TYPE_CHECKING:
    from studies.models import Assignment, AssignmentItem, Criterion, Study, StudyItem

# What a rater may type as a number (rater.js checks the same grammar with the same messages):
# digits with an optional decimal point, nothing else (no exponent, no thousands separator).
_DECIMAL = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)")
_DECIMAL_COMMA = re.compile(r"[+-]?\d*,\d+")
_THOUSANDS_COMMA = re.compile(r"[+-]?\d{1,3},\d{3}")  # 1,000: a thousands separator or a decimal comma
_INTEGER = re.compile(r"[+-]?\d+")


# A row's name on the rater's form, translated (studies.rating.language) for the units' nouns.
_ROW_LABELS = {"Response": (gettext_noop("Response"), gettext_noop("Response %(letter)s")),
               "Dialogue": (gettext_noop("Dialogue"), gettext_noop("Dialogue %(letter)s")),
               "Conversation": (gettext_noop("Conversation"), gettext_noop("Conversation %(letter)s"))}


def row_label(noun: str, letter_shown: str | None) -> str:
    """"Response A" (several rows) or "Response" (one), in the page's language where the noun is known."""
    one, lettered = _ROW_LABELS.get(noun, (noun, f"{noun} %(letter)s"))
    return gettext(lettered) % {"letter": letter_shown} if letter_shown else gettext(one)


class RatingsDesign(StudyDesign):
    """A design whose answers are Rating rows of a number per target and criterion (see the module)."""

    empty_message: ClassVar[str] = gettext_noop("give a value for this response")
    takes_kinds = True

    # --- what the study's criteria ask for ---------------------------------------------------------------

    def scale_criteria(self, study: Study) -> list[Criterion]:
        """The criteria answered on the design's own scale (the rest are labels or free text)."""
        return [c for c in study.criteria.all() if kind_for(c).numeric]

    def description(self, study: Study) -> str:
        """The design's description where some criterion is on its scale; otherwise what the label and
        free-text criteria ask (a labels-only study has no point scale to speak of)."""
        if self.scale_criteria(study):
            return super().description(study)
        asks = {kind_for(c).key: kind_for(c).rater_task for c in study.criteria.all()}
        tasks = [task for task in asks.values() if task]
        noun = "dialogue" if unit_for(study).level == "dialogue" else "response"
        if not tasks:
            return super().description(study)
        joined = tasks[0] if len(tasks) == 1 else ", ".join(tasks[:-1]) + " or " + tasks[-1]
        return f"For each {noun} you answer the questions below: you {joined}, as each question asks."

    def study_title(self, study: Study) -> str:
        """A study whose criteria are all labels or free text is listed as such, not by its scale's name."""
        return super().study_title(study) if self.scale_criteria(study) else "Labels and free text (no scale)"

    def study_settings_summary(self, study: Study) -> str:
        if self.scale_criteria(study):
            return super().study_settings_summary(study)
        return "Labels and free text only: no criterion is on a scale."

    # --- values ----------------------------------------------------------------------------------------

    def whole_numbers(self, *, scale_min: float | None = None) -> bool:
        """Whether a typed value must be a whole number (Likert points; not a criterion's own scale)."""
        return False

    def value_problem(self, config: Mapping[str, Any], value: Any, *, scale_min: float | None = None,
                      scale_max: float | None = None) -> str | None:
        bounds = self.value_range(config, scale_min=scale_min, scale_max=scale_max)
        if bounds is None:
            return "this design takes ranks, not values"
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or (isinstance(value, float) and not math.isfinite(value)):
            return f"must be a finite number, got {value!r}"
        low, high = bounds
        if self.whole_numbers(scale_min=scale_min) and value != int(value):
            return f"must be a whole number from {number_text(low)} to {number_text(high)}, got {number_text(value)}"
        if not low <= value <= high:
            return f"must be from {number_text(low)} to {number_text(high)}, got {number_text(value)}"
        return None

    def typed_value_parse(self, config: Mapping[str, Any], raw: str, *, scale_min: float | None = None,
                          scale_max: float | None = None) -> tuple[float | None, str | None]:
        """A rater's typed (or picked) value as a number, or the rater-facing reason it is not acceptable.

        One message per kind of problem, so that the message says what is wrong: empty, a decimal
        comma, not a number, a decimal where whole points are asked for, negative, out of range. The
        range is the design's (or the criterion's own ``scale_min``..``scale_max``)."""
        text = (raw or "").strip()
        low, high = self.value_range(config, scale_min=scale_min, scale_max=scale_max) or (-math.inf, math.inf)
        span = {"low": number_text(low), "high": number_text(high)}
        whole = self.whole_numbers(scale_min=scale_min)
        if not text:
            return None, gettext(self.empty_message)
        if not whole and _THOUSANDS_COMMA.fullmatch(text):
            return None, gettext("“{text}” is ambiguous: write {whole} for a whole number, or use a point for "
                                 "decimals").format(text=text, whole=text.replace(",", ""))
        if not whole and _DECIMAL_COMMA.fullmatch(text):
            return None, gettext("write {fixed} with a point, not a comma").format(fixed=text.replace(",", "."))
        if not (_INTEGER if whole else _DECIMAL).fullmatch(text):
            if whole and _DECIMAL.fullmatch(text):
                return None, gettext("pick one of the points {low} to {high}").format(**span)
            return None, gettext("“{text}” is not a number: type digits, e.g. 40 or 12.5").format(text=text[:12]) \
                if not whole else gettext("“{text}” is not one of the points {low} to {high}").format(text=text[:12], **span)
        value = float(text)
        if value < 0 <= low:
            return None, gettext("must not be negative: use a number from {low} to {high}").format(**span)
        if not low <= value <= high:
            return None, (gettext("use a number from {low} to {high}") if not whole
                          else gettext("pick one of the points {low} to {high}")).format(**span)
        return (int(value) if whole else value), None

    # --- the scale kind's answers (kinds.scale hands back here) ------------------------------------------

    def scale_parse(self, config: Mapping[str, Any], criterion: Criterion, post: Mapping[str, Any],
                    order: Sequence[int]) -> tuple[dict[int, Any], Errors]:
        """One criterion's posted values (target id -> number) and problems by field."""
        answers: dict[int, Any] = {}
        errors: Errors = {}
        for rid in order:
            name = field_name(rid, criterion.name, order)
            value, problem = self.typed_value_parse(config, post.get(name) or "", scale_min=criterion.scale_min,
                                                    scale_max=criterion.scale_max)
            if problem:
                errors[name] = problem
            else:
                answers[rid] = value
        return answers, errors

    def scale_problems(self, config: Mapping[str, Any], criterion: Criterion, answers: Mapping[int, Any],
                       order: Sequence[int]) -> Errors:
        """What is wrong with one criterion's values at store time, keyed ``<criterion>.<target id>``."""
        errors: Errors = {}
        for target_id, value in answers.items():
            problem = self.value_problem(config, value, scale_min=criterion.scale_min, scale_max=criterion.scale_max)
            if problem:
                errors[f"{criterion.name}.{target_id}"] = problem
        return errors

    def scale_fields(self, answer: Any) -> dict[str, Any]:
        return {"value": float(answer), "rank": None}

    def scale_form_value(self, stored: Mapping[str, Any]) -> str:
        given = stored.get("value")
        return number_text(given) if given is not None else ""

    def scale_check_value(self, stored: Mapping[str, Any]) -> Any:
        return stored.get("value")

    # --- the rater's form ----------------------------------------------------------------------------------

    def criterion_context(self, config: Mapping[str, Any], criterion: Criterion) -> dict[str, Any]:
        """What the design's partial needs per criterion besides its rows."""
        return {}

    def page_context(self, study: Study, item: StudyItem, config: Mapping[str, Any]) -> dict[str, Any]:
        """What the design's partial needs once per page (Likert points, the reference response, ...)."""
        return {}

    def form_context(self, *, study: Study, item: StudyItem, order: Sequence[int], values: Mapping[str, Any],
                     errors: Mapping[str, str], criteria: Sequence[Criterion]) -> dict[str, Any]:
        """Rows of targets per criterion (lettered in the rater's order), the design's partial
        (included once per criterion), the unit's own part (a whole dialogue, ...)."""
        unit = unit_for(study)
        texts = unit.target_texts(study, item, order, ranked=self.ranks)
        # what a row is called: a letter only where there are several ("Response A", "Response B"; one
        # chat is just "Conversation")
        several = len(order) > 1
        responses: list[dict[str, Any]] = [
            {"id": rid, "letter": letter(i), "text": texts[rid],
             "label": row_label(unit.row_noun, letter(i) if several else None)}
            for i, rid in enumerate(order)]
        config = study.design_config
        rows_by_criterion = []
        for criterion in criteria:
            rows = []
            extras = kind_for(criterion).target_context(study, criterion, list(order))
            for response in responses:
                name = field_name(response["id"], criterion.name, order)
                value = values.get(name, "")
                row = {**response, "field": name, "value": value, "error": errors.get(name),
                       "chosen": value if isinstance(value, list) else [value],  # a label set's ticked labels
                       **extras.get(response["id"], {})}
                if criterion.rationale:  # the criterion's "Why?" box beside each answer
                    why = rationale_field(response["id"], criterion.name, order)
                    row.update(why_field=why, why_value=values.get(why, ""), why_error=errors.get(why))
                rows.append(row)
            if self.ranks:  # show the list in the rater's current ranking order
                rows.sort(key=lambda r: (int(r["value"]) if str(r["value"]).isascii() and str(r["value"]).isdigit()
                                      and len(str(r["value"])) <= 6 else 99, r["letter"]))
            kind = kind_for(criterion)
            kind.rows_extend(self, criterion, rows, values=values, errors=errors, show=unit.shown_turns)
            rows_by_criterion.append({
                "name": criterion.name, "question": criterion.question, "help": criterion.help_text, "rows": rows,
                "error": errors.get(criterion.name), "ranks": list(range(1, len(rows) + 1)),
                "kind": kind.key, "kind_template": kind.template, "rationale": criterion.rationale,
                **self.criterion_context(config, criterion), **kind.row_context(self, config, criterion)})
        return {
            "design_partial": self.template, "whole_form": False, "design_script": self.script,
            "unit_name": unit.row_noun, "responses": responses, "criteria": rows_by_criterion,
            # a kind that shows the dialogue turn by turn (per turn) takes the place of the unit's view of it
            "turns_inline": any(kind_for(c).shows_dialogue for c in criteria),
            "points": [], "reference": None, "reference_value": None,
            **self.page_context(study, item, config),
            **unit.form_context(study, item, order, design=self),
        }

    def answers_parse(self, post: Mapping[str, Any], *, study: Study, order: Sequence[int],
                      criteria: Sequence[Criterion]) -> tuple[dict[str, Any], Errors]:
        """The answers in a submitted item form (per criterion, target id -> answer) and every field
        that is not acceptable with what is wrong with it (rater.js shows the same messages first)."""
        answers: dict[str, Any] = {}
        errors: Errors = {}
        config = study.design_config
        for criterion in criteria:
            answers[criterion.name], problems = kind_for(criterion).criterion_parse(self, config, criterion, post,
                                                                                      order)
            errors.update(problems)
            if criterion.rationale:
                answers[rationale_key(criterion.name)], problems = rationale_parse(criterion, post, order)
                errors.update(problems)
        return answers, errors

    def answers_store(self, *, slot: AssignmentItem, answers: Mapping[str, Any], criteria: Sequence[Criterion],
                      seconds: float | None) -> tuple[int, bool]:
        """Check every criterion is answered for every shown target (and only those) and each answer
        against its kind; store the ratings (see the module docstring). ValidationError keys:
        ``<criterion>`` or ``<criterion>.<target id>``."""
        assignment, study = slot.assignment, slot.assignment.study
        unit = unit_for(study)
        config = study.design_config
        by_name = {c.name: c for c in criteria}
        shown = set(slot.response_order)
        errors: Errors = {}
        for name in by_name:
            if name not in answers:
                errors[name] = "answer this question for every response"
        reasons = {name: answers.get(rationale_key(name)) for name in by_name}
        for name in answers:
            if name.endswith(SUFFIX) and name.removesuffix(SUFFIX) not in by_name:
                errors[name] = "unknown criterion"
        for name, asked in by_name.items():
            errors.update(rationale_problems(asked, reasons[name], shown))
        for name, per_target in answers.items():
            if name.endswith(SUFFIX):
                continue
            criterion = by_name.get(name)
            if criterion is None:
                errors[name] = "unknown criterion"
                continue
            if not isinstance(per_target, Mapping) or set(per_target) != shown:
                errors[name] = "answer for every response shown (and only those)"
                continue
            errors.update(kind_for(criterion).criterion_problems(self, config, criterion, per_target,
                                                                  slot.response_order))
        if errors:
            raise ValidationError(errors)
        every = [(by_name[name], target_id, {**kind_for(by_name[name]).rating_fields(self, raw),
                                             "rationale": ((reasons[name] or {}).get(target_id) or "").strip()})
                 for name, per_target in answers.items() if not name.endswith(SUFFIX)
                 for target_id, raw in per_target.items()]
        # An optional free text left empty is no answer: no row (and a text cleared removes its row).
        given = [g for g in every if g[2].get("text", "") != "" or any(
            g[2].get(k) is not None for k in ("value", "rank", "label", "labels", "spans", "turns"))]
        cleared = [(criterion.pk, target_id) for criterion, target_id, stored in every
                   if (criterion, target_id, stored) not in given]
        fields = sorted({f for c in by_name.values() for f in kind_for(c).stored_fields()} | {"rationale"})
        changed = True
        if slot.answered_at is None:
            # No ratings for this item yet (ratings and answered_at are written together).
            Rating.objects.bulk_create(
                [Rating(assignment=assignment, item_id=slot.item_id, **unit.rating_target(target_id),
                        criterion=criterion, seconds=seconds, **stored) for criterion, target_id, stored in given],
                update_conflicts=True, unique_fields=unit.rating_unique_fields(),
                update_fields=[*fields, "seconds", "updated_at"])
        else:
            target = f"{unit.target_field}_id"
            existing = {(getattr(r, target), r.criterion_id): r
                        for r in Rating.objects.filter(assignment=assignment, item_id=slot.item_id)}
            create, update = [], []
            for criterion, target_id, stored in given:
                old = existing.get((target_id, criterion.pk))
                if old is None:
                    create.append(Rating(assignment=assignment, item_id=slot.item_id, **unit.rating_target(target_id),
                                         criterion=criterion, seconds=seconds, **stored))
                elif any(getattr(old, k) != v for k, v in stored.items()):
                    for k, v in stored.items():
                        setattr(old, k, v)
                    old.seconds = seconds
                    old.updated_at = timezone.now()  # bulk_update does not apply auto_now
                    update.append(old)
            Rating.objects.bulk_create(create)
            gone = [existing[(target_id, pk)].pk for pk, target_id in cleared if (target_id, pk) in existing]
            if gone:
                Rating.objects.filter(pk__in=gone).delete()
            if update:
                Rating.objects.bulk_update(update, [*fields, "seconds", "updated_at"])
            changed = bool(create or update or gone)
        return len(given), changed  # validation asked for every criterion x every shown target

    def stored_values(self, slot: AssignmentItem, study: Study, criteria: Sequence[Criterion]) -> dict[str, str]:
        if slot.answered_at is None:  # ratings are stored together with answered_at: none yet
            return {}
        target = f"{unit_for(study).target_field}_id"
        kinds = {c.name: kind_for(c) for c in criteria}
        by_name = {c.name: c for c in criteria}
        fields = sorted({f for kind in kinds.values() for f in kind.stored_fields()})
        values: dict[str, Any] = {}
        for row in Rating.objects.filter(assignment_id=slot.assignment_id, item_id=slot.item_id).values(
                target, "criterion__name", "rationale", *fields):
            kind = kinds.get(row["criterion__name"])
            if kind is not None:
                values.update(kind.form_values(self, field_name(row[target], row["criterion__name"], slot.response_order),
                                               row, by_name[row["criterion__name"]]))
                if row["rationale"]:
                    values[rationale_field(row[target], row["criterion__name"], slot.response_order)] = row["rationale"]
        return values

    def answers_simulate(self, *, study: Study, slot: AssignmentItem, quality: Mapping[tuple[int, str], float],
                         reference_quality: Mapping[str, float], rng: Any,
                         criteria: Sequence[Criterion]) -> dict[str, Any]:
        """The design's scale answers (``scale_simulate``) for scale criteria, each other kind's own
        (``JudgementKind.simulate``), and a short reason where a criterion asks for one."""
        scale = [c for c in criteria if kind_for(c).key == "scale"]
        answers = self.scale_simulate(study=study, slot=slot, quality=quality, reference_quality=reference_quality,
                                      rng=rng, criteria=scale) if scale else {}
        for c in criteria:
            if c not in scale:
                answers[c.name] = {t: kind_for(c).target_simulate(c, t, quality[(t, c.name)], rng)
                                   for t in slot.response_order}
            if c.rationale:
                answers[rationale_key(c.name)] = {t: "Simulated reason." for t in slot.response_order}
        return answers

    def scale_simulate(self, *, study: Study, slot: AssignmentItem, quality: Mapping[tuple[int, str], float],
                       reference_quality: Mapping[str, float], rng: Any,
                       criteria: Sequence[Criterion]) -> dict[str, Any]:
        """What a simulated rater answers on the design's scale (see ``StudyDesign.answers_simulate``)."""
        raise NotImplementedError

    def practice_values(self, *, study: Study, answers: Mapping[str, Any], order: Sequence[int],
                        criteria: Sequence[Criterion]) -> tuple[dict[tuple[str, int], Any], Errors]:
        """Each criterion's answers checked by its kind, then each as its kind's check value of the
        Rating fields it would be stored in (the same path as ``check_answers``), so a new kind's
        expected answers score in practice as they do on check items."""
        config = study.design_config
        errors: Errors = {}
        values: dict[tuple[str, int], Any] = {}
        for criterion in criteria:
            kind = kind_for(criterion)
            per_target = answers.get(criterion.name)
            if not isinstance(per_target, Mapping) or set(per_target) != set(order):
                errors[criterion.name] = "answer this question for every response"
                continue
            problems = kind.criterion_problems(self, config, criterion, per_target, order)
            if problems:
                errors.update(problems)
                continue
            for target_id, raw in per_target.items():
                values[(criterion.name, target_id)] = kind.check_value(self, kind.rating_fields(self, raw))
        return values, errors

    def check_answers(self, *, assignment: Assignment, item_ids: Sequence[int]) -> CheckAnswers:
        kinds = {c.name: kind_for(c) for c in assignment.study.criteria.all()}
        fields = sorted({f for kind in kinds.values() for f in kind.stored_fields()})
        answers: CheckAnswers = {}
        for row in Rating.objects.filter(assignment=assignment, item_id__in=list(item_ids)).values(
                "item_id", "criterion__name", "response_id", "conversation_id", *fields):
            kind = kinds.get(row["criterion__name"])
            if kind is not None:  # the target: a response, or the whole conversation in a dialogue-unit study
                target = row["response_id"] if row["response_id"] is not None else row["conversation_id"]
                answers.setdefault(row["item_id"], {})[(row["criterion__name"], target)] = kind.check_value(self, row)
        return answers
