"""How a study's items were drawn from their corpus, and drawing more of them.

Prediction-powered estimates (metrics.ppi.estimates) treat the human-rated units as a simple random sample of a
*frame*: the corpus conversations the items could have been drawn from. That holds when

1. the items are all of the frame, or a seeded uniform sample of it (``study_items_build`` with
   ``limit``), or such a sample grown by ``study_items_extend`` (a uniform sample of the rest, so the
   union is again a uniform sample), and
2. raters were given items by the allocation rule (``services._assignment_create``: the items furthest
   below their target, ties broken at random), which never looks at an item's content, so the items
   rated so far are a random subset of the items.

``study_items_build`` records the draw on ``Study.item_draw`` (method, corpus, seed, the frame's
conversation ids); a study without a record (built before draws were recorded, or copied items) or
whose items no longer match it is refused with the reason (``draw_problem``).

The frame is read back from the built items, so every builder is covered without changing it: response
units -- the corpus conversations with a first response from each system the items show (from at least
two of them where items show different systems, as pairwise items do) and from the items' reference
system; dialogue units -- the corpus conversations of the items' systems (``metadata.system``) except the
anchor. The record is kept only when the built items agree with it (all of the frame, or exactly
``limit`` of its conversations).
"""
from __future__ import annotations

import random
import secrets
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count

from studies.designs import unit_for
from studies.models import (
    Conversation,
    Corpus,
    Response,
    Study,
    StudyItem,
    StudyItemConversation,
    StudyItemResponse,
)

RANDOM, ALL, UNVERIFIED = "random", "all", "unverified"


def _items(study: Study):
    return StudyItem.objects.filter(study=study, check_kind="")


def _item_conversations(study: Study) -> set[int]:
    """The conversations the study's items show: response units through their responses (a best-worst tuple
    mixes conversations), dialogue units the item's own or its ranked dialogues."""
    if unit_for(study).level == "dialogue":
        own = set(_items(study).exclude(conversation=None).values_list("conversation_id", flat=True))
        return own | set(StudyItemConversation.objects.filter(item__study=study, item__check_kind="")
                         .values_list("conversation_id", flat=True))
    return set(StudyItemResponse.objects.filter(item__study=study, item__check_kind="")
               .values_list("response__conversation_id", flat=True))


def study_systems(study: Study) -> list[str]:
    """The judged systems of the study's items (names, sorted)."""
    if unit_for(study).level == "dialogue":
        ids = _item_conversations(study)
        return sorted({s for s in Conversation.objects.filter(pk__in=ids).values_list("metadata__system", flat=True) if s})
    return sorted(set(StudyItemResponse.objects.filter(item__study=study, item__check_kind="")
                      .values_list("response__system__name", flat=True)))


def _response_frame(study: Study, corpus: Corpus, systems: list[str]) -> list[int]:
    per_conversation: dict[int, set[str]] = {}
    for cid, name in Response.objects.filter(conversation__corpus=corpus, position=0, system__name__in=systems) \
            .values_list("conversation_id", "system__name"):
        per_conversation.setdefault(cid, set()).add(name)
    # The fewest systems a drawn conversation shows on the items: all of them (one item per conversation,
    # best-worst tuples), or two (pairwise items scheduled per conversation).
    shown = StudyItemResponse.objects.filter(item__study=study, item__check_kind="") \
        .values("response__conversation_id").annotate(n=Count("response__system", distinct=True)) \
        .values_list("n", flat=True)
    need = min(shown, default=len(systems))
    references = set(_items(study).exclude(reference_response=None)
                     .values_list("reference_response__system__name", flat=True))
    frame = [c for c, names in per_conversation.items() if len(names) >= need]
    if references:
        with_reference = set(Response.objects.filter(conversation__corpus=corpus, position=0,
                                                     system__name__in=references).values_list("conversation_id", flat=True))
        frame = [c for c in frame if c in with_reference]
    return sorted(frame)


def _dialogue_frame(study: Study, corpus: Corpus, systems: list[str]) -> list[int]:
    conversations = Conversation.objects.filter(corpus=corpus)
    if systems:
        conversations = conversations.filter(metadata__system__in=systems)
    anchors = set(_items(study).exclude(reference_conversation=None).values_list("reference_conversation_id", flat=True))
    return sorted(set(conversations.values_list("id", flat=True)) - anchors)


def frame_of(study: Study, corpus: Corpus) -> list[int]:
    """The conversation ids the study's items could have been drawn from (the module docstring's rule)."""
    systems = study_systems(study)
    if unit_for(study).level == "dialogue":
        return _dialogue_frame(study, corpus, systems)
    return _response_frame(study, corpus, systems)


def draw_record(study: Study, *, corpus: Corpus, limit: int | None, seed: int) -> dict[str, Any]:
    """What ``Study.item_draw`` holds after a build: method ``all`` or ``random`` with the frame, or
    ``unverified`` with the reason the items do not match a frame."""
    drawn = _item_conversations(study)
    frame = frame_of(study, corpus)
    base = {"corpus": corpus.pk, "corpus_slug": corpus.slug, "seed": seed, "limit": limit,
            "systems": study_systems(study), "drawn": len(drawn)}
    outside = drawn - set(frame)
    if outside:
        return {**base, "method": UNVERIFIED,
                "reason": f"{len(outside)} item conversation(s) lie outside the frame Concord reads back from the items"}
    if drawn == set(frame):
        return {**base, "method": ALL, "frame": frame}
    if limit is not None and len(drawn) == limit:
        return {**base, "method": RANDOM, "frame": frame}
    return {**base, "method": UNVERIFIED,
            "reason": f"the items show {len(drawn)} of the frame's {len(frame)} conversations, which is neither all of "
                      f"them nor the {limit} drawn" if limit else "some conversations of the frame are not on an item "
                      "(e.g. dialogues left over from the tuples)"}


@transaction.atomic
def study_item_draw_record(*, study: Study, corpus: Corpus, limit: int | None, seed: int) -> dict[str, Any]:
    """Store how the study's items were just built (``draw_record``) on ``Study.item_draw``."""
    record = draw_record(study, corpus=corpus, limit=limit, seed=seed)
    Study.objects.filter(pk=study.pk).update(item_draw=record)
    study.item_draw = record
    return record


def draw_problem(study: Study) -> str | None:
    """Why the study's human-rated items cannot count as a random sample of its frame, or None."""
    record = study.item_draw or {}
    method = record.get("method")
    if not method:
        return ("how the items were chosen is not recorded (built before Concord recorded draws, copied from another "
                "study, or imported): only items drawn at random from a corpus count as a labelled sample; build the "
                "items again, with a limit for a random sample")
    if method == UNVERIFIED:
        return f"the items do not match a random draw from the corpus: {record.get('reason', '')}"
    if study.platform == Study.Platform.BENCHMARK:
        return "an imported benchmark's human scores came with the data set; how its items were chosen is unknown"
    drawn = _item_conversations(study)
    if not drawn <= set(record["frame"]):
        return "the items changed since they were drawn: some are not in the recorded frame"
    return None


def _extension_shape(study: Study) -> dict[str, Any] | str:
    """How a new item copies the existing ones (systems in order, reference system and value, anchor), or why
    new items cannot be made like them."""
    items = list(_items(study).order_by("position")[:1])
    if not items:
        return "the study has no items to copy"
    first = items[0]
    values = set(_items(study).values_list("reference_value", flat=True))
    if len(values) > 1:
        return ("each item has its own reference value (a metric's anchor, as in BME): new items would need theirs; "
                "extend a draft and set the values, or use a fixed anchor")
    if StudyItemConversation.objects.filter(item__study=study).exists() or (
            unit_for(study).level != "dialogue" and _items(study).filter(conversation=None).exists()):
        return "the items are tuples of several conversations, not one conversation each"
    systems = list(StudyItemResponse.objects.filter(item=first).order_by("position")
                   .values_list("response__system__name", flat=True))
    if unit_for(study).level != "dialogue" and set(study_systems(study)) != set(systems):
        return "the items show different systems (pairs): new items would need the pair schedule"
    return {"systems": systems, "reference_value": values.pop() if values else None,
            "reference_system": Response.objects.filter(pk=first.reference_response_id)
            .values_list("system__name", flat=True).first(),
            "reference_conversation": first.reference_conversation_id}


@transaction.atomic
def study_items_extend(*, study: Study, count: int, expected_items: int | None = None, seed: int | None = None) -> int:
    """Add ``count`` items drawn at random from the frame's conversations not yet on an item, shaped like the
    existing ones; the draw is added to ``Study.item_draw``. A published study hands them out to its next
    raters (least-rated items first); a closed one (a finished pilot) gets them too and can then be re-opened
    (``editing.study_reopen``) for their raters. ``expected_items``: the item count the researcher saw -- a second
    submit of the same form finds more and adds nothing. Returns the number of items added."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    problem = draw_problem(study)
    if problem:
        raise ValidationError({"count": f"cannot draw more items at random: {problem}"})
    if not isinstance(count, int) or count < 1:
        raise ValidationError({"count": f"a number of items to add, 1 or more; got {count!r}"})
    current = _items(study).count()
    if expected_items is not None and expected_items != current:
        raise ValidationError({"count": f"the study has {current} items now, not the {expected_items} shown: "
                                        f"nothing added (was the form sent twice?)"})
    shape = _extension_shape(study)
    if isinstance(shape, str):
        raise ValidationError({"count": f"cannot add items like the existing ones: {shape}"})
    record = dict(study.item_draw)
    remaining = sorted(set(record["frame"]) - _item_conversations(study))
    if count > len(remaining):
        raise ValidationError({"count": f"the corpus has {len(remaining)} conversation(s) of the frame not yet on an "
                                        f"item; cannot add {count}"})
    seed = seed if seed is not None else secrets.randbits(62)
    chosen = sorted(random.Random(seed).sample(remaining, count))
    start = (StudyItem.objects.filter(study=study).order_by("-position").values_list("position", flat=True).first() or 0) + 1
    reference = {}
    if shape["reference_system"]:
        reference = dict(Response.objects.filter(conversation_id__in=chosen, position=0,
                                                 system__name=shape["reference_system"])
                         .values_list("conversation_id", "id"))
    items = StudyItem.objects.bulk_create([
        StudyItem(study=study, conversation_id=cid, position=start + i, reference_response_id=reference.get(cid),
                  reference_value=shape["reference_value"], reference_conversation_id=shape["reference_conversation"])
        for i, cid in enumerate(chosen)])
    if unit_for(study).level != "dialogue":
        responses = {(c, s): r for c, s, r in Response.objects.filter(
            conversation_id__in=chosen, position=0, system__name__in=shape["systems"])
            .values_list("conversation_id", "system__name", "id")}
        StudyItemResponse.objects.bulk_create([
            StudyItemResponse(item=item, response_id=responses[(item.conversation_id, system)], position=p)
            for item in items for p, system in enumerate(shape["systems"])], batch_size=2000)
    record["method"] = RANDOM
    record["extensions"] = [*record.get("extensions", []), {"count": count, "seed": seed}]
    record["drawn"] = len(_item_conversations(study))
    Study.objects.filter(pk=study.pk).update(item_draw=record)
    study.item_draw = record
    return len(items)
