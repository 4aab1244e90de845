"""The response unit: a rating judges one response (the next turn, given the conversation so far).

Items (``items_build``): one per conversation that has a response from every chosen system. The
reference response (from ``reference_system``, else the one marked ``is_reference``) is the anchor in
an anchored design (magnitude estimation: shown with its value, not judged) and is judged,
unlabelled, among the others otherwise (as in Santhanam & Shaikh 2019). ``limit`` samples that many
conversations (seeded)."""
from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.db.models import Q

from studies.designs.common import unknown_systems_message
from studies.designs.rater_reads import item_response_texts
from studies.designs.units.base import ItemShape, StudyUnit
from studies.models import Response, StudyItem, StudyItemResponse

if TYPE_CHECKING:
    from studies.designs.common import ItemSpec
    from studies.models import Study


class ResponseUnit(StudyUnit):
    key = "response"
    level = "response"
    row_noun = "Response"
    target_field = "response"
    shown_relation = "item_responses"

    def usable_conversations(self, *, study: Study, spec: ItemSpec, design: ItemShape
                             ) -> tuple[list[str], list[tuple[int, dict[str, Any]]]]:
        """(judged systems, [(conversation id, {"judged": {system: response id}, "reference": id})])
        for the conversations that have a response of every judged system (and a reference where the
        design is anchored), sampled to ``spec.limit``; where no conversation has them all and each has one
        judged response (one system answered each context), every conversation with it; ValidationError
        naming the field otherwise."""
        corpus, systems, reference_system = spec.corpus_required(), spec.systems, spec.reference_system
        available = set(Response.objects.filter(conversation__corpus=corpus).values_list("system__name", flat=True))
        # "every system except the reference": the one named, and those whose responses the file marked as the reference
        marked = set(Response.objects.filter(conversation__corpus=corpus, is_reference=True)
                     .values_list("system__name", flat=True))
        chosen = list(dict.fromkeys(systems)) if systems else sorted(available - {reference_system} - marked)
        unknown = [s for s in [*chosen, *([reference_system] if reference_system else [])] if s not in available]
        if unknown:
            raise ValidationError({"systems": unknown_systems_message(unknown, list(available), corpus.slug)})
        judged_systems = [s for s in chosen if s != reference_system]
        rows = (
            Response.objects.filter(conversation__corpus=corpus, position=0)
            .filter(Q(system__name__in=judged_systems) | Q(system__name=reference_system) | Q(is_reference=True))
            .values_list("conversation_id", "id", "system__name", "is_reference")
            .order_by("conversation_id", "system__name")
        )
        by_conversation: dict[int, dict[str, Any]] = {}
        for conversation_id, response_id, system_name, is_reference in rows:
            entry = by_conversation.setdefault(conversation_id, {"judged": {}, "reference": None})
            if system_name == reference_system or (reference_system is None and is_reference):
                entry["reference"] = response_id
            if system_name in judged_systems:
                entry["judged"][system_name] = response_id
        usable = [
            (cid, e) for cid, e in sorted(by_conversation.items())
            if len(e["judged"]) == len(judged_systems) and (e["reference"] or not design.anchored)
        ]
        if not usable and by_conversation and all(len(e["judged"]) <= 1 for e in by_conversation.values()):
            # one response per conversation (GRADE's shape: each context answered by one system): an item
            # shows the one response its conversation has, so a sample of items samples responses across systems
            usable = [(cid, e) for cid, e in sorted(by_conversation.items())
                      if e["judged"] and (e["reference"] or not design.anchored)]
        if spec.limit is not None and spec.limit < len(usable):
            usable = sorted(random.Random(spec.seed).sample(usable, spec.limit))
        if not usable:
            raise ValidationError({"corpus": (
                f"no conversation in {corpus.slug} has responses from all of {', '.join(judged_systems)}"
                + (" and a reference response" if design.anchored else ""))})
        return judged_systems, usable

    def items_build(self, *, study: Study, spec: ItemSpec, design: ItemShape) -> int:
        """One item per usable conversation (``usable_conversations``), showing the judged systems'
        responses and, unless the design is anchored, the reference among them."""
        judged_systems, usable = self.usable_conversations(study=study, spec=spec, design=design)
        # A reference reaches raters only when chosen: as the anchor of an anchored design, or named as the
        # reference system; one the import file marked is otherwise never shown and rated.
        rated_reference = not design.anchored and bool(spec.reference_system)
        shown = max(len(e["judged"]) for _, e in usable) + (1 if rated_reference and usable[0][1]["reference"] else 0)
        design.items_shown(study, shown)
        study.items.filter(check_kind="").delete()  # check items (studies.checks) stay
        reference_value = design.fixed_reference_value(study.design_config)
        items = StudyItem.objects.bulk_create([
            StudyItem(study=study, conversation_id=cid, position=i, reference_response_id=e["reference"],
                      reference_value=reference_value)
            for i, (cid, e) in enumerate(usable)
        ])
        links = []
        for item, (_, entry) in zip(items, usable, strict=True):
            judged = [entry["judged"][s] for s in judged_systems if s in entry["judged"]]
            if rated_reference and entry["reference"] and entry["reference"] not in judged:
                judged.append(entry["reference"])
            links += [StudyItemResponse(item=item, response_id=r, position=p) for p, r in enumerate(judged)]
        StudyItemResponse.objects.bulk_create(links, batch_size=2000)
        return len(items)

    def item_targets(self, item_ids: Iterable[int]) -> dict[int, list[int]]:
        shown: dict[int, list[int]] = {}
        for item_id, response_id in (StudyItemResponse.objects.filter(item_id__in=list(item_ids))
                                     .order_by("item_id", "position").values_list("item_id", "response_id")):
            shown.setdefault(item_id, []).append(response_id)
        return shown

    def item_columns(self, items: Sequence[StudyItem]) -> dict[int, list[dict[str, Any]]]:
        columns: dict[int, list[dict[str, Any]]] = {}
        for item_id, response_id, system, text in (
            StudyItemResponse.objects.filter(item_id__in=[i.pk for i in items]).order_by("item_id", "position")
            .values_list("item_id", "response_id", "response__system__name", "response__text")
        ):
            columns.setdefault(item_id, []).append({"id": response_id, "system": system, "text": text})
        return columns

    def target_texts(self, study: Study, item: StudyItem, order: Sequence[int], *, ranked: bool) -> dict[int, str]:
        if item.pk is None:  # the new-study preview's sample item: its texts travel with it, nothing is read
            return dict(getattr(item, "sample_texts", {}))
        return item_response_texts(item.pk, order)


RESPONSE = ResponseUnit()
