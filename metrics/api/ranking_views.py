"""Researcher API for the best-judge ranking (the human-vs-metric page's "Which judge agrees best",
``metrics.scoring.selectors.judges_ranking``): per condition and numeric criterion, every metric model scored on
the studies, its Spearman with the human mean per target on the targets all of them scored, best first,
with the paired bootstrap gap to the best and its interval (``studies.analysis.metric_ranking``). By
default the models are those you may use with scores on the studies (as the page); ``models`` names
them (comma-separated). Another researcher's experiment is a 404."""
from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from metrics.api.views import STUDY_PARAMETER, _report_studies
from metrics.scoring import selectors
from studies.api.base import ApiView
from studies.api.inputs import query_params_checked
from studies.api.schema_fields import number
from studies.compute_pool import Offloaded


class JudgeRankRowSerializer(serializers.Serializer):
    metric = serializers.CharField(help_text="the metric model's name")
    r = number(help_text="Spearman with the human mean per target; null: constant on these targets")
    delta = number(help_text="the best's r minus this one's")
    delta_low = number(help_text="the paired bootstrap interval of the gap (percentile)")
    delta_high = number()
    tied_with_best = serializers.BooleanField(help_text="the gap's interval reaches 0: not told apart from the best")
    best = serializers.BooleanField()
    note = serializers.CharField(required=False)


class JudgeRankingSerializer(serializers.Serializer):
    condition = serializers.SlugField()
    criterion = serializers.CharField()
    method = serializers.CharField()
    n = serializers.IntegerField(help_text="targets every model scored and humans rated")
    alpha = serializers.FloatField()
    resamples = serializers.IntegerField()
    best = serializers.CharField(allow_null=True)
    tied = serializers.ListField(child=serializers.CharField(), help_text="models not told apart from the best")
    problem = serializers.CharField(allow_null=True, help_text="why there is no ranking (too few targets)")
    summary = serializers.CharField()
    rows = JudgeRankRowSerializer(many=True)


class JudgeRankingApi(Offloaded, ApiView):
    """Which judge agrees best with the humans, per condition and criterion (needs two models scored)."""

    class OutputSerializer(serializers.Serializer):
        models = serializers.ListField(child=serializers.CharField(), help_text="the models ranked")
        rankings = JudgeRankingSerializer(many=True)

    @extend_schema(responses=OutputSerializer, operation_id="judge_ranking", parameters=[
        STUDY_PARAMETER, OpenApiParameter("models", str, description="metric model names, comma-separated "
                                          "(default: every one scored on the studies)")])
    def get(self, request, slug):
        query_params_checked(request, {"study", "models"})
        studies = _report_studies(request, slug)
        scored = selectors.metric_models_scored_on(studies, request.user)
        if wanted := request.query_params.get("models"):
            names = [name.strip() for name in wanted.split(",") if name.strip()]
            by_name = {m.name: m for m in scored}
            missing = [name for name in names if name not in by_name]
            if missing:
                raise ValidationError({"models": [f"no scores of {', '.join(missing)[:200]} on these studies "
                                                  "(score them first, or check the names)"]})
            scored = [by_name[name] for name in dict.fromkeys(names)]
        if len(scored) < 2:
            raise ValidationError({"models": [f"a ranking needs two metric models scored on these studies; "
                                              f"{len(scored)} {'is' if len(scored) == 1 else 'are'}"]})
        return Response(self.OutputSerializer({"models": [m.name for m in scored],
                                               "rankings": selectors.judges_ranking(studies, scored)}).data)
