"""Reads for the report's position-effect section (``studies.analysis.position``): each submitted
rating's normalised score with the position its response had on that rater's screen.

The position comes from ``AssignmentItem.response_order`` (the rater's own shuffle): the slots are
exploded to one row per (assignment, item, response) with its 1-based place, and joined to the ratings
in pandas, so nothing loops over ratings in Python."""
from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from django.core.cache import cache
from django.db.models import QuerySet

from studies.designs.common import DONE as DONE_STATUSES
from studies.models import AssignmentItem, Study
from studies.reads import queryset_frame
from studies.reports.selectors import rating_rows, ratings_version

if TYPE_CHECKING:
    import pandas as pd

CACHE_SECONDS = 3600


def position_frame(studies: QuerySet[Study]) -> pd.DataFrame:
    """Columns study, criterion, rater, response, score, shown_position (None where the response was not on the
    rater's list, e.g. an imported benchmark's single-response slots)."""
    import pandas as pd

    # the report's own read of the ratings (one query per page): the same rows, normalised alike
    ratings = rating_rows(studies)[["study", "criterion", "rater", "score", "assignment", "item", "response"]]
    if ratings.empty:
        return ratings.assign(shown_position=pd.Series(dtype=float))
    slots = queryset_frame(  # response_order is JSON: its column goes through Django's converter
        AssignmentItem.objects.filter(assignment__study__in=studies, assignment__status__in=DONE_STATUSES,
                                      assignment__excluded=False)
        .values_list("assignment_id", "item_id", "response_order"),
        ["assignment", "item", "response"])
    slots = slots[[isinstance(order, list) and len(order) > 0 for order in slots["response"].tolist()]]
    shown = slots.explode("response")
    shown["shown_position"] = shown.groupby(level=0).cumcount() + 1
    shown["response"] = shown["response"].astype(ratings["response"].dtype)
    frame = ratings.merge(shown.reset_index(drop=True), on=["assignment", "item", "response"], how="left")
    return frame[["study", "criterion", "rater", "response", "score", "shown_position"]]


def position_report(studies: QuerySet[Study]) -> list[dict[str, Any]]:
    """``analysis.position.position_effects`` of the studies, cached per version of their ratings."""
    from studies.analysis.position import position_effects

    key = "positions:" + hashlib.sha256(ratings_version(studies).encode()).hexdigest()
    result = cache.get(key)
    if result is None:
        result = position_effects(position_frame(studies))
        cache.set(key, result, timeout=CACHE_SECONDS)
    return result
