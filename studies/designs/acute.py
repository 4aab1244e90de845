"""ACUTE-Eval (design ``acute``; Li, Weston and Roller 2019): a rater reads two whole conversations side
by side, one speaker marked in each, and says which of the two marked speakers is better on each
question. The pairwise design (``studies.designs.pairwise``) with conversations instead of responses:
the same choices, reasons, balanced sides, check scoring and analysis; it runs on the dialogue unit.

Items (``acute_schedule``): pairs of conversations of two different systems (``metadata.system``:
imported, a chat study's transcripts, or self-chats), balanced over the system pairs, each side with
its judged speaker (``StudyItemConversation.speaker``). The rater sees the two conversations side by
side (stacked on a phone), the judged speaker's turns marked and named "Speaker 1" / "Speaker 2"
(never by system). A judgment is a ``Comparison`` with ``left_conversation``/``right_conversation``
and the judged speakers, as this rater saw them.

Configuration: ``allow_tie`` (default false: the paper forces a choice), ``reason``
off|optional|required (default required: the paper asks for a justification) with
``reason_max_length``, ``pairs_per_system_pair`` (0: the smaller system's count), ``judged_speaker``
(a speaker name to judge where a conversation has it) and ``schedule_seed``.
"""
from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from django import forms
from django.db.models import Count, QuerySet
from django.utils.translation import gettext_noop

from studies.designs import acute_report as report
from studies.designs.acute_schedule import acute_items_build, conversation_systems, item_speakers, judged_speaker
from studies.designs.common import CheckAnswers, Errors, ItemSpec, Section, int_field
from studies.designs.pairwise import CHOICE_PREFIX, REASON_MODES, REASON_PREFIX, SHARED_FIELDS, Pairwise
from studies.designs.pairwise_schedule import pairwise_orders
from studies.designs.units.base import StudyUnit
from studies.models import Comparison, Conversation, Study

if TYPE_CHECKING:
    import pandas as pd

    from studies.models import Assignment, AssignmentItem, Criterion, StudyItem

# The paper's four questions (Li, Weston and Roller 2019, Table 1), in its wording.
ACUTE_CRITERIA = (
    {"name": "engagingness", "question": "Who would you prefer to talk to for a long conversation?",
     "help_text": "Judge only the marked speaker in each conversation."},
    {"name": "interestingness",
     "question": "If you had to say one of these speakers is interesting and one is boring, who would you say is "
                 "more interesting?",
     "help_text": "Judge only the marked speaker in each conversation."},
    {"name": "humanness", "question": "Which speaker sounds more human?",
     "help_text": "Judge only the marked speaker in each conversation."},
    {"name": "knowledgeability",
     "question": "If you had to say that one speaker is more knowledgeable and one is more ignorant, who is more "
                 "knowledgeable?",
     "help_text": "Judge only the marked speaker in each conversation."},
)
MIXED_FIELDS = ("left_conversation", "right_conversation", "left_speaker", "right_speaker", "left_system",
                "right_system", "choice", "winner_system", "reason")
SPEAKER_LABELS = ("Speaker 1", "Speaker 2")


class Acute(Pairwise):
    key = report.KEY
    explanation = gettext_noop("Whole-conversation comparison (ACUTE-Eval): raters read two whole conversations side by side "
                   "and say which marked speaker is better on each question.")
    defaults = {"allow_tie": False, "reason": "required", "reason_max_length": 300, "pairs_per_system_pair": 0,
                "judged_speaker": "", "schedule_seed": 0}
    template = "raters/_acute.html"
    form_fields = {
        "acute_allow_tie": forms.BooleanField(label="Raters may answer “about the same” (ACUTE-Eval)", required=False,
                                              initial=False),
        "acute_reason": forms.ChoiceField(label="Ask for a short reason per choice (ACUTE-Eval)",
                                          choices=[("required", "Required"), ("optional", "Optional"), ("off", "Off")],
                                          initial="required", required=False),
        "acute_pairs_per_system_pair": forms.IntegerField(
            label="Conversation pairs per system pair (ACUTE-Eval)", min_value=0, max_value=10000, initial=0,
            required=False, help_text="0: as many as the smaller system has conversations."),
        "acute_judged_speaker": forms.CharField(
            label="Speaker to judge (ACUTE-Eval)", max_length=100, required=False,
            help_text="Blank: the system's speaker (a self-chat names its bot)."),
    }
    item_shaping: ClassVar[tuple[str, ...]] = ("pairs_per_system_pair", "judged_speaker", "schedule_seed")
    unit_refusals = {
        "response": "ACUTE-Eval compares two whole conversations: use the dialogue unit (to compare two responses "
                    "to one conversation, use the pairwise design)",
    }
    collected_refusal = ("ACUTE-Eval compares conversations already made, not chats its raters have: build its items "
                         "on the dialogue unit from a chat study's transcripts or from self-chats")
    screen_nouns = {"dialogue": "pairs of conversations"}

    def unit_problem(self, unit: StudyUnit) -> str | None:
        """The response level, and a unit whose raters make the dialogues (a chat), are refused."""
        return self.collected_refusal if unit.collects_dialogues else super().unit_problem(unit)

    def config_problems(self, config: dict[str, Any], errors: Errors) -> None:
        if not isinstance(config.get("allow_tie"), bool):
            errors["design_config.allow_tie"] = f"must be true or false, got {config.get('allow_tie')!r}"
        if config.get("reason") not in REASON_MODES:
            errors["design_config.reason"] = f"must be one of {', '.join(REASON_MODES)}, got {config.get('reason')!r}"
        int_field(config, "reason_max_length", errors, low=1, high=2000)
        int_field(config, "pairs_per_system_pair", errors, low=0, high=10000)
        int_field(config, "schedule_seed", errors, low=0, high=2**31 - 1)
        speaker = config.get("judged_speaker")
        if not isinstance(speaker, str) or len(speaker) > 100:
            errors["design_config.judged_speaker"] = "must be a speaker name of at most 100 characters"

    def settings_summary(self, config: Mapping[str, Any]) -> str:
        return (f"raters pick the better of two speakers in whole conversations{' or a tie' if config.get('allow_tie') else ''}; "
                f"reasons {config.get('reason')}")

    def config_from_form(self, data: Mapping[str, Any]) -> dict[str, Any]:
        return {"allow_tie": bool(data.get("acute_allow_tie")), "reason": data.get("acute_reason") or "required",
                "pairs_per_system_pair": data.get("acute_pairs_per_system_pair") or 0,
                "judged_speaker": (data.get("acute_judged_speaker") or "").strip()}

    def form_initial(self, config: Mapping[str, Any]) -> dict[str, Any]:
        return {"acute_allow_tie": config.get("allow_tie"), "acute_reason": config.get("reason"),
                "acute_pairs_per_system_pair": config.get("pairs_per_system_pair"),
                "acute_judged_speaker": config.get("judged_speaker")}

    def default_criteria(self, unit: StudyUnit) -> list[dict[str, str]]:
        return [dict(c) for c in ACUTE_CRITERIA]

    # --- items ----------------------------------------------------------------------------------------

    def items_build(self, *, study: Study, spec: ItemSpec) -> int:
        return acute_items_build(study=study, spec=spec)

    def publish_problems(self, study: Study) -> list[str]:
        problems = super(Pairwise, self).publish_problems(study)
        wrong = study.items.filter(check_kind="").annotate(n=Count("item_conversations")).exclude(n=2).count()
        if wrong:
            problems.append(f"{wrong} item(s) do not show exactly two conversations to compare")
        return problems

    def assignment_orders(self, *, study: Study, chosen: Sequence[int], shown: Mapping[int, list[int]],
                          rng: random.Random) -> dict[int, list[int]]:
        """Sides balanced per rater and per item by the conversations' systems (the order is recorded)."""
        systems = conversation_systems([c for i in chosen for c in shown.get(i, ())])
        return pairwise_orders(study=study, chosen=chosen, shown=shown, rng=rng, system_of=systems)

    # A check pair (the paper's quality control): two conversations written for it, one known to be
    # better (e.g. one side degenerate), authored through studies.authoring.checks and scored like any
    # pairwise check; its rules number the two conversations ({"greater": 1, "than": 2}).
    check_conversations: ClassVar[int] = 2

    def check_item_problem(self, config: Mapping[str, Any], n_responses: int) -> str | None:
        if n_responses != 2:
            return f"an ACUTE-Eval check item compares two conversations, got {n_responses}"
        return None

    def check_speaker(self, config: Mapping[str, Any], turns: Sequence[Mapping[str, Any]]) -> str:
        """As for the items: the study's ``judged_speaker`` where the conversation has it, else the
        system's speaker (``acute_schedule.judged_speaker``)."""
        return judged_speaker(turns, None, str(config.get("judged_speaker") or ""))

    # --- the rater's answer ------------------------------------------------------------------------------

    def form_context(self, *, study: Study, item: StudyItem, order: Sequence[int], values: Mapping[str, Any],
                     errors: Mapping[str, str], criteria: Sequence[Criterion]) -> dict[str, Any]:
        """The two conversations in the rater's order, the judged speaker's turns marked and named
        "Speaker 1" / "Speaker 2", the other speakers "Partner" (no system shows through)."""
        context = super().form_context(study=study, item=item, order=[], values=values, errors=errors,
                                       criteria=criteria)
        turns = dict(Conversation.objects.filter(pk__in=list(order)).values_list("pk", "turns"))
        speakers = item_speakers(item.pk)
        sides = []
        for i, cid in enumerate(order):
            judged, label = speakers.get(cid, ""), SPEAKER_LABELS[i] if i < 2 else f"Speaker {i + 1}"
            shown = [{"text": t.get("text", ""), "judged": str(t.get("speaker", "")) == judged,
                      "speaker": label if str(t.get("speaker", "")) == judged else "Partner"}
                     for t in (turns.get(cid) or [])]
            sides.append({"id": cid, "side": ("left", "right")[i] if i < 2 else str(i), "label": label,
                          "key": "ab"[i] if i < 2 else "", "turns": shown})
        context["pairwise"]["sides"] = sides
        # The page shows only the two sides: not the item's own conversation as a context above them
        # (it is the canonical first, so it would tell which side is which system).
        context.update(unit_name="Conversation", responses=[], turns=[])
        return context

    def comparison_sides(self, slot: AssignmentItem) -> dict[str, Any]:
        """Both conversations as shown and the speaker judged in each."""
        left, right = slot.response_order
        speakers = item_speakers(slot.item_id)
        return {"left_conversation_id": left, "right_conversation_id": right,
                "left_speaker": speakers.get(left, ""), "right_speaker": speakers.get(right, "")}

    def check_answers(self, *, assignment: Assignment, item_ids: Sequence[int]) -> CheckAnswers:
        """As the pairwise design's, with conversations: 1 for the chosen one, 0 for the other, ½ each
        for a tie."""
        value = {"left": (1.0, 0.0), "right": (0.0, 1.0), "tie": (0.5, 0.5)}
        answers: CheckAnswers = {}
        for item_id, name, left, right, choice in Comparison.objects.filter(
                assignment=assignment, item_id__in=list(item_ids)).values_list(
                "item_id", "criterion__name", "left_conversation_id", "right_conversation_id", "choice"):
            given = answers.setdefault(item_id, {})
            given[(name, left)], given[(name, right)] = value[choice]
        return answers

    # --- reports, the live panel, exports -------------------------------------------------------------

    report_template: ClassVar[str] = "reports/_acute.html"

    def pairs_frame(self, studies: QuerySet[Study]) -> pd.DataFrame:
        """As the pairwise design's, ``left``/``right`` the two conversations (check pairs left out)."""
        return report.comparisons_frame(self.studies_of(studies))

    def studies_report(self, studies: QuerySet[Study], *, exclude_flagged: bool) -> list[dict[str, Any]]:
        """The pairwise analysis with the paper's significance marks (``acute_report``); the report section
        and the Bradley–Terry figures are the pairwise design's, reading this."""
        return report.acute_report(studies, exclude_flagged=exclude_flagged)

    def report_sheets(self, section: Section) -> dict[str, pd.DataFrame]:
        from studies.designs.pairwise_report import pairwise_sheets_of

        return {name.replace("Pairwise", "ACUTE-Eval"): sheet for name, sheet in pairwise_sheets_of(section.data).items()}

    def live_panels(self, study: Study) -> list[Section]:
        return [Section(self.key, "studies/_live_pairwise.html", report.live_agreement(study))]

    def export_fields(self) -> tuple[str, ...] | None:
        return report.EXPORT_FIELDS

    def export_rows(self, studies: QuerySet[Study], *, raw_ids: bool) -> Iterator[dict[str, Any]]:
        return report.export_rows(studies, raw_ids=raw_ids)

    def mixed_export_fields(self) -> tuple[str, ...]:
        return MIXED_FIELDS

    def mixed_export_rows(self, studies: QuerySet[Study], fields: tuple[str, ...], *,
                          raw_ids: bool) -> Iterator[dict[str, Any]]:
        for row in report.export_rows(self.studies_of(studies), raw_ids=raw_ids, with_checks=False):
            entry: dict[str, Any] = dict.fromkeys(fields)
            entry.update({k: row.get(k) for k in (*SHARED_FIELDS, *MIXED_FIELDS)}, design=self.key)
            yield entry


ACUTE = Acute()

__all__ = ["ACUTE", "ACUTE_CRITERIA", "CHOICE_PREFIX", "REASON_PREFIX"]
