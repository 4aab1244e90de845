"""Reads for live reliability on the study page: the study's live settings and the live summary
(``studies.analysis.live``) with its figures, computed once per version of the study's ratings
(``selectors.ratings_version``) and kept in the cache, so a page view with unchanged ratings costs
the version query and a cache lookup. When ratings change, the input frame kept in the cache is
brought up to date incrementally (new submitted assignments fetched, withdrawn ones dropped), so
only the ICCs and the figure are recomputed, not the load of every rating."""
from __future__ import annotations

import hashlib
import math
from typing import TYPE_CHECKING, Any

from django.core.cache import cache
from django.db.models import Count, Max, Sum

from studies.designs import NUMERIC_KINDS, design_for
from studies.designs.common import DONE as DONE_STATUSES
from studies.designs.common import Section
from studies.models import Assignment, Rating, Study
from studies.reports.live_labels import live_labels
from studies.reports.selectors import normalised_ratings, ratings_version

if TYPE_CHECKING:
    import pandas as pd

LIVE_DEFAULTS: dict[str, Any] = {"target": 0.8, "form": "ICC(A,k)", "close_when_reached": False}
CACHE_SECONDS = 24 * 3600


def live_config(study: Study) -> dict[str, Any]:
    """The study's live settings with defaults filled in (target .8, ICC(A,k), close rule off)."""
    return {**LIVE_DEFAULTS, **(study.live_config or {})}


FRAME_COLUMNS = {"criterion": "criterion__name", "unit": "target_id", "rater": "assignment__rater_id",
                 "score": "normalised_value", "order": "id", "assignment": "assignment_id", "value": "value",
                 "rank": "rank", "updated_at": "updated_at"}
CHUNK = 500  # assignment ids per query (SQLite's parameter limit)


def _load(study: Study, assignment_ids: list[int] | None = None) -> pd.DataFrame:
    """Ratings of the study's submitted (or approved) assignments, normalised as in the report, in
    one query (or only those of ``assignment_ids``)."""
    import pandas as pd

    queryset = normalised_ratings(Study.objects.filter(pk=study.pk)).filter(assignment__status__in=DONE_STATUSES)
    if assignment_ids is not None:
        queryset = queryset.filter(assignment_id__in=assignment_ids)
    frame = pd.DataFrame.from_records(list(queryset.values_list(*FRAME_COLUMNS.values())), columns=list(FRAME_COLUMNS))
    for column in ("score", "value", "rank"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype(float)
    return frame


def _stamp(n: int, values, ranks, last) -> tuple:
    import pandas as pd

    return n, float(values or 0.0), float(ranks or 0.0), None if last is None or pd.isna(last) else pd.Timestamp(last)


def _unchanged(frame: pd.DataFrame, study: Study) -> bool:
    """Whether the kept rows still equal the database's (count, sums of values and ranks, latest
    change over the done assignments; one aggregate in the database): an edited rating or
    re-opened assignment forces a full reload."""
    db = Rating.objects.filter(assignment__study_id=study.pk, assignment__status__in=DONE_STATUSES, assignment__excluded=False,
                               item__check_kind="", criterion__kind__in=NUMERIC_KINDS).aggregate(
        n=Count("id"), values=Sum("value"), ranks=Sum("rank"), last=Max("updated_at"))
    ours = _stamp(len(frame), frame["value"].sum(), frame["rank"].sum(), frame["updated_at"].max() if len(frame) else None)
    theirs = _stamp(db["n"], db["values"], db["ranks"], db["last"])
    return (ours[0] == theirs[0] and ours[3] == theirs[3]
            and all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6) for a, b in zip(ours[1:3], theirs[1:3], strict=True)))


def live_frame(study: Study) -> pd.DataFrame:
    """The live input (criterion, unit = response, rater, score, order = rating id, ...), kept in the
    cache and brought up to date incrementally: ratings of newly submitted assignments are fetched,
    those of assignments no longer submitted/approved dropped; anything else that changed the kept
    rows (see ``_unchanged``) reloads all. A submit thus costs a query for one assignment's ratings,
    not a reload of every rating."""
    import pandas as pd

    key = f"live-frame:{study.pk}"
    frame = cache.get(key)
    done = set(Assignment.objects.filter(study_id=study.pk, status__in=DONE_STATUSES, excluded=False)
               .values_list("pk", flat=True))
    if frame is not None:
        have = set(frame["assignment"].unique().tolist())
        if have - done:
            frame = frame[frame["assignment"].isin(done)]
        new = sorted(done - have)
        parts = [_load(study, new[i:i + CHUNK]) for i in range(0, len(new), CHUNK)]
        if parts:
            frame = pd.concat([frame, *parts], ignore_index=True)
        if not _unchanged(frame, study):
            frame = None
    if frame is None:
        frame = _load(study)
    cache.set(key, frame, timeout=CACHE_SECONDS)
    return frame.dropna(subset=["score"])


def _compute(study: Study, config: dict[str, Any], version: str) -> dict[str, Any]:
    from studies.analysis import live
    from studies.reports.live_plots import reliability_curve  # matplotlib only when something is drawn

    summary = live.live_summary(live_frame(study), target=config["target"])
    for entry in summary:
        entry["figure"] = reliability_curve(entry, target=config["target"]) if entry.get("trajectory") else ""
    result = {"version": version, "criteria": summary,
              "reached": live.target_reached(summary, form=config["form"], target=config["target"])}
    # Judgments that are not Ratings have their own panels (best-worst split-half, A/B agreement): each
    # panel's rows under its key, and ``panels`` (template and key) for the study page to include.
    # Label criteria (any rating design may have them) get their own panel: label shares, nominal α.
    panels = [*design_for(study).live_panels(study), Section("labels", "studies/_live_labels.html", live_labels(study))]
    result.update({panel.key: panel.data for panel in panels})
    result["panels"] = [{"template": panel.template, "key": panel.key} for panel in panels]
    result["panels_shown"] = any(panel.data for panel in panels)
    return result


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
