"""The dialogue unit (``Study.unit == "dialogue"``): a rating judges a whole conversation.

The rater reads a whole conversation and rates it on each criterion; the ratings attach to the
conversation (``Rating.conversation``), not to a response. Items: one per conversation of the corpus
(optionally only those whose system, ``metadata.system`` from the dialogue-level imports, is chosen).
An anchored design (RME) shows one whole dialogue as its fixed anchor on every item, with the
reference value (Bard et al. 1996: one modulus for all judgements): the conversation
``reference_conversation`` or else the first of ``reference_system``'s; it is not judged. A ranking
design (BWS) ranks ``tuple_size`` whole dialogues per screen (``StudyItemConversation``): the
dialogues are shuffled (seeded) and cut into disjoint tuples, so each dialogue is ranked on one screen
and a rater's rating of it is unique; dialogues left over (fewer than a tuple) are not used. Which
designs run on dialogues is each design's ``unit_refusals``.
"""
from __future__ import annotations

import random
import string
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError

from studies.designs.units.base import ItemShape, StudyUnit
from studies.designs.units.sides import dialogue_sides
from studies.models import Conversation, StudyItem, StudyItemConversation

if TYPE_CHECKING:
    from django.db.models import QuerySet

    from studies.designs.common import ItemSpec
    from studies.models import Study

DIALOGUE_QUESTIONS = {
    "readability": "How readable is this dialogue?",
    "coherence": "How coherent is this dialogue as a whole?",
}
DIALOGUE_HELP = {
    "readability": "Are the turns fluent, grammatical and easy to understand?",
    "coherence": "Does the conversation hang together: do the turns follow on from each other, stay on topic, "
    "and make sense as one dialogue?",
}


def speaker_turns(turns: list[dict[str, str]]) -> list[dict[str, str]]:
    """Turns with a ``side`` by speaker, not by position (a dialogue may have two turns in a row by one
    speaker), and not by who opens: the system on side-a in every dialogue (``sides.dialogue_sides``)."""
    return dialogue_sides(turns)


class DialogueUnit(StudyUnit):
    key = "dialogue"
    level = "dialogue"
    row_noun = "Dialogue"
    target_field = "conversation"
    shown_relation = "item_conversations"
    checks_problem = ("attention checks and gold items are not available for dialogue-unit studies of this design "
                      "yet (they are for designs that rate, rank or anchor dialogues, and for ACUTE-Eval's pairs)")
    # A check or practice item of a dialogue rated on its own is one whole dialogue written for it (a known
    # bad one, say): its rules number that dialogue 1 (``{"response": 1, "max": 2}``).
    checks_judge_the_context = True
    practice_context_label = 'Dialogue, judged as a whole (one turn per line, "A: text")'

    def checks_refusal(self, design: Any, *, from_preview: bool = False) -> str | None:
        """A design whose check items compare whole conversations written for them (ACUTE-Eval's
        known-answer pairs, ``check_conversations``) takes check items, and so does one that rates one dialogue
        at a time, ranks several (a tuple of two is a comparison) or anchors them: a known bad dialogue is the
        check, shown as the items show theirs (``studies.authoring.dialogue_set_checks``). A design choosing
        between two answers (A/B) has no dialogue form, so no checks either."""
        if getattr(design, "check_conversations", 0):
            return None
        if getattr(design, "compares_pairs", False):
            return self.checks_problem
        if from_preview and (getattr(design, "ranks", False) or getattr(design, "anchored", False)):
            return ("a gold item of dialogues ranked or anchored is written on the checks page (a known bad "
                    "dialogue, ranked among the study's own or shown beside its anchor), not saved from the preview")
        return None

    def practice_refusal(self, design: Any, *, from_preview: bool = False) -> str | None:
        """Practice takes dialogues rated one at a time: a ranking or anchored practice form is not written yet."""
        if getattr(design, "ranks", False) or getattr(design, "anchored", False):
            return ("practice items are not available yet for dialogue-unit studies that rank dialogues or rate "
                    "them against an anchor (check items are: a known bad dialogue on the checks page)")
        return self.checks_refusal(design)

    def default_criteria(self) -> list[dict[str, str]]:
        """The seed study's two criteria, asked of the whole dialogue."""
        return [{"name": n, "question": q, "help_text": DIALOGUE_HELP[n]} for n, q in DIALOGUE_QUESTIONS.items()]

    def default_question(self, name: str) -> str | None:
        return DIALOGUE_QUESTIONS.get(name) or f"How good is this dialogue's {name.replace('-', ' ')}?"

    def items_build(self, *, study: Study, spec: ItemSpec, design: ItemShape) -> int:
        corpus = spec.corpus_required()
        conversations = Conversation.objects.filter(corpus=corpus)
        if spec.systems:
            wanted = list(dict.fromkeys(spec.systems))
            found = set(conversations.filter(metadata__system__in=wanted).values_list("metadata__system", flat=True))
            unknown = [s for s in wanted if s not in found]
            if unknown:
                raise ValidationError({"systems": f"no dialogues of {', '.join(unknown)} in corpus {corpus.slug}"})
            judged = conversations.filter(metadata__system__in=wanted)
        else:
            judged = conversations
        anchor = self._anchor(design, conversations, spec) if design.anchored else None
        if anchor is not None:
            judged = judged.exclude(pk=anchor)
        ids = list(judged.order_by("id").values_list("id", flat=True))
        if spec.limit is not None and spec.limit < len(ids):
            ids = sorted(random.Random(spec.seed).sample(ids, spec.limit))
        if not ids:
            raise ValidationError(
                {"corpus": f"corpus {corpus.slug} has no dialogues to judge" + (" besides the anchor" if anchor else "")}
            )
        study.items.filter(check_kind="").delete()
        if design.ranks:
            return self._tuples_build(study, ids, spec.seed)
        value = design.fixed_reference_value(study.design_config)
        StudyItem.objects.bulk_create(
            [StudyItem(study=study, conversation_id=cid, position=i, reference_conversation_id=anchor,
                       reference_value=value) for i, cid in enumerate(ids)],
            batch_size=2000,
        )
        return len(ids)

    @staticmethod
    def _tuples_build(study: Study, ids: list[int], seed: int) -> int:
        """The dialogues shuffled (seeded) and cut into disjoint tuples of ``tuple_size``."""
        size = study.design_config["tuple_size"]
        if len(ids) < size:
            raise ValidationError({"corpus": f"BWS ranks {size} dialogues per item; the corpus has {len(ids)} to judge"})
        shuffled = ids[:]
        random.Random(seed).shuffle(shuffled)
        tuples = [shuffled[i : i + size] for i in range(0, len(shuffled) - size + 1, size)]
        items = StudyItem.objects.bulk_create(
            [StudyItem(study=study, conversation_id=group[0], position=i) for i, group in enumerate(tuples)],
            batch_size=2000,
        )
        StudyItemConversation.objects.bulk_create(
            [StudyItemConversation(item=item, conversation_id=cid, position=p)
             for item, group in zip(items, tuples, strict=True) for p, cid in enumerate(group)],
            batch_size=2000,
        )
        return len(items)

    @staticmethod
    def _anchor(design: ItemShape, conversations: QuerySet[Conversation], spec: ItemSpec) -> int | None:
        if spec.reference_conversation:
            found = conversations.filter(external_id=spec.reference_conversation).values_list("pk", flat=True).first()
            if found is None:
                raise ValidationError(
                    {"reference_conversation": f"no dialogue {spec.reference_conversation!r} in the corpus"})
            return found
        if spec.reference_system:
            found = (conversations.filter(metadata__system=spec.reference_system).order_by("id")
                     .values_list("pk", flat=True).first())
            if found is None:
                raise ValidationError({"reference_system": f"no dialogue of {spec.reference_system!r} in the corpus"})
            return found
        raise ValidationError({"reference_system": f"{design.key.upper()} on dialogues needs an anchor dialogue: name "
                                                   "a reference system (its first dialogue) or a reference conversation"})

    def item_targets(self, item_ids: Iterable[int]) -> dict[int, list[int]]:
        """item id -> the conversations it shows (one; a ranking item's tuple in canonical order)."""
        wanted = list(item_ids)
        targets = {item_id: [conversation_id] for item_id, conversation_id
                   in StudyItem.objects.filter(pk__in=wanted).values_list("pk", "conversation_id")}
        tuples: dict[int, list[int]] = {}
        links = StudyItemConversation.objects.filter(item_id__in=wanted).order_by("item_id", "position")
        for item_id, conversation_id in links.values_list("item_id", "conversation_id"):
            tuples.setdefault(item_id, []).append(conversation_id)
        return {**targets, **tuples}

    def item_columns(self, items: Sequence[StudyItem]) -> dict[int, list[dict[str, Any]]]:
        """The dialogues each item shows (several on a ranking item, in canonical order; else the item's
        own conversation), named by their system where the import gave one."""
        shown: dict[int, list] = {}
        for item_id, conversation_id, external_id, metadata in (
            StudyItemConversation.objects.filter(item_id__in=[i.pk for i in items]).order_by("item_id", "position")
            .values_list("item_id", "conversation_id", "conversation__external_id", "conversation__metadata")
        ):
            shown.setdefault(item_id, []).append((conversation_id, external_id, metadata))
        columns = {}
        for item in items:
            conversation = item.conversation
            dialogues = shown.get(item.pk) or (
                [(conversation.pk, conversation.external_id, conversation.metadata)] if conversation is not None else [])
            columns[item.pk] = [{"id": cid, "system": (metadata or {}).get("system") or external_id, "text": external_id}
                                for cid, external_id, metadata in dialogues]
        return columns

    @staticmethod
    def _ranked(order: Sequence[int], ranked: bool) -> dict[int, list[dict[str, str]]]:
        """conversation id -> turns of the dialogues a ranking item ranks (one query; none otherwise)."""
        if not ranked:
            return {}
        return dict(Conversation.objects.filter(pk__in=list(order)).values_list("pk", "turns"))

    def target_texts(self, study: Study, item: StudyItem, order: Sequence[int], *, ranked: bool) -> dict[int, str]:
        """What the ranking list shows of each dialogue (its opening turn); empty for a single dialogue."""
        turns = self._ranked(order, ranked)
        return {cid: (turns[cid][0]["text"] if turns.get(cid) else "") for cid in order}

    def form_context(self, study: Study, item: StudyItem, order: Sequence[int], *,
                     design: ItemShape) -> dict[str, Any]:
        """The whole dialogue (speakers told apart), an anchored design's anchor dialogue, and a
        ranking design's dialogues lettered in the rater's order (templates/raters/_dialogue.html)."""
        anchor = item.reference_conversation if design.anchored else None
        ranked = self._ranked(order, design.ranks)
        return {
            "dialogue": True,
            "dialogue_turns": speaker_turns(item.conversation.turns if item.conversation else []),
            "anchor_turns": speaker_turns(anchor.turns) if anchor else None,
            "ranked_dialogues": [{"id": cid, "letter": string.ascii_uppercase[i], "turns": speaker_turns(ranked[cid])}
                                 for i, cid in enumerate(order) if cid in ranked],
        }


DIALOGUE = DialogueUnit()
