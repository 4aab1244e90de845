"""Check items of dialogue-unit studies that rank dialogues or anchor them: the known-bad dialogue written for
the check is shown the way the study's items show theirs. A ranking design (BWS, and two dialogues compared
as a tuple of two) ranks it among ``tuple_size - 1`` of the study's own dialogues (a seeded draw, the written
one at a drawn place), so "ranked worst" (``{"worst": 1}``) is the check; an anchored design (RME) shows it
beside the study's anchor dialogue with the anchor's value, so a value rule below it (``{"response": 1,
"max": 99}``) is. Rules number the written dialogue 1, as for a dialogue rated on its own."""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from studies.designs import design_for
from studies.models import Study, StudyItem, StudyItemConversation
from studies.rating.check_rules import judges_the_context, regular_shown_counts


@dataclass
class Setting:
    """What a check item shows besides the written dialogue: the companions it is ranked among (and the
    written one's place), or the anchor dialogue and its value."""
    companions: list[int] = field(default_factory=list)
    place: int = 0
    anchor: int | None = None
    anchor_value: float | None = None


def whole_note(study: Study) -> str:
    """What the checks page says of a check item that is one written dialogue judged whole ("" otherwise)."""
    if not judges_the_context(study):
        return ""
    design = design_for(study)
    if design.anchored:
        return ("A known bad dialogue, shown beside the study's anchor dialogue as raters see every item. The "
                "check: it is rated below the anchor (e.g. dialogue 1 is at most a value under the anchor's).")
    if design.ranks:
        return ("A known bad dialogue, ranked among the study's own dialogues as raters rank every item. The check: "
                "it is ranked worst (dialogue 1 is ranked worst), or, two at a time, loses the comparison.")
    return "A known bad dialogue, rated as a whole like every item. The check: what a careful rater gives it."


def setting_for(study: Study, number: int) -> tuple[Setting, str | None]:
    """The check's setting, or the problem (keyed ``context`` by the caller): the study's items come first."""
    design = design_for(study)
    regular = study.items.filter(check_kind="")
    if design.anchored:
        found = regular.exclude(reference_conversation=None).values_list("reference_conversation_id",
                                                                        "reference_value").first()
        if found is None:
            return Setting(), ("build the study's items first: the check shows the study's anchor dialogue beside "
                               "the one written for it")
        return Setting(anchor=found[0], anchor_value=found[1]), None
    if design.ranks:
        size = max(regular_shown_counts(study) or {0})
        pool = sorted(set(StudyItemConversation.objects.filter(item__in=regular)
                          .values_list("conversation_id", flat=True)))
        if not size or len(pool) < size - 1:
            return Setting(), ("build the study's items first: the check ranks the dialogue written for it among "
                               "the study's own dialogues")
        draw = random.Random(f"{study.pk}-check-{number}")
        return Setting(companions=draw.sample(pool, size - 1), place=draw.randrange(size)), None
    return Setting(), None


def setting_write(item: StudyItem, setting: Setting) -> None:
    """Show the written dialogue (the item's conversation) with its companions, or beside the anchor."""
    if setting.companions and item.conversation_id is not None:
        shown = setting.companions[:]
        shown.insert(setting.place, item.conversation_id)
        StudyItemConversation.objects.bulk_create([StudyItemConversation(item=item, conversation_id=cid, position=p)
                                                   for p, cid in enumerate(shown)])
    if setting.anchor is not None:
        item.reference_conversation_id, item.reference_value = setting.anchor, setting.anchor_value
        item.save(update_fields=["reference_conversation", "reference_value"])
