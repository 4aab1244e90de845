"""The chat unit (``Study.unit == "chat"``): the rater first chats with a system (or with two
side by side), then rates the whole conversation they had.

It judges at the dialogue level, so the designs that run on whole dialogues run on chats too: Likert on
one conversation, or BWS with ``tuple_size`` 2 ranking the two conversations of a side-by-side chat (a
pairwise chat comparison). An anchored design (RME) would need one fixed anchor dialogue, which a chat
does not have; it is refused with that reason. Ratings attach to the conversation the rater had
(``Rating.conversation``); nothing of it exists before the chat, so an item names the systems
(``StudyItemSystem``: one per item, or a pair side by side), the rater's slot gets its conversations
when the chat opens (``studies.chat.services.chat_open``), and the rating page waits until the chat has
ended (``pending_url``). Each conversation has one rater. The chat itself (endpoints, turns, limits,
the page) lives in ``studies.chat``; its settings in ``Study.unit_config`` (``studies.designs.units.chat_config``).
"""
from __future__ import annotations

import itertools
import string
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.urls import reverse

from studies.designs.units.base import StudyUnit
from studies.designs.units.chat_config import chat_config_clean
from studies.designs.units.dialogue import speaker_turns
from studies.endpoint_owners import study_endpoints
from studies.models import Chat, Conversation, StudyItem, StudyItemSystem

if TYPE_CHECKING:
    from studies.designs.common import ItemSpec
    from studies.designs.units.base import ItemShape
    from studies.models import AssignmentItem, Study

CHAT_CRITERIA = [
    {"name": "coherence", "question": "How coherent was the system in this conversation?",
     "help_text": "Did its turns follow on from what was said, stay on topic and make sense together?"},
    {"name": "engagingness", "question": "How engaging was the conversation?",
     "help_text": "Would you want to talk with this system again?"},
    {"name": "overall", "question": "Overall, how good was the conversation?", "help_text": ""},
]
WHO = {"user": "You", "system": "Bot"}  # the rater's view: never the system's name
# How a researcher may name the two sides of a written practice transcript (stored as a chat's are).
WRITTEN_SPEAKERS = {"user": "user", "you": "user", "rater": "user", "human": "user",
                    "bot": "system", "system": "system", "assistant": "system"}


def rater_turns(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A transcript as the rater sees it: "You" and "Bot", the rater's turns on one side."""
    return speaker_turns([{**t, "speaker": WHO.get(str(t.get("speaker")), str(t.get("speaker")))} for t in turns])


class ChatUnit(StudyUnit):
    key = "chat"
    level = "dialogue"
    row_noun = "Conversation"
    target_field = "conversation"
    shown_relation = "item_systems"
    collects_dialogues = True
    form_fields = {
        "chat_systems_per_chat": forms.TypedChoiceField(
            label="Systems per chat (chat)", coerce=int, required=False, empty_value=None,
            choices=[("", "follow the design"), (1, "one system"), (2, "two side by side (ranked with BWS)")],
            help_text="Side by side, each message goes to both systems and the rater ranks the two conversations."),
        "chat_min_turns": forms.IntegerField(label="Turns before the rater may end the chat (chat)", min_value=1,
                                             max_value=50, required=False, initial=3,
                                             help_text="A turn is a message and the system's reply."),
        "chat_max_turns": forms.IntegerField(label="Turns after which the chat ends (chat)", min_value=1,
                                             max_value=50, required=False, initial=10),
        "chat_message_max_chars": forms.IntegerField(label="Longest message, in characters (chat)", min_value=20,
                                                     max_value=4000, required=False, initial=500),
        "chat_messages_per_minute": forms.IntegerField(label="Messages a rater may send per minute (chat)",
                                                       min_value=1, max_value=120, required=False, initial=12),
        "chat_persona": forms.CharField(
            label="Persona or task shown to the rater (chat)", max_length=2000, required=False,
            widget=forms.Textarea(attrs={"rows": 2}),
            help_text="E.g. “You are planning a weekend in Rome together with the bot, who is a chef.” Shown above the chat."),
        "chat_bot_persona": forms.CharField(
            label="The same persona or task for the bot (chat)", max_length=2000, required=False,
            widget=forms.Textarea(attrs={"rows": 2}),
            help_text="E.g. “You are a chef planning a weekend in Rome with the user.” Sent to the bot; blank: the bot "
                      "is told what the rater was told, as the user's setting."),
        "chat_system_prompt": forms.CharField(label="System prompt, OpenAI-compatible endpoints (chat)",
                                              max_length=4000, required=False, widget=forms.Textarea(attrs={"rows": 2})),
        "chat_temperature": forms.FloatField(label="Temperature, OpenAI-compatible endpoints (chat)", min_value=0,
                                             max_value=2, required=False, help_text="Blank: the endpoint's default."),
        "chat_top_p": forms.FloatField(label="Top-p, OpenAI-compatible endpoints (chat)", min_value=0, max_value=1,
                                       required=False),
        "chat_max_tokens": forms.IntegerField(label="Max tokens per reply, OpenAI-compatible endpoints (chat)",
                                              min_value=1, max_value=32000, required=False),
    }
    # Check items of a chat study are scripted bot replies (studies.rating.chat_checks), written on the checks
    # page or in the API; gold items saved from the preview need an answer known in advance, and practice is a
    # written conversation (``practice_refusal``).
    checks_problem = ("gold items and practice saved from the preview are not available for chat studies: each rater "
                      "rates the conversation they had; add a scripted bot reply as a check on the checks page, and "
                      "write a practice conversation on the study page's Practice card")

    # Practice is a scripted conversation the researcher writes, rated whole with the study's criteria (the
    # rater does not chat in practice): the same form and rules as a dialogue rated on its own.
    practice_judges_the_context = True
    practice_context_label = 'Practice conversation, rated as a whole (one turn per line, "user: text" or "bot: text")'

    def practice_refusal(self, design: Any, *, from_preview: bool = False) -> str | None:
        """A written transcript rated alone takes practice; the preview has no conversation to save, and two
        conversations ranked side by side would need two transcripts, which practice does not take yet."""
        if from_preview:
            return ("practice saved from the preview is not available for chat studies (the preview has no "
                    "conversation): write a practice conversation on the study page's Practice card")
        if design.ranks:
            return ("practice items are not available for chats with two systems side by side yet: a practice item "
                    "is one written conversation, rated as a whole")
        return None

    def written_turns_clean(self, turns: list[dict[str, str]]) -> tuple[list[dict[str, str]], dict[str, str]]:
        """A practice transcript's turns by "user" and "bot" (also you/rater/human, system/assistant), stored as a
        chat's ("user", "system") so the rater reads it as they read their own chats; at least one bot turn."""
        problems: dict[str, str] = {}
        cleaned = []
        for i, turn in enumerate(turns):
            speaker = WRITTEN_SPEAKERS.get(str(turn.get("speaker", "")).strip().lower())
            if speaker is None:
                problems[f"context[{i}].speaker"] = (f'start each line with "user:" or "bot:" (line {i + 1} is by '
                                                     f'“{turn.get("speaker", "")}”)')
            cleaned.append({"speaker": speaker or "user", "text": turn.get("text", "")})
        if cleaned and not problems and not any(t["speaker"] == "system" for t in cleaned):
            problems["context"] = "a practice conversation needs at least one bot turn (a line starting \"bot:\")"
        return cleaned, problems

    def default_criteria(self) -> list[dict[str, str]]:
        return [dict(c) for c in CHAT_CRITERIA]

    def default_question(self, name: str) -> str | None:
        known = {c["name"]: c["question"] for c in CHAT_CRITERIA}
        return known.get(name) or f"How good was the conversation's {name.replace('-', ' ')}?"

    def config_from_form(self, data: Mapping[str, Any]) -> dict[str, Any]:
        return {key.removeprefix("chat_"): data[key] for key in self.form_fields if data.get(key) is not None}

    def form_initial(self, config: Mapping[str, Any]) -> dict[str, Any]:
        return {f"chat_{key}": value for key, value in config.items() if f"chat_{key}" in self.form_fields}

    def design_problem(self, design: ItemShape) -> str | None:
        """An anchored design (RME) shows one fixed anchor dialogue on every item; chats have none."""
        if design.anchored:
            return (f"{design.key.upper()} needs one fixed anchor dialogue shown on every item, and a chat study has "
                    "none: use Likert, or BWS to rank two systems chatted with side by side")
        return None

    def config_clean(self, config: Mapping[str, Any] | None, *, design: ItemShape) -> dict[str, Any]:
        """The chat settings (``studies.designs.units.chat_config``), and whether the design can judge such chats:
        one conversation is rated on its own (not ranked), two side by side are ranked (BWS ranks the
        two; its tuple size follows when the items are built). Without ``systems_per_chat`` a ranking
        design gets two systems side by side, any other one."""
        given = dict(config or {})
        if "systems_per_chat" not in given:
            given["systems_per_chat"] = 2 if design.ranks else 1
        cleaned = chat_config_clean(given)
        if cleaned["systems_per_chat"] == 2 and not design.ranks:
            raise ValidationError({"unit_config.systems_per_chat": "two systems side by side are compared by "
                                                                   "ranking their conversations: choose BWS"})
        if cleaned["systems_per_chat"] == 1 and design.ranks:
            raise ValidationError({"unit_config.systems_per_chat": "ranking needs two systems side by side "
                                                                   "(systems_per_chat 2)"})
        return cleaned

    def items_build(self, *, study: Study, spec: ItemSpec, design: ItemShape) -> int:
        """One item per system (or per pair of systems, side by side), each chatted ``raters_per_item``
        times; every system needs an endpoint. A corpus is not needed (the chats make the dialogues)."""
        names = list(dict.fromkeys(s.strip() for s in (spec.systems or []) if s and s.strip()))
        if not names:
            raise ValidationError({"systems": "name the systems raters will chat with"})
        # Only the experiment owner's endpoints (studies.endpoint_owners); a system without one is refused
        # in the same words whether or not another researcher has one, so nothing of theirs shows.
        found = {e.system.name: e.system for e in study_endpoints(study).filter(system__name__in=names)
                 .select_related("system")}
        if lacking := [n for n in names if n not in found]:
            raise ValidationError({"systems": f"{', '.join(lacking)}: no endpoint of this experiment's owner to chat "
                                              "with; set one on Systems → endpoints first"})
        size = int((study.unit_config or {}).get("systems_per_chat", 1))
        if len(names) < size:
            raise ValidationError({"systems": f"a side-by-side chat needs at least {size} systems, got {len(names)}"})
        groups = list(itertools.combinations(names, size))
        study.items.filter(check_kind="").delete()
        items = StudyItem.objects.bulk_create([StudyItem(study=study, position=i) for i in range(len(groups))])
        StudyItemSystem.objects.bulk_create([
            StudyItemSystem(item=item, system=found[name], position=p)
            for item, group in zip(items, groups, strict=True) for p, name in enumerate(group)])
        design.items_shown(study, size)
        return len(items)

    def publish_problems(self, study: Study) -> list[str]:
        """Every system the items chat with needs an endpoint of the experiment's owner (it may have been
        removed, or the items built before endpoints had owners)."""
        used = set(StudyItemSystem.objects.filter(item__study=study).values_list("system__name", flat=True))
        owned = set(study_endpoints(study).filter(system__name__in=used).values_list("system__name", flat=True))
        if lacking := sorted(used - owned):
            return [f"{', '.join(lacking)}: no endpoint of this experiment's owner to chat with"]
        return []

    def item_targets(self, item_ids: Iterable[int]) -> dict[int, list[int]]:
        """Nothing yet: the conversations a rater rates exist once their chat opens."""
        return {item_id: [] for item_id in item_ids}

    def target_texts(self, study: Study, item: StudyItem, order: Sequence[int], *, ranked: bool) -> dict[int, str]:
        """A ranked conversation's row shows its system's first reply; a single one shows nothing."""
        if not ranked:
            return {cid: "" for cid in order}
        turns = dict(Conversation.objects.filter(pk__in=list(order)).values_list("pk", "turns"))
        first = {cid: next((t["text"] for t in turns.get(cid) or [] if t.get("speaker") == "system"), "")
                 for cid in order}
        return first

    def form_context(self, study: Study, item: StudyItem, order: Sequence[int], *,
                     design: ItemShape) -> dict[str, Any]:
        """The rater's own transcript(s): one conversation to rate, or the two side by side lettered in
        the rater's order (templates/raters/_dialogue.html). A preview (no chat yet) shows a note."""
        turns = dict(Conversation.objects.filter(pk__in=list(order)).values_list("pk", "turns"))
        context: dict[str, Any] = {"dialogue": True, "anchor_turns": None, "dialogue_turns": [],
                                   "ranked_dialogues": [], "chat_rating": True,
                                   "chat_preview": not order}
        if design.ranks:
            context["ranked_dialogues"] = [{"id": cid, "letter": string.ascii_uppercase[i],
                                            "turns": rater_turns(turns.get(cid) or [])} for i, cid in enumerate(order)]
        elif order:
            context["dialogue_turns"] = rater_turns(turns.get(order[0]) or [])
        return context

    def item_columns(self, items: Sequence[StudyItem]) -> dict[int, list[dict[str, Any]]]:
        """A chat item's columns in the item browser: the systems it chats with (each rater rated their
        own conversation, which ``browser_column_of`` puts under its system)."""
        columns: dict[int, list[dict[str, Any]]] = {item.pk: [] for item in items}
        for item_id, system_id, name in StudyItemSystem.objects.filter(item_id__in=list(columns)) \
                .order_by("item_id", "position").values_list("item_id", "system_id", "system__name"):
            columns[item_id].append({"id": system_id, "system": name, "text": name})
        return columns

    def browser_column_of(self, target_ids: Iterable[int]) -> dict[int, int]:
        """A rated conversation goes under the system the rater chatted with."""
        return dict(Chat.objects.filter(conversation_id__in=list(target_ids)).values_list("conversation_id", "system_id"))

    def browser_transcripts(self, item_ids: Sequence[int]) -> dict[int, list[dict[str, Any]]]:
        """Every chat on these items: its rater, system, status, end reason and turns (with timing)."""
        found: dict[int, list[dict[str, Any]]] = {}
        for item_id, rater_id, system, status, reason, turns in Chat.objects.filter(item_id__in=list(item_ids)) \
                .order_by("item_id", "assignment_id", "position").values_list(
                    "item_id", "assignment__rater_id", "system__name", "status", "end_reason", "conversation__turns"):
            found.setdefault(item_id, []).append({"rater_id": rater_id, "system": system, "status": status,
                                                  "end_reason": reason, "turns": turns})
        return found

    def shown_turns(self, turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return rater_turns(turns)

    def pending_url(self, slot: AssignmentItem) -> str | None:
        """The chat page, until the rater's chat on this item has ended."""
        chats = Chat.objects.filter(assignment_id=slot.assignment_id, item_id=slot.item_id)
        if chats.exists() and not chats.exclude(status=Chat.Status.ENDED).exists():
            return None
        return reverse("chat:page", args=[slot.assignment.token, slot.position])

    def conversations(self, study: Study) -> QuerySet[Conversation]:
        """The transcripts of the study's ended chats that have a turn (what metrics score: a chat still
        going on would change after its score)."""
        return (Conversation.objects.filter(chat__item__study=study, chat__status=Chat.Status.ENDED).exclude(turns=[])
                .exclude(chat__item__check_kind__gt=""))  # a check's chat has a scripted reply: not the system's


CHAT = ChatUnit()
