"""A check or practice item is never also a rated item. A gold check or a practice item made from a
previewed item (the builder's "use my answers") copies that item's conversation into the checks corpus,
so the original stayed in the pool: raters met the gold conversation twice (the check was easy to spot)
and rated the practice conversation for real after being shown "our answer". The regular items that
show the same conversation (same turns, by speaker and text) as a check item or a practice item are
"shadowed": the study page counts them, and publishing drops them from the pool (``study_publish``),
so every count after it (items, items per assignment, progress) is of rated items only. Pairs of
whole conversations (ACUTE-Eval) are not matched: their items have no single conversation."""
from __future__ import annotations

from typing import Any

from studies.models import Study


def _key(turns: Any) -> tuple[tuple[str, str], ...]:
    return tuple((str(t.get("speaker", "")), str(t.get("text", ""))) for t in (turns or []) if isinstance(t, dict))


def shadowed_item_ids(study: Study) -> list[int]:
    """Regular items of the study showing a check item's or a practice item's conversation."""
    taken = {_key(t) for t in study.items.filter(check_kind__gt="", conversation__isnull=False)
             .values_list("conversation__turns", flat=True)}
    taken |= {_key(t) for t in study.practice_items.values_list("conversation__turns", flat=True)}
    taken.discard(())
    return [pk for pk, turns in study.items.filter(check_kind="", conversation__isnull=False)
            .values_list("pk", "conversation__turns") if _key(turns) in taken]


def shadowed_items_drop(*, study: Study) -> int:
    """Delete the shadowed regular items of a study nobody has started (called inside ``study_publish``'s
    transaction); returns how many left the pool."""
    if study.assignments.exists():
        return 0
    ids = shadowed_item_ids(study)
    if ids:
        study.items.filter(pk__in=ids, check_kind="").delete()
    return len(ids)
