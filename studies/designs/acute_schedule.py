"""ACUTE-Eval's items (design ``acute``, Li, Weston and Roller 2019): pairs of whole conversations of two
different systems, balanced over the system pairs, each with the speaker to judge.

- Systems: a conversation's system is ``metadata.system`` (the dialogue-level imports, the chat
  transcripts and the self-chats all set it). Of a chat study's transcripts only the ended chats count. ``systems`` picks some (default: every system of the
  corpus); at least two are needed.
- Pairs: for every system pair (a < b) the same number of items, ``pairs_per_system_pair`` (0: as many
  as the smaller of the two systems has conversations). Each system's conversations are shuffled with
  ``random.Random(schedule_seed)`` and used in turn, cycling, so every conversation of a system is
  compared about equally often; the two sides are conversations of two different systems, so a
  conversation is never compared with itself.
- The judged speaker of each side (``StudyItemConversation.speaker``): the conversation's
  ``metadata.judged_speaker`` where it names one of its speakers (a self-chat names its bot), else the
  study's ``judged_speaker`` where the conversation has it, else the system's speaker
  (``units.sides.dialogue_sides``: a speaker named system/model/bot/..., or the name that sorts first).
- Sides: which conversation a rater sees on the left is balanced per rater and per item
  (``pairwise_schedule.pairwise_orders``, by the conversations' systems) and recorded in the slot
  (``AssignmentItem.response_order``) and in every ``Comparison``.
"""
from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Q

from studies.designs.common import ItemSpec
from studies.designs.units.sides import dialogue_sides
from studies.models import Chat, Conversation, Study, StudyItem, StudyItemConversation


def judged_speaker(turns: Sequence[Mapping[str, Any]], metadata: Mapping[str, Any] | None, configured: str) -> str:
    """The speaker whose turns are judged in one conversation (rule in the module docstring)."""
    names = [str(t.get("speaker", "")) for t in turns]
    for wanted in ((metadata or {}).get("judged_speaker"), configured):
        if wanted and wanted in names:
            return str(wanted)
    sided = dialogue_sides([dict(t) for t in turns])
    return next((str(t.get("speaker", "")) for t in sided if t["side"] == "side-a"), "")


def system_pairs_schedule(by_system: Mapping[str, Sequence[int]], *, per_pair: int,
                          seed: int) -> list[tuple[str, str, int, int]]:
    """[(system a, system b, conversation of a, conversation of b)], the same number per system pair
    (``per_pair``; 0: the smaller system's count), each system's conversations shuffled (seeded) and
    used in turn. Pure: no database."""
    rng = random.Random(seed)
    queues = {system: rng.sample(list(ids), len(ids)) for system, ids in sorted(by_system.items())}
    used = dict.fromkeys(queues, 0)

    def take(system: str) -> int:
        queue = queues[system]
        cid = queue[used[system] % len(queue)]
        used[system] += 1
        return cid

    planned = []
    for a, b in combinations(sorted(queues), 2):
        n = per_pair or min(len(queues[a]), len(queues[b]))
        planned += [(a, b, take(a), take(b)) for _ in range(n)]
    return planned


def acute_items_build(*, study: Study, spec: ItemSpec) -> int:
    """(Re)build a draft ACUTE-Eval study's items: one per planned pair (``system_pairs_schedule``),
    the two conversations in canonical order (system a first) with their judged speakers. ``limit``
    caps the pairs per system pair. The caller holds the study row lock and has checked it is a draft
    without raters. Returns the number of items."""
    corpus = spec.corpus_required()
    config = study.design_config
    # A chat study's transcripts: only chats that ended (an open or failed chat is half a conversation).
    conversations = (Conversation.objects.filter(corpus=corpus).exclude(metadata__system=None).exclude(turns=[])
                     .filter(Q(chat__isnull=True) | Q(chat__status=Chat.Status.ENDED)))
    by_system: dict[str, list[int]] = {}
    for cid, system in conversations.order_by("id").values_list("id", "metadata__system"):
        if system not in (None, ""):
            by_system.setdefault(str(system), []).append(cid)
    if spec.systems:
        wanted = list(dict.fromkeys(spec.systems))
        unknown = [s for s in wanted if s not in by_system]
        if unknown:
            raise ValidationError({"systems": f"no conversations of {', '.join(unknown)} in corpus {corpus.slug}"})
        by_system = {s: by_system[s] for s in wanted}
    if len(by_system) < 2:
        raise ValidationError({"systems": f"ACUTE-Eval compares conversations of two systems or more; corpus "
                                          f"{corpus.slug} has {len(by_system)} with a system named "
                                          "(metadata.system)"})
    per_pair = config.get("pairs_per_system_pair", 0)
    if spec.limit is not None:
        per_pair = min(per_pair, spec.limit) if per_pair else spec.limit
    planned = system_pairs_schedule(by_system, per_pair=per_pair, seed=config.get("schedule_seed", 0))
    turns = dict(Conversation.objects.filter(pk__in={c for p in planned for c in p[2:]})
                 .values_list("pk", "turns"))
    metadata = dict(Conversation.objects.filter(pk__in=list(turns)).values_list("pk", "metadata"))
    configured = config.get("judged_speaker", "")
    study.items.filter(check_kind="").delete()  # check items stay
    items = StudyItem.objects.bulk_create(
        [StudyItem(study=study, conversation_id=left, position=i) for i, (_, _, left, _) in enumerate(planned)],
        batch_size=2000)
    StudyItemConversation.objects.bulk_create(
        [StudyItemConversation(item=item, conversation_id=cid, position=side,
                               speaker=judged_speaker(turns[cid] or [], metadata[cid], configured))
         for item, (_, _, left, right) in zip(items, planned, strict=True) for side, cid in enumerate((left, right))],
        batch_size=2000)
    return len(items)


def conversation_systems(conversation_ids: Sequence[int]) -> dict[int, str]:
    """Conversation id -> its system (``metadata.system``), for the balanced sides."""
    return {cid: str(system) for cid, system in
            Conversation.objects.filter(pk__in=list(conversation_ids)).values_list("pk", "metadata__system")}


def item_speakers(item_id: int) -> dict[int, str]:
    """Conversation id -> its judged speaker on one item."""
    return dict(StudyItemConversation.objects.filter(item_id=item_id).values_list("conversation_id", "speaker"))
