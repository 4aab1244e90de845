"""Human vs metric for the designs that compare pairs (``compares_pairs``: pairwise A/B of two responses,
ACUTE-Eval's two whole conversations): does the metric score higher the side the human majority
preferred? The computation is studies.analysis.pairwise.metric_pair_agreement; this module loads the
judgments (the design's ``pairs_frame``, check pairs left out) and the metric's scores of what the study's
unit rates: a response's score (turn level) or, where the sides are conversations (ACUTE-Eval over
imported dialogues, a chat study's transcripts or self-chats), each conversation's dialogue-level score."""
from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from metrics.models import MetricModel
from metrics.scoring.selectors import conversation_scores, response_scores
from studies.designs import design_for, unit_for
from studies.models import Study


def pairwise_human_metric(studies: QuerySet[Study], metric_model: MetricModel) -> list[dict[str, Any]]:
    """Per study comparing pairs: {slug, title, noun ("response" or "conversation"), rows: one per
    criterion (studies.analysis.pairwise.metric_pair_agreement)}."""
    from studies.analysis.pairwise import metric_pair_agreement

    out = []
    for study in studies.order_by("id"):
        design = design_for(study)
        if not design.compares_pairs:
            continue
        frame = design.pairs_frame(Study.objects.filter(pk=study.pk))
        units = list(set(frame["left"]) | set(frame["right"])) if len(frame) else []
        noun = unit_for(study).target_field  # "response" or "conversation": what the sides are
        scores = conversation_scores(metric_model, units) if noun == "conversation" else response_scores(metric_model, units)
        out.append({"slug": study.slug, "title": study.title, "noun": noun,
                    "rows": metric_pair_agreement(frame, scores)})
    return out
