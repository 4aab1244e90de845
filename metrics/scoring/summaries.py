"""The human-vs-metric page's costly results kept in the database (``HumanMetricSummary``) with the
versions of the ratings and scores they were computed from.

``kept`` returns the stored result for the versions in force now. Without one, a caller that gives
``queue`` (the page) queues the worker that computes it and gets ``COMPUTING``; any other caller (the
API, a download, the worker itself) computes it and stores it. ``settings.METRIC_SUMMARIES_IN_REQUEST``
makes the page compute too (unit tests that write scores directly and read the page at once)."""
from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db.models import QuerySet

from metrics.models import HumanMetricSummary, MetricModel

COMPUTING = None  # what ``kept`` gives the page while the worker computes
# Rows kept per (experiment, metric model, kind): every new rating or score makes a new version, and
# only the latest few can still be asked for (a reader with an older view of the studies; a page
# loaded just before the change).
KEEP_VERSIONS = 4


def _plain(value: Any) -> Any:
    """JSON's own types: NumPy scalars and arrays as Python numbers and lists, NaN and ±inf as None
    (PostgreSQL's JSON has no NaN)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist"):  # numpy scalar or array
        return _plain(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def kept(kind: str, version: str, studies: QuerySet, metric_model: MetricModel, compute: Callable[[], Any], *,
         queue: Callable[[], Any] | None = None) -> Any:
    """The stored result of ``compute`` for ``version``, or see the module's docstring."""
    key = hashlib.sha256(f"{kind}:{version}".encode()).hexdigest()
    stored = HumanMetricSummary.objects.filter(key=key).values_list("data", flat=True).first()
    if stored is not None:
        return stored["value"]
    if queue is not None and not settings.METRIC_SUMMARIES_IN_REQUEST:
        queue()
        return COMPUTING
    value = compute()
    experiment_id = studies.values_list("experiment_id", flat=True).first()
    if experiment_id is not None:
        HumanMetricSummary.objects.update_or_create(key=key, defaults={
            "kind": kind, "experiment_id": experiment_id, "metric_model": metric_model, "version": version,
            "data": {"value": _plain(value)}})
        _forget_old_versions(kind, experiment_id, metric_model)
    return value  # as computed (the callers that compute never read the stored copy back)


def _forget_old_versions(kind: str, experiment_id: int, metric_model: MetricModel) -> None:
    """Delete all but the ``KEEP_VERSIONS`` newest rows of this kind for the experiment and metric model."""
    rows = HumanMetricSummary.objects.filter(kind=kind, experiment_id=experiment_id, metric_model=metric_model)
    old = list(rows.order_by("-computed_at", "-pk").values_list("pk", flat=True)[KEEP_VERSIONS:])
    if old:
        HumanMetricSummary.objects.filter(pk__in=old).delete()


def json_round_trip(value: Any) -> Any:
    """What a stored result reads back as (tests compare a fresh computation with it)."""
    return json.loads(json.dumps(_plain(value)))
