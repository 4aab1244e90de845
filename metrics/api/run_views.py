"""Researcher API for scoring runs and LLM judges as lists (beside ``metrics.api.views``' create, read and
cancel): ``/api/metrics/runs/`` lists your runs (GET, filtered by ``status``, ``study``, ``corpus``,
``metric_model``) and starts one (POST) on a study or, with ``corpus``, on a whole corpus (what
prediction-powered inference needs: the metric on every unit, not only the rated ones; the metrics
page's "Score the corpus", ``metrics.web.views.run_start``); ``/api/metrics/judges/`` lists your LLM judges
(GET) and makes one (POST). A study or corpus you cannot see is a 404."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.settings import api_settings

from metrics.api.views import JudgeCreateApi, MetricModelDetailApi, RunOutputSerializer
from metrics.judging.services import JUDGE_METRIC
from metrics.models import RunStatus
from metrics.scoring import selectors, services
from metrics.scoring.selectors import visible_runs
from studies import access
from studies.api.base import ApiView
from studies.api.inputs import PAGE_PARAMETERS, StrictInput, choice_param, paginate, query_params_checked
from studies.corpora.selectors import corpora_visible_to


class ScoringRunSerializer(RunOutputSerializer):
    corpus = serializers.CharField(source="corpus.slug", allow_null=True, default=None,
                                   help_text="the corpus scored, where the run scores a whole corpus")
    created_at = serializers.DateTimeField()


class ScoringRunCreateApi(ApiView):
    """Your scoring runs, newest first (GET); start one (POST) on a study, or on a whole corpus."""

    class InputSerializer(StrictInput):
        metric_model = serializers.SlugField()
        study = serializers.SlugField(required=False, help_text="score a study's targets")
        corpus = serializers.SlugField(required=False, help_text="or score a whole corpus (every response), e.g. "
                                       "for prediction-powered inference")
        force = serializers.BooleanField(default=False, help_text="score again what has a score")

    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    @extend_schema(responses=ScoringRunSerializer(many=True), operation_id="metrics_runs_list", parameters=[
        OpenApiParameter("status", str, enum=RunStatus.values), OpenApiParameter("study", str),
        OpenApiParameter("corpus", str), OpenApiParameter("metric_model", str)])
    def get(self, request):
        query_params_checked(request, {*PAGE_PARAMETERS, "status", "study", "corpus", "metric_model"})
        runs = visible_runs(request.user).order_by("-created_at", "-pk")
        if wanted := choice_param(request, "status", RunStatus.values):
            runs = runs.filter(status=wanted)
        for name, field in (("study", "study__slug"), ("corpus", "corpus__slug"), ("metric_model", "metric_model__name")):
            if value := request.query_params.get(name):
                runs = runs.filter(**{field: value})
        return paginate(self, runs, request, ScoringRunSerializer)

    @extend_schema(request=InputSerializer, responses={201: ScoringRunSerializer}, operation_id="metrics_runs_create")
    def post(self, request):
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        if ("study" in values) == ("corpus" in values):
            raise ValidationError({"study": ["give a study or a corpus (one of them)"]})
        study = corpus = None
        if "study" in values:
            study = get_object_or_404(access.studies_visible_to(request.user), slug=values["study"])
        else:
            corpus = get_object_or_404(corpora_visible_to(request.user), slug=values["corpus"])
        model = get_object_or_404(selectors.metric_models_usable_by(request.user), name=values["metric_model"])
        run = services.scoring_run_create(metric_model=model, study=study, corpus=corpus, force=values["force"])
        return Response(ScoringRunSerializer(run).data, status=status.HTTP_201_CREATED)


class JudgesApi(JudgeCreateApi):
    """Your LLM judges (GET), newest first; make one (POST) through one of your OpenAI-compatible endpoints."""

    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    @extend_schema(responses=MetricModelDetailApi.OutputSerializer(many=True), operation_id="metrics_judges_list")
    def get(self, request):
        query_params_checked(request, PAGE_PARAMETERS)
        judges = (selectors.metric_models_usable_by(request.user).filter(metric__key=JUDGE_METRIC, owner=request.user)
                  .select_related("metric").order_by("-created_at", "-pk"))
        return paginate(self, judges, request, MetricModelDetailApi.OutputSerializer)

    @extend_schema(request=JudgeCreateApi.InputSerializer, responses={201: MetricModelDetailApi.OutputSerializer},
                   operation_id="metrics_judges_create")
    def post(self, request):
        return super().post(request)
