"""Check items of chat studies: a scripted bot reply. A chat is not known in advance, so the check is one turn
of it: at the reply the researcher sets (the 2nd bot reply, say; blank: a reply drawn per rater among those
before the rater may end the chat) the rater sees the scripted text instead of the bot's reply, and the bot is
not called for that turn (``studies.chat.check_turns``). The scripted reply is plainly bad (off-topic,
insulting), and the rules say what a careful rater answers about the conversation after the chat, numbering
the rater's conversation 1 (``{"criterion": "overall", "response": 1, "max": 2}``); they are checked like all
check rules (``studies.rating.check_rules``) and scored with them (``studies.rating.checks``), resolved to the
rater's own conversation when the assignment is scored (``resolve_chat_rules``).

The scripted reply is stored as the check item's conversation (one bot turn, in the study's checks corpus);
the check item chats with the systems of the study's first chat item, so it looks like any other chat. A
chat on a check item is left out of the study's conversations (reports, metrics, exports of the systems),
and its scripted turn is marked ``"check": true`` in the transcript.

One system per chat only: a side-by-side chat is ranked, and a scripted turn in one of the two would be
seen next to the other bot's real reply."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import Max

from studies.designs import design_for, kind_for, unit_for
from studies.designs.units.chat_config import chat_config
from studies.models import CheckKind, Conversation, Study, StudyItem, StudyItemSystem
from studies.rating.check_rules import Problems, checks_corpus, resolve_rules, rules_clean

CHECK_POSITION_BASE = 1_000_000  # as studies.authoring.checks: after every regular item
MAX_SCRIPTED_CHARS = 2000
SIDE_BY_SIDE_REFUSAL = ("check items of side-by-side chats are not available: a scripted reply would be seen next to "
                        "the other bot's real one; use one system per chat")


def scripted_turn_checks(study: Study) -> bool:
    """Whether the study's check items are scripted bot replies (a chat study)."""
    return unit_for(study).collects_dialogues


def judging_criteria(study: Study) -> list[Any]:
    """The study's questions a rule can judge a scripted reply by: a scale, one label or a label set about the
    conversation (free text has no expected answer; per-reply questions are not checked yet)."""
    return [c for c in study.criteria.all()
            if kind_for(c).numeric or kind_for(c).check_rule_key in ("label", "labels")]


def _position_clean(value: Any, min_turns: int, problems: Problems) -> int | None:
    if value in (None, ""):
        return None
    try:
        position = int(value)
        if isinstance(value, bool) or float(value) != position:
            raise ValueError
    except (TypeError, ValueError):
        problems.add("position", f"a whole number of the bot's reply, 1 to {min_turns}, or blank for a random one")
        return None
    if not 1 <= position <= min_turns:
        problems.add("position", f"{position}: the scripted reply must come by the bot's reply {min_turns}, before "
                                 f"the rater may end the chat (1 to {min_turns}, or blank for a random one)")
        return None
    return position


def chat_check_problems(study: Study, *, kind: Any, scripted_reply: Any, position: Any,
                        rules: Any) -> tuple[dict[str, Any], Problems]:
    """The scripted reply, where it comes and its rules, checked; problems keyed by the field."""
    problems = Problems()
    if design_for(study).ranks:
        problems.add("kind", SIDE_BY_SIDE_REFUSAL)
        return {}, problems
    if kind not in CheckKind.values:
        problems.add("kind", f"one of {', '.join(CheckKind.values)}")
    if not judging_criteria(study):
        problems.add("rules", "no question of this study can judge a scripted reply: add a criterion with a scale "
                              "or labels (free-text answers have no expected answer)")
    text = scripted_reply.strip() if isinstance(scripted_reply, str) else ""
    if not text:
        problems.add("scripted_reply", "give the bot reply the check shows in place of the bot's (e.g. an off-topic "
                                       "or insulting reply a careful rater flags)")
    elif len(text) > MAX_SCRIPTED_CHARS:
        problems.add("scripted_reply", f"at most {MAX_SCRIPTED_CHARS} characters (got {len(text)})")
    where = _position_clean(position, int(chat_config(study)["min_turns"]), problems)
    first = first_chat_item(study)
    if first is None:
        problems.add("scripted_reply", "build the chat items first: the check chats with their systems")
    cleaned: list[dict] = []
    if "rules" not in problems:
        cleaned, rule_problems = rules_clean(study, rules, 1)
        problems.update({k: v for k, v in rule_problems.items() if k not in problems})
        for i, rule in enumerate(cleaned):
            if "turns" in rule or "spans" in rule:  # where the scripted turn falls is known only in the chat
                problems.add(f"rules[{i}].criterion", "a scripted reply is checked by a question about the "
                                                      "conversation (a scale or labels), not per reply or by spans")
    return {"text": text, "position": where, "rules": cleaned, "item": first}, problems


def first_chat_item(study: Study) -> StudyItem | None:
    """The study's first regular item that chats with a system (whose systems a check item chats with)."""
    return (study.items.filter(check_kind="", item_systems__isnull=False).order_by("position").distinct().first())


def chat_check_write(study: Study, kind: str, data: dict[str, Any], number: int) -> StudyItem:
    """Store the scripted reply as ``check-<n>`` (the first free n) and the check item chatting with the first
    item's systems; its rules keep the conversation numbered 1 (resolved at scoring)."""
    corpus = checks_corpus(study)
    taken = set(corpus.conversations.values_list("external_id", flat=True))
    while f"check-{number}" in taken:
        number += 1
    conversation = Conversation.objects.create(
        corpus=corpus, external_id=f"check-{number}", turns=[{"speaker": "system", "text": data["text"]}],
        metadata={"check": True, "scripted_reply": True, "position": data["position"]})
    last = study.items.filter(check_kind__gt="").aggregate(m=Max("position"))["m"]
    item = StudyItem.objects.create(study=study, conversation=conversation, check_kind=kind,
                                    position=CHECK_POSITION_BASE if last is None else last + 1,
                                    check_rules=data["rules"])
    StudyItemSystem.objects.bulk_create([StudyItemSystem(item=item, system_id=link.system_id, position=link.position)
                                         for link in data["item"].item_systems.order_by("position")])
    return item


def resolve_chat_rules(rules: list[dict], order: Sequence[int]) -> list[dict]:
    """A chat check's rules (the rater's conversation numbered 1) resolved to the slot's conversations; a slot
    whose chat never opened has none, and its check fails (nothing was answered)."""
    return resolve_rules(rules, list(order)) if order else [{**r, "response": -1} for r in rules]
