"""Human vs metric for pairwise (A/B) studies: does the metric score higher the response the human
majority preferred? The computation is studies.analysis.pairwise.metric_pair_agreement; this module
loads the judgments (studies' selectors) and the metric's scores."""
from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from metrics.models import MetricModel
from metrics.selectors import response_scores
from studies.models import Study


def pairwise_human_metric(studies: QuerySet[Study], metric_model: MetricModel) -> list[dict[str, Any]]:
    """Per pairwise study: {slug, title, rows: one per criterion (studies.analysis.pairwise.metric_pair_agreement)}."""
    from studies.analysis.pairwise import metric_pair_agreement
    from studies.designs.pairwise_report import comparisons_frame, pairwise_studies

    out = []
    for study in pairwise_studies(studies).order_by("id"):
        frame = comparisons_frame(Study.objects.filter(pk=study.pk))
        units = set(frame["left"]) | set(frame["right"]) if len(frame) else set()
        scores = response_scores(metric_model, list(units))
        out.append({"slug": study.slug, "title": study.title, "rows": metric_pair_agreement(frame, scores)})
    return out
