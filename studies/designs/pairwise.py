"""Pairwise comparison (design ``pairwise``; A/B, as ACUTE-Eval and arena-style studies): an item
shows two responses to the same conversation; the rater picks the better one per criterion.

Configuration: ``allow_tie`` (default true), ``reason`` off|optional|required with
``reason_max_length`` characters, ``pairs_per_conversation`` (0 = every pair of systems) and
``schedule_seed`` (the schedule and the balanced sides: ``pairwise_schedule``).

Rater form: ``choice-<criterion>`` (left | right | tie) and ``reason-<criterion>`` (free text, per the
``reason`` mode); templates/raters/_pairwise.html with static/concord/rater_pairwise.js. A judgment is
a ``Comparison`` (left and right as this rater saw them), unique per (assignment, item, criterion).
Reads, the report and the export rows are in ``pairwise_report``.

An experiment that mixes a pairwise condition with others exports one file: the ratings columns and
then ``MIXED_FIELDS``; a judgment fills the columns it shares with a rating and its own, and leaves
value/rank/response empty (a choice between two responses is not a score of one).
"""
from __future__ import annotations

import random
import string
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Count, QuerySet
from django.utils import timezone
from django.utils.translation import gettext_noop

from studies.designs import pairwise_report as report
from studies.designs.base import StudyDesign
from studies.designs.common import CheckAnswers, Errors, ItemSpec, Section, int_field
from studies.designs.pairwise_schedule import pairwise_items_build, pairwise_orders
from studies.designs.rater_reads import item_response_texts
from studies.designs.units.base import StudyUnit
from studies.models import Comparison, Study
from studies.text_checks import text_problem

if TYPE_CHECKING:
    import pandas as pd

    from studies.models import Assignment, AssignmentItem, Criterion, StudyItem

REASON_MODES = ("off", "optional", "required")
CHOICE_PREFIX, REASON_PREFIX = "choice-", "reason-"
# The seed study's two criteria, asked as a comparison (ACUTE-Eval words its questions this way).
PAIRWISE_CRITERIA = (
    {"name": "readability", "question": "Which response is more readable?",
     "help_text": "Which is more fluent, grammatical and easy to understand, whatever the conversation?"},
    {"name": "coherence", "question": "Which response follows on better from the conversation so far?",
     "help_text": "Which stays on topic and makes more sense as the next turn?"},
)
MIXED_FIELDS = ("left_response", "right_response", "left_system", "right_system", "choice", "winner_system", "reason")
SHARED_FIELDS = ("experiment", "study", "criterion", "conversation", "rater", "platform", "seconds", "assignment_status",
                 "submitted_at", "excluded", "excluded_reason")


def reason_problem(config: Mapping[str, Any], reason: str) -> str | None:
    """Why a rater's reason does not fit the study's ``reason`` mode and length, or None."""
    mode, limit = config.get("reason", "optional"), config.get("reason_max_length", 300)
    if mode == "off":
        return "this study does not ask for reasons" if reason else None
    if mode == "required" and not reason:
        return "give a short reason for this choice"
    if len(reason) > limit:
        return f"keep the reason to {limit} characters (it has {len(reason)})"
    return text_problem(reason)


class Pairwise(StudyDesign):
    key = report.KEY
    explanation = gettext_noop("Pairwise comparison: raters see two responses to the same conversation and pick the better one "
                   "for each question (or say they are equally good, where ties are allowed).")
    defaults = {"allow_tie": True, "reason": "optional", "reason_max_length": 300, "pairs_per_conversation": 0,
                "schedule_seed": 0}
    template = "raters/_pairwise.html"
    whole_form = True
    script = "concord/rater_pairwise.js"
    form_fields = {
        "pairwise_allow_tie": forms.BooleanField(label="Raters may answer “about the same” (pairwise)", required=False,
                                                 initial=True),
        "pairwise_reason": forms.ChoiceField(label="Ask for a short reason per choice (pairwise)",
                                             choices=[("optional", "Optional"), ("required", "Required"), ("off", "Off")],
                                             initial="optional", required=False),
        "pairwise_pairs_per_conversation": forms.IntegerField(
            label="System pairs compared per conversation (pairwise)", min_value=0, max_value=45, initial=0,
            required=False, help_text="0: every pair of systems."),
    }
    item_shaping: ClassVar[tuple[str, ...]] = ("pairs_per_conversation",)
    unit_refusals = {
        # Comparisons store response ids (Comparison.left/right) and items are built from responses.
        "dialogue": "pairwise comparison is not offered for dialogue units yet: its choices name two responses, "
        "and a dialogue has none; compare two whole dialogues with the ACUTE-Eval design (acute), or use BWS with "
        "tuples of whole dialogues, Likert or RME",
    }
    field_prefixes = ("r", CHOICE_PREFIX, REASON_PREFIX)
    free_text_prefixes = (REASON_PREFIX,)
    compares_pairs = True
    screen_nouns = {"response": "pairs of responses"}
    live_icc = False
    live_icc_absent = ("a pairwise study has no ICCs (its live reliability is Krippendorff's α over the choices), "
                       "so an ICC target and a close rule would do nothing here")

    def config_problems(self, config: dict[str, Any], errors: Errors) -> None:
        if not isinstance(config.get("allow_tie"), bool):
            errors["design_config.allow_tie"] = f"must be true or false, got {config.get('allow_tie')!r}"
        if config.get("reason") not in REASON_MODES:
            errors["design_config.reason"] = f"must be one of {', '.join(REASON_MODES)}, got {config.get('reason')!r}"
        int_field(config, "reason_max_length", errors, low=1, high=2000)
        int_field(config, "pairs_per_conversation", errors, low=0, high=45)
        int_field(config, "schedule_seed", errors, low=0, high=2**31 - 1)

    def settings_summary(self, config: Mapping[str, Any]) -> str:
        return (f"raters pick the better of two responses{' or a tie' if config.get('allow_tie') else ''}; "
                f"reasons {config.get('reason')}")

    def config_from_form(self, data: Mapping[str, Any]) -> dict[str, Any]:
        return {"allow_tie": bool(data.get("pairwise_allow_tie")), "reason": data.get("pairwise_reason") or "optional",
                "pairs_per_conversation": data.get("pairwise_pairs_per_conversation") or 0}

    def form_initial(self, config: Mapping[str, Any]) -> dict[str, Any]:
        return {"pairwise_allow_tie": config.get("allow_tie"), "pairwise_reason": config.get("reason"),
                "pairwise_pairs_per_conversation": config.get("pairs_per_conversation")}

    def default_criteria(self, unit: StudyUnit) -> list[dict[str, str]]:
        return [dict(c) for c in PAIRWISE_CRITERIA]  # A/B: comparative wording

    # --- items ----------------------------------------------------------------------------------------

    def items_build(self, *, study: Study, spec: ItemSpec) -> int:
        """One item per (conversation, system pair), scheduled (``pairwise_schedule``)."""
        return pairwise_items_build(study=study, spec=spec)

    def publish_problems(self, study: Study) -> list[str]:
        problems = super().publish_problems(study)
        wrong = study.items.annotate(n=Count("item_responses")).exclude(n=2).count()
        if wrong:
            problems.append(f"{wrong} item(s) do not show exactly two responses to compare")
        return problems

    def assignment_orders(self, *, study: Study, chosen: Sequence[int], shown: Mapping[int, list[int]],
                          rng: random.Random) -> dict[int, list[int]]:
        """Sides balanced per rater and per item instead of a shuffle."""
        return pairwise_orders(study=study, chosen=chosen, shown=shown, rng=rng)

    def check_item_problem(self, config: Mapping[str, Any], n_responses: int) -> str | None:
        if n_responses != 2:
            return f"a pairwise study compares two responses per item, got {n_responses}"
        return None

    # --- the rater's answer ------------------------------------------------------------------------------

    def form_context(self, *, study: Study, item: StudyItem, order: Sequence[int], values: Mapping[str, Any],
                     errors: Mapping[str, str], criteria: Sequence[Criterion]) -> dict[str, Any]:
        """The two sides and one row per criterion (raters/_pairwise.html's ``pairwise``)."""
        texts = item_response_texts(item.pk, order)
        responses = [{"id": rid, "letter": string.ascii_uppercase[i], "text": texts[rid]} for i, rid in enumerate(order)]
        config = self.config(study)
        sides = [{**responses[0], "side": "left", "label": "A", "key": "a"},
                 {**responses[1], "side": "right", "label": "B", "key": "b"}] if len(responses) == 2 else []
        rows = []
        for criterion in criteria:
            choice_field, reason_field = CHOICE_PREFIX + criterion.name, REASON_PREFIX + criterion.name
            rows.append({
                "name": criterion.name, "question": criterion.question, "help": criterion.help_text,
                "choice_field": choice_field, "choice": values.get(choice_field, ""),
                "choice_error": errors.get(choice_field), "reason_field": reason_field,
                "reason": values.get(reason_field, ""), "reason_error": errors.get(reason_field),
            })
        return {"design_partial": self.template, "whole_form": True, "design_script": self.script,
                "unit_name": "Response", "responses": responses,
                "pairwise": {"sides": sides, "criteria": rows, "allow_tie": config["allow_tie"],
                             "reason": config["reason"], "reason_max_length": config["reason_max_length"]}}

    def answers_parse(self, post: Mapping[str, Any], *, study: Study, order: Sequence[int],
                      criteria: Sequence[Criterion]) -> tuple[dict[str, Any], Errors]:
        """The answers ({criterion: {"choice", "reason"}}) and the missing choices; everything else
        is checked when they are stored."""
        answers: dict[str, Any] = {}
        errors: Errors = {}
        for name in (c.name for c in criteria):
            choice = (post.get(CHOICE_PREFIX + name) or "").strip()
            if not choice:
                errors[CHOICE_PREFIX + name] = "pick the better response"
            answers[name] = {"choice": choice, "reason": post.get(REASON_PREFIX + name) or ""}
        return answers, errors

    def answers_store(self, *, slot: AssignmentItem, answers: Mapping[str, Any], criteria: Sequence[Criterion],
                      seconds: float | None) -> tuple[int, bool]:
        """Store one item's answers: per criterion {"choice": left | right | tie, "reason": text}.

        Checks every criterion is answered, a tie only where the study allows ties, and the reason
        against the study's ``reason`` mode and length; a problem is keyed ``choice-<criterion>`` or
        ``reason-<criterion>``. Left and right are the responses in the order this rater was shown
        (the slot's ``response_order``). The same answers twice store once (upsert on the unique
        (assignment, item, criterion)); changed answers replace the earlier ones."""
        assignment, study = slot.assignment, slot.assignment.study
        if len(slot.response_order) != 2:
            raise ValidationError({"item": "this item does not show two responses to compare"})
        config = study.design_config
        allowed = ("left", "right", "tie") if config.get("allow_tie", True) else ("left", "right")
        by_name = {c.name: c for c in criteria}
        errors: Errors = {}
        cleaned: dict[str, tuple[str, str]] = {}
        for name in answers:
            if name not in by_name:
                errors[f"choice-{name}"] = "unknown criterion"
        for name in by_name:
            answer = answers.get(name)
            if not isinstance(answer, Mapping) or not answer.get("choice"):
                errors[f"choice-{name}"] = "pick the better response" + (" (or a tie)" if "tie" in allowed else "")
                continue
            choice, reason = answer.get("choice"), answer.get("reason") or ""
            if choice not in allowed:
                errors[f"choice-{name}"] = (f"must be one of {', '.join(allowed)}, got {str(choice)[:20]!r}"
                                            + ("" if "tie" in allowed else " (this study allows no ties)"))
                continue
            if not isinstance(reason, str):
                errors[f"reason-{name}"] = "must be text"
                continue
            reason = reason.strip()
            if problem := reason_problem(config, reason):
                errors[f"reason-{name}"] = problem
                continue
            cleaned[name] = (str(choice), reason)
        if errors:
            raise ValidationError(errors)
        sides = self.comparison_sides(slot)
        existing = {c.criterion_id: (c.choice, c.reason) for c in
                    Comparison.objects.filter(assignment=assignment, item_id=slot.item_id)} if slot.answered_at else {}
        changed = [name for name, given in cleaned.items() if existing.get(by_name[name].pk) != given]
        if changed:
            now = timezone.now()
            Comparison.objects.bulk_create(
                [Comparison(assignment=assignment, item_id=slot.item_id, criterion=by_name[name], **sides,
                            choice=cleaned[name][0], reason=cleaned[name][1], seconds=seconds,
                            updated_at=now) for name in changed],
                update_conflicts=True, unique_fields=["assignment", "item", "criterion"],
                update_fields=["choice", "reason", "seconds", "updated_at"])
        return len(cleaned), bool(changed)

    def comparison_sides(self, slot: AssignmentItem) -> dict[str, Any]:
        """The ``Comparison`` fields naming what was shown left and right (the slot's order)."""
        left, right = slot.response_order
        return {"left_id": left, "right_id": right}

    def stored_values(self, slot: AssignmentItem, study: Study, criteria: Sequence[Criterion]) -> dict[str, str]:
        if slot.answered_at is None:
            return {}
        values = {}
        for name, choice, reason in Comparison.objects.filter(
                assignment_id=slot.assignment_id, item_id=slot.item_id).values_list("criterion__name", "choice",
                                                                                    "reason"):
            values[CHOICE_PREFIX + name], values[REASON_PREFIX + name] = choice, reason
        return values

    def answers_simulate(self, *, study: Study, slot: AssignmentItem, quality: Mapping[tuple[int, str], float],
                         reference_quality: Mapping[str, float], rng: Any,
                         criteria: Sequence[Criterion]) -> dict[str, Any]:
        """The side of higher quality (a tie within 0.1 where ties are allowed), with a reason where
        the study asks for one."""
        config = self.config(study)
        left, right = slot.response_order
        answers = {}
        for c in criteria:
            gap = quality[(left, c.name)] - quality[(right, c.name)]
            choice = "tie" if config["allow_tie"] and abs(gap) < 0.1 else "left" if gap > 0 else "right"
            reason = "" if config["reason"] == "off" else "It reads more naturally."
            answers[c.name] = {"choice": choice, "reason": reason[:config["reason_max_length"]]}
        return answers

    def practice_values(self, *, study: Study, answers: Mapping[str, Any], order: Sequence[int],
                        criteria: Sequence[Criterion]) -> tuple[dict[tuple[str, int], Any], Errors]:
        """The choices as ``check_answers`` scores them (1 chosen, 0 other, ½ each for a tie), with
        left and right the practice item's responses in the order shown."""
        allowed = ("left", "right", "tie") if self.config(study)["allow_tie"] else ("left", "right")
        value = {"left": (1.0, 0.0), "right": (0.0, 1.0), "tie": (0.5, 0.5)}
        errors: Errors = {}
        values: dict[tuple[str, int], Any] = {}
        if len(order) != 2:
            return values, {"item": "this item does not show two responses to compare"}
        for criterion in criteria:
            choice = str((answers.get(criterion.name) or {}).get("choice") or "")
            if choice not in allowed:
                errors[CHOICE_PREFIX + criterion.name] = "pick the better response" + (
                    " (or a tie)" if "tie" in allowed else "")
                continue
            values[(criterion.name, order[0])], values[(criterion.name, order[1])] = value[choice]
        return values, errors

    def check_answers(self, *, assignment: Assignment, item_ids: Sequence[int]) -> CheckAnswers:
        """Choices as values, so "greater" rules apply: 1 for the chosen response, 0 for the other,
        ½ each for a tie; a rule "response 1 greater than response 2" passes exactly when the rater
        chose response 1."""
        value = {"left": (1.0, 0.0), "right": (0.0, 1.0), "tie": (0.5, 0.5)}
        answers: CheckAnswers = {}
        for item_id, name, left, right, choice in Comparison.objects.filter(
                assignment=assignment, item_id__in=list(item_ids)).values_list(
                "item_id", "criterion__name", "left_id", "right_id", "choice"):
            given = answers.setdefault(item_id, {})
            given[(name, left)], given[(name, right)] = value[choice]
        return answers

    # --- reports, the live panel, exports -------------------------------------------------------------

    def judgments_per_study(self, study_ids: Sequence[int]) -> dict[int, int]:
        """Study id -> A/B judgments stored (one per pair × criterion × rater; check pairs are not judgments of
        the study, as in the export): the study page counts them."""
        return dict(Comparison.objects.filter(assignment__study_id__in=list(study_ids), item__check_kind="")
                    .values("assignment__study_id").annotate(n=Count("id")).values_list("assignment__study_id", "n"))

    def judgments_stamp(self, study_ids: Sequence[int]) -> tuple:
        from django.db.models import Max

        return tuple(Comparison.objects.filter(assignment__study_id__in=list(study_ids)).aggregate(
            n=Count("id"), last=Max("updated_at")).values())

    report_template: ClassVar[str] = "reports/_pairwise.html"

    def pairs_frame(self, studies: QuerySet[Study]) -> pd.DataFrame:
        """The judgments of this design's studies in ``studies`` as ``studies.analysis.pairwise`` reads them
        (``left``/``right``: the targets compared, what the study's unit rates: responses here), check
        items left out: what human-vs-metric compares a metric's preference with."""
        return report.comparisons_frame(self.studies_of(studies))

    def studies_report(self, studies: QuerySet[Study], *, exclude_flagged: bool) -> list[dict[str, Any]]:
        """Per study of this design in ``studies``: win rates, Bradley–Terry, position bias (the report
        section and its figures read it; a design built on this one, ACUTE-Eval, gives its own)."""
        return report.pairwise_report(studies, exclude_flagged=exclude_flagged)

    def report_sections(self, studies: QuerySet[Study], *, exclude_flagged: bool,
                        excluded_raters: Iterable[Any] = ()) -> list[Section]:
        return [Section(self.key, self.report_template, self.studies_report(studies, exclude_flagged=exclude_flagged))]

    def report_replaces_icc(self) -> bool:
        return True  # a choice is not a score: a report of only A/B studies has no ICC tables

    def report_sheets(self, section: Section) -> dict[str, pd.DataFrame]:
        return report.pairwise_sheets_of(section.data)

    def report_figure(self, studies: QuerySet[Study], name: str, *, exclude_flagged: bool) -> str | None:
        """``<study pk>-<criterion>``: the Bradley–Terry strengths of a study in ``studies``."""
        from studies.designs.pairwise_plots import bt_strengths

        pk, _, criterion = name.partition("-")
        study = next((s for s in self.studies_report(studies, exclude_flagged=exclude_flagged)
                      if str(s["pk"]) == pk), None)
        if study is None:
            return None
        entry = next((c for c in study["criteria"] if c["criterion"] == criterion), None)
        return bt_strengths(entry, criterion)

    def live_panels(self, study: Study) -> list[Section]:
        return [Section(self.key, "studies/_live_pairwise.html", report.live_agreement(study))]

    def export_fields(self) -> tuple[str, ...] | None:
        return report.EXPORT_FIELDS

    def export_rows(self, studies: QuerySet[Study], *, raw_ids: bool) -> Iterator[dict[str, Any]]:
        return report.comparisons_export_rows(studies, raw_ids=raw_ids)

    def export_sheet_name(self) -> str:
        return "comparisons"

    def mixed_export_fields(self) -> tuple[str, ...]:
        return MIXED_FIELDS

    def mixed_export_rows(self, studies: QuerySet[Study], fields: tuple[str, ...], *,
                          raw_ids: bool) -> Iterator[dict[str, Any]]:
        for row in report.comparisons_export_rows(self.studies_of(studies), raw_ids=raw_ids):
            entry: dict[str, Any] = dict.fromkeys(fields)
            entry.update({k: row[k] for k in (*SHARED_FIELDS, *MIXED_FIELDS)}, design=self.key)
            yield entry


PAIRWISE = Pairwise()
