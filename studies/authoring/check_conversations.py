"""Check items that compare whole conversations written for them: a design's ``check_conversations``
(ACUTE-Eval: a pair with a known answer, as the paper's quality control — Li, Weston and Roller 2019,
section 4: pairs where one side is clearly better, e.g. a degenerate speaker that repeats itself).

The researcher writes the conversations (each as turns, or as text with one turn per line, "bot: hi"),
optionally names the speaker judged in each (else the design's ``check_speaker``, as for its items), and
rules numbering the conversations from 1 (``{"greater": 1, "than": 2}``: conversation 1's marked
speaker is the better one). They are stored in the study's checks corpus (metadata ``check``; system
``attention-check``), the item showing them in order (``StudyItemConversation`` with the judged
speaker), the rules resolved to the conversations' ids, so the design's ``check_answers`` and
``studies.rating.checks.check_passed`` score a rater's choices like any pairwise check. The rater sees a
check pair exactly like the study's pairs (the page never names a system). Called by
``studies.authoring.checks`` (the page, the API, the CSV import and the builder's expected answers)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from studies.designs import design_for
from studies.models import Conversation, Study, StudyItem, StudyItemConversation

MAX_TURNS = 60


def conversations_parse(study: Study, conversations: Any, *, turns_of, problems) -> list[dict[str, Any]]:
    """The conversations a check item compares: [{"turns", "speaker"}], each given as turns, as text
    (one turn per line), or as {"turns": ..., "speaker": ...}; problems keyed ``conversations[i]...``.
    ``turns_of(value, field, problems)`` reads turns (``studies.rating.check_rules.turns_clean``)."""
    design = design_for(study)
    wanted = design.check_conversations
    if isinstance(conversations, Mapping):  # the web form: {"1": text, "2": text}
        conversations = [conversations[k] for k in sorted(conversations, key=str)]
    if not isinstance(conversations, list) or len(conversations) != wanted:
        problems.add("conversations", f"give the {wanted} conversations to compare, each one turn per line "
                                      "(“bot: …”), the better one first or as the rules say")
        return []
    out = []
    for i, given in enumerate(conversations):
        field = f"conversations[{i}]"
        speaker = ""
        if isinstance(given, Mapping):
            speaker = str(given.get("speaker") or "").strip()
            given = given.get("turns")
        turns = turns_of(given, field, problems)
        if len(turns) > MAX_TURNS:
            problems.add(field, f"at most {MAX_TURNS} turns")
        names = [t["speaker"] for t in turns]
        if speaker and speaker not in names:
            problems.add(f"{field}.speaker", f"{speaker!r} does not speak in this conversation "
                                             f"(its speakers: {', '.join(dict.fromkeys(names))})")
        out.append({"turns": turns, "speaker": speaker or design.check_speaker(study.design_config, turns)})
    return out


def conversation_check_write(study: Study, *, kind: str, conversations: Sequence[Mapping[str, Any]],
                             rules: list[dict], corpus, system: str, number: int, position: int) -> StudyItem:
    """Store the conversations in the checks corpus as ``check-<n>-<k>`` (the first free n from
    ``number``) and the check item showing them in order; rules' 1-based numbers become their ids."""
    taken = set(corpus.conversations.values_list("external_id", flat=True))
    while any(f"check-{number}-{k}" in taken for k in range(1, len(conversations) + 1)):
        number += 1
    stored = [Conversation.objects.create(corpus=corpus, external_id=f"check-{number}-{k}", turns=c["turns"],
                                          metadata={"check": True, "system": system})
              for k, c in enumerate(conversations, 1)]
    ids = [c.pk for c in stored]
    resolved = [{k: (ids[v - 1] if k in ("response", "greater", "than", "best", "worst") else v)
                 for k, v in rule.items()} for rule in rules]
    item = StudyItem.objects.create(study=study, conversation=stored[0], position=position, check_kind=kind,
                                    check_rules=resolved)
    StudyItemConversation.objects.bulk_create(
        [StudyItemConversation(item=item, conversation=c, position=p, speaker=given["speaker"])
         for p, (c, given) in enumerate(zip(stored, conversations, strict=True))])
    return item


def check_item_conversations(item_ids: Sequence[int]) -> dict[int, list[dict[str, Any]]]:
    """item id -> the conversations a check item compares, in order, as {"id", "turns", "speaker"}."""
    out: dict[int, list[dict[str, Any]]] = {}
    for item_id, cid, turns, speaker in (StudyItemConversation.objects.filter(item_id__in=list(item_ids))
                                         .order_by("item_id", "position")
                                         .values_list("item_id", "conversation_id", "conversation__turns", "speaker")):
        out.setdefault(item_id, []).append({"id": cid, "turns": turns, "speaker": speaker})
    return out


def written_conversations_delete(conversation_ids: Sequence[int]) -> None:
    """Delete the conversations written for a removed check item that nothing else shows."""
    for conversation in Conversation.objects.filter(pk__in=list(conversation_ids), corpus__source_format="checks"):
        if not conversation.study_items.exists() and not StudyItemConversation.objects.filter(
                conversation=conversation).exists():
            conversation.delete()
