"""Best-worst scaling with tuples, for many items (design ``bws_tuples``; Kiritchenko & Mohammad
2016, 2017; STATISTICS.md §2).

Configuration: ``tuple_size`` (3-5, default 4); about ``factor``·N tuples (default 2), each response
in factor·tuple_size of them; ``tries`` shuffles kept by the evenness of pair co-occurrence; ``seed``
makes the tuples reproducible. The rater picks the best and the worst member per criterion.

The unit judged is a single response in its own context. At item build the chosen responses are
put into tuples by ``studies.analysis.bws.balanced_tuples``: every response in exactly
factor·tuple_size tuples, pair co-occurrence as even as possible (best of ``tries`` seeded draws by
the SD of pair counts).

Storage, and why:
- a tuple is a ``StudyItem`` with no conversation: its members come from different conversations;
  the members are its ``StudyItemResponse`` rows (``position`` = order in the tuple), and each member
  is shown with ``member.conversation.turns`` as its context. The rater's shuffle of the members is
  ``AssignmentItem.response_order`` as in every design.
- a judgment is a ``BestWorstChoice`` (assignment, tuple, criterion, best, worst), unique per
  (assignment, item, criterion): a double submit upserts the same row. Not Rating rows: one
  response is in several tuples and one rater may meet it twice, which Rating's unique
  (assignment, response, criterion) forbids.

The reads, scores and split-half reliability are in ``bws_tuples_report``. Rater form:
templates/raters/_bws_tuple.html with static/concord/rater_bws_tuples.js.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.db.models import Count, QuerySet
from django.utils.translation import gettext

from studies.designs import bws_tuples_report as report
from studies.designs.base import StudyDesign
from studies.designs.bws import TUPLE_SIZE
from studies.designs.common import (
    CheckAnswers,
    Errors,
    ItemSpec,
    Section,
    int_field,
    letter,
    target_key,
    target_of,
    tuple_field,
)
from studies.designs.units.base import StudyUnit
from studies.designs.units.response import RESPONSE
from studies.designs.units.sides import context_sides
from studies.models import BestWorstChoice, Response, Study, StudyItem, StudyItemResponse

if TYPE_CHECKING:
    import pandas as pd

    from studies.models import Assignment, AssignmentItem, Criterion

KINDS = ("best", "worst")


def tuple_items_create(*, study: Study, units: Sequence[int]) -> int:
    """Replace the study's (non-check) items by balanced tuples of the responses ``units``; the
    caller holds the study row lock inside its transaction and has checked the study is a draft
    without raters. Deterministic for the same responses and ``design_config`` (its ``seed``).
    Returns the number of tuples."""
    from studies.analysis import bws

    config = study.design_config
    size = config["tuple_size"]
    responses = sorted(set(units))
    if len(responses) < size:
        raise ValidationError({"systems": f"tuples of {size} need at least {size} responses; "
                                          f"these choices give {len(responses)}"})
    tuples = bws.balanced_tuples(len(responses), size=size, factor=config["factor"], tries=config["tries"],
                                 seed=config["seed"])
    study.items.filter(check_kind="").delete()  # check items (studies.checks) stay
    items = StudyItem.objects.bulk_create([StudyItem(study=study, conversation=None, position=i)
                                           for i in range(len(tuples))])
    StudyItemResponse.objects.bulk_create(
        [StudyItemResponse(item=item, response_id=responses[m], position=p)
         for item, members in zip(items, tuples.tolist(), strict=True) for p, m in enumerate(members)],
        batch_size=2000)
    return len(items)


class BWSTuples(StudyDesign):
    key = report.KEY
    explanation = ("Best-worst scaling with tuples: each screen shows a few responses (usually 4), each with its own "
                   "conversation; raters pick the best and the worst one for each question.")
    defaults = {"tuple_size": 4, "factor": 2, "tries": 20, "seed": 0}
    template = "raters/_bws_tuple.html"
    whole_form = True
    script = "concord/rater_bws_tuples.js"
    form_fields = {"bws_tuple_size": TUPLE_SIZE}  # the field BWS declares: one study form field for both
    item_shaping = ("tuple_size", "factor", "tries", "seed")
    unit_refusals = {
        "dialogue": "best-worst tuples are not offered for dialogue units: they pick among single responses; "
        "use BWS, which ranks tuples of whole dialogues",
    }
    normalisation = report.NORMALISATION
    # A rater's mean of +1 (best), −1 (worst), 0 over their appearances of a response: interval.
    alpha_level = "interval"
    alpha_values = "mean of +1 best, −1 worst, 0 neither"
    report_note = ("BWS tuples: in these tables a rater's score of a response is the mean of +1 (best), "
                   "−1 (worst), 0 (neither) over their appearances of it; the counting scores and "
                   "split-half reliability are in their own section.")
    screen_nouns = {"response": "sets of responses"}
    live_icc = False
    live_icc_absent = ("a best-worst tuple study has no live ICCs (its live reliability is split-half), "
                       "so an ICC target and a close rule would do nothing here")

    def config_problems(self, config: dict[str, Any], errors: Errors) -> None:
        int_field(config, "tuple_size", errors, low=3, high=5)
        int_field(config, "factor", errors, low=1, high=10)
        int_field(config, "tries", errors, low=1, high=200)
        int_field(config, "seed", errors, low=0, high=2**31 - 1)

    def describe(self, config: Mapping[str, Any], *, anchors: tuple[float, float] | None = None,
                 unit: StudyUnit | None = None) -> str:
        return gettext("Each screen shows a set of %(size)s responses, each with its own conversation. "
                       "For each question you pick the best and the worst response of the set.") % {
            "size": config["tuple_size"]}

    def settings_summary(self, config: Mapping[str, Any]) -> str:
        return f"raters rank {config['tuple_size']} responses per item"

    def config_from_form(self, data: Mapping[str, Any]) -> dict[str, Any]:
        return {"tuple_size": data.get("bws_tuple_size") or 4}

    def form_initial(self, config: Mapping[str, Any]) -> dict[str, Any]:
        return {"bws_tuple_size": config.get("tuple_size")}

    # --- items ----------------------------------------------------------------------------------------

    def items_build(self, *, study: Study, spec: ItemSpec) -> int:
        """Single responses (every judged system's and the reference's, from the conversations the
        response unit finds usable) in generated tuples."""
        _, usable = RESPONSE.usable_conversations(study=study, spec=spec, design=self)
        units = [r for _, e in usable for r in [*e["judged"].values(), *([e["reference"]] if e["reference"] else [])]]
        return tuple_items_create(study=study, units=units)

    def publish_problems(self, study: Study) -> list[str]:
        size = study.design_config["tuple_size"]
        problems = super().publish_problems(study)
        wrong = study.items.filter(check_kind="").annotate(n=Count("item_responses")).exclude(n=size).count()
        if wrong:
            problems.append(f"{wrong} tuple(s) do not show exactly {size} responses")
        if study.items.exclude(check_kind="").exists():
            problems.append(f"{self.checks_problem()} (remove them)")
        return problems

    def checks_problem(self) -> str | None:
        return "attention-check items are not available for best-worst tuples yet"

    # --- the rater's answer ------------------------------------------------------------------------------

    def form_context(self, *, study: Study, item: StudyItem, order: Sequence[int], values: Mapping[str, Any],
                     errors: Mapping[str, str], criteria: Sequence[Criterion]) -> dict[str, Any]:
        """The members (letter, text, own context) in the rater's order and, per criterion, the best
        and worst fields with the current picks (raters/_bws_tuple.html)."""
        members = {r.pk: r for r in Response.objects.filter(pk__in=list(order)).select_related("conversation")}
        shown = [{"id": rid, "letter": letter(i), "number": i + 1, "text": members[rid].text,
                  "turns": context_sides(members[rid].conversation.turns)} for i, rid in enumerate(order)]
        rows = []
        for criterion in criteria:
            best_field, worst_field = tuple_field("best", criterion.name), tuple_field("worst", criterion.name)
            best, worst = str(values.get(best_field, "")), str(values.get(worst_field, ""))
            rows.append({"name": criterion.name, "question": criterion.question, "help": criterion.help_text,
                         "error": errors.get(criterion.name), "best_field": best_field, "worst_field": worst_field,
                         "best_error": errors.get(best_field), "worst_error": errors.get(worst_field),
                         "options": [{**m, "best": best == m["letter"], "worst": worst == m["letter"]}
                                     for m in shown]})
        return {"design_partial": self.template, "whole_form": True, "design_script": self.script,
                "unit_name": "Response", "tuple_members": shown, "tuple_criteria": rows}

    def answers_parse(self, post: Mapping[str, Any], *, study: Study, order: Sequence[int],
                      criteria: Sequence[Criterion]) -> tuple[dict[str, Any], Errors]:
        """The best and worst picks ({criterion: {"best": id, "worst": id}}) and, per field, what is
        wrong (missing, not a shown response, the same response twice)."""
        answers: dict[str, Any] = {}
        errors: Errors = {}
        for name in (c.name for c in criteria):
            picks: dict[str, int] = {}
            for kind in KINDS:
                field = tuple_field(kind, name)
                raw = str(post.get(field) or "").strip()
                if not raw:
                    errors[field] = f"pick the {kind} response"
                elif (target := target_of(order, raw)) is None:
                    errors[field] = f"“{raw[:12]}” is not one of the responses shown"
                else:
                    picks[kind] = target
            if len(picks) == 2 and picks["best"] == picks["worst"]:
                errors[name] = "the best and the worst response must be different"
            answers[name] = picks
        return answers, errors

    def answers_store(self, *, slot: AssignmentItem, answers: Mapping[str, Any], criteria: Sequence[Criterion],
                      seconds: float | None) -> tuple[int, bool]:
        """Store one tuple's best and worst picks per criterion. Every criterion needs both, each a
        member shown on this slot, best ≠ worst; a problem is keyed by the form field
        (``tuple_field``) or the criterion. The write is an upsert on the unique (assignment, item,
        criterion): a double submit stores once, a changed answer replaces the earlier one."""
        current = slot.assignment
        by_name = {c.name: c for c in criteria}
        shown = set(slot.response_order)
        errors: Errors = {}
        for name in by_name:
            if name not in answers:
                errors[name] = gettext("pick the best and the worst response for this question")
        for name, picks in answers.items():
            if name not in by_name:
                errors[name] = "unknown criterion"
                continue
            if not isinstance(picks, Mapping):
                errors[name] = "give the best and the worst response id"
                continue
            for kind in KINDS:
                value = picks.get(kind)
                if isinstance(value, bool) or not isinstance(value, int) or value not in shown:
                    errors[tuple_field(kind, name)] = f"pick the {kind} among the responses shown, got {value!r}"
            if picks.get("best") is not None and picks.get("best") == picks.get("worst"):
                errors[name] = "the best and the worst response must be different"
        if errors:
            raise ValidationError(errors)
        BestWorstChoice.objects.bulk_create(
            [BestWorstChoice(assignment=current, item_id=slot.item_id, criterion=by_name[name], best_id=picks["best"],
                             worst_id=picks["worst"], seconds=seconds) for name, picks in answers.items()],
            update_conflicts=True, unique_fields=["assignment", "item", "criterion"],
            update_fields=["best", "worst", "seconds", "updated_at"])
        return len(answers), True

    def stored_values(self, slot: AssignmentItem, study: Study, criteria: Sequence[Criterion]) -> dict[str, str]:
        if slot.answered_at is None:
            return {}
        values = {}
        for name, best, worst in BestWorstChoice.objects.filter(
                assignment_id=slot.assignment_id, item_id=slot.item_id).values_list("criterion__name", "best_id",
                                                                                    "worst_id"):
            # picks are stored only among the members shown (answers_store): the letters the rater saw
            values[tuple_field("best", name)] = target_key(slot.response_order, best)
            values[tuple_field("worst", name)] = target_key(slot.response_order, worst)
        return values

    def answers_simulate(self, *, study: Study, slot: AssignmentItem, quality: Mapping[tuple[int, str], float],
                         reference_quality: Mapping[str, float], rng: Any,
                         criteria: Sequence[Criterion]) -> dict[str, Any]:
        """The member of highest quality as best, of lowest as worst."""
        answers = {}
        for c in criteria:
            ranked = sorted(slot.response_order, key=lambda r: quality[(r, c.name)], reverse=True)
            answers[c.name] = {"best": ranked[0], "worst": ranked[-1]}
        return answers

    def check_answers(self, *, assignment: Assignment, item_ids: Sequence[int]) -> CheckAnswers:
        return {}  # check items are refused at publish (publish_problems)

    # --- reports, the live panel, exports -------------------------------------------------------------

    def judgments_per_study(self, study_ids: Sequence[int]) -> dict[int, int]:
        return report.choices_per_study(study_ids)

    def judgments_stamp(self, study_ids: Sequence[int]) -> tuple:
        return report.choices_stamp(study_ids)

    def report_frame(self, studies: QuerySet[Study], *, keep: int | None = None) -> pd.DataFrame | None:
        return report.report_frame(studies, keep=keep)

    def report_sections(self, studies: QuerySet[Study], *, exclude_flagged: bool,
                        excluded_raters: Iterable[Any] = ()) -> list[Section]:
        return [Section(self.key, "reports/_bws_tuples.html",
                        report.tuples_report(studies, exclude_raters=excluded_raters))]

    def report_sheets(self, section: Section) -> dict[str, pd.DataFrame]:
        return report.report_sheets(section.data)

    def live_panels(self, study: Study) -> list[Section]:
        return [Section("split_half", "studies/_live_bws_tuples.html", report.live_split_half(study))]

    def export_rows(self, studies: QuerySet[Study], *, raw_ids: bool) -> Iterator[dict[str, Any]]:
        return report.export_rows(studies, raw_ids=raw_ids)


BWS_TUPLES = BWSTuples()
