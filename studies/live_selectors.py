"""Reads for live reliability on the study page: the study's live settings and the live summary
(``studies.analysis.live``) with its figures, computed once per version of the study's ratings
(``selectors.ratings_version``) and kept in the cache, so a page view costs one aggregate query and
a cache lookup, never a recomputation over all ratings."""
from __future__ import annotations

import hashlib
from typing import Any

import pandas as pd
from django.core.cache import cache

from studies.analysis import live
from studies.models import Study
from studies.selectors import DONE_STATUSES, normalised_ratings, ratings_version

LIVE_DEFAULTS: dict[str, Any] = {"target": 0.8, "form": "ICC(A,k)", "close_when_reached": False}
CACHE_SECONDS = 24 * 3600


def live_config(study: Study) -> dict[str, Any]:
    """The study's live settings with defaults filled in (target .8, ICC(A,k), close rule off)."""
    return {**LIVE_DEFAULTS, **(study.live_config or {})}


def live_frame(study: Study) -> pd.DataFrame:
    """Ratings of the study's submitted (or approved) assignments, normalised as in the report, in
    one query: criterion, unit (response; the item for dialogue-level ratings), rater, score, order."""
    rows = (normalised_ratings(Study.objects.filter(pk=study.pk)).filter(assignment__status__in=DONE_STATUSES)
            .values_list("criterion__name", "response_id", "assignment__rater_id", "normalised_value", "id"))
    frame = pd.DataFrame.from_records(list(rows), columns=["criterion", "unit", "rater", "score", "order"])
    frame["score"] = pd.to_numeric(frame["score"], errors="coerce").astype(float)
    return frame.dropna(subset=["score"])


def _compute(study: Study, config: dict[str, Any], version: str) -> dict[str, Any]:
    from studies.live_plots import reliability_curve  # matplotlib only when something is drawn

    summary = live.live_summary(live_frame(study), target=config["target"])
    for entry in summary:
        entry["figure"] = reliability_curve(entry, target=config["target"]) if entry.get("trajectory") else ""
    return {"version": version, "criteria": summary,
            "reached": live.target_reached(summary, form=config["form"], target=config["target"])}


def live_reliability(study: Study) -> dict[str, Any]:
    """The live summary for the study page and the close rule, cached per ratings version and
    target (changing the target or form recomputes; a page view with unchanged ratings does not)."""
    config = live_config(study)
    version = ratings_version(Study.objects.filter(pk=study.pk))
    key = "live:" + hashlib.sha256(f"{version}:{config['target']}:{config['form']}".encode()).hexdigest()
    result = cache.get(key)
    if result is None:
        result = _compute(study, config, version)
        cache.set(key, result, timeout=CACHE_SECONDS)
    return {**result, "config": config}
