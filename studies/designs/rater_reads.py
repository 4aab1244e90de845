"""The rater path's cached reads that every design's form needs: a study's criteria and an item's
response texts (each rater page asks for them on every item)."""
from __future__ import annotations

from collections.abc import Iterable

from django.core.cache import cache

from studies.models import Criterion, Response, Study

RATER_CACHE_SECONDS = 300


def study_criteria(study: Study) -> list[Criterion]:
    """The study's criteria in order, cached per published study: the rater pages need them on every
    item GET and POST, and they are fixed when the study is created (the key carries published_at,
    and the timeout bounds how long an admin's edit takes to show). Drafts are read each time."""
    if study.published_at is None:
        return list(study.criteria.all())
    key = f"concord:criteria:{study.pk}:{study.published_at.timestamp()}"
    criteria = cache.get(key)
    if criteria is None:
        criteria = list(study.criteria.all())
        cache.set(key, criteria, timeout=RATER_CACHE_SECONDS)
    return criteria


def item_response_texts(item_id: int, response_ids: Iterable[int]) -> dict[int, str]:
    """Response id -> text for one study item's responses, cached per item (responses are never
    edited after import; every rater of the item reads the same texts)."""
    wanted = list(response_ids)
    key = f"concord:item-texts:{item_id}"
    texts = cache.get(key)
    if texts is None or any(rid not in texts for rid in wanted):
        texts = dict(Response.objects.filter(pk__in=wanted).order_by().values_list("pk", "text"))
        cache.set(key, texts, timeout=RATER_CACHE_SECONDS)
    return texts
