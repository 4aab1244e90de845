"""The metrics pages' files and the model card's action in the API: human vs metric as CSV, the
prediction-powered estimates as CSV/XLSX (the same rows as the pages' downloads, ``metrics.scoring.exports``), and
queueing a model's card (staff, as on the model's page)."""
from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAdminUser
from rest_framework.response import Response

from metrics.api.views import STUDY_PARAMETER, PredictionPoweredApi, _report_studies
from metrics.models import MetricModel
from metrics.scoring import exports, selectors
from studies.api.base import ApiView
from studies.api.inputs import choice_param, query_params_checked
from studies.compute_pool import Offloaded
from studies.reports.exporting import no_store


def _file(body, export_format: str, name: str) -> HttpResponse:
    response = HttpResponse(body, content_type=exports.CONTENT_TYPES[export_format])
    response["Content-Disposition"] = f'attachment; filename="{name}.{export_format}"'
    return no_store(response)


class HumanMetricDownloadApi(Offloaded, ApiView):
    """Human vs metric as a tidy CSV (condition, criterion, level, method, r, p, CI, n, human ceiling; a label
    criterion's point-biserial r and AUC): the rows of the JSON report (``human-metric``)."""

    @extend_schema(parameters=[STUDY_PARAMETER], responses={(200, "text/csv"): OpenApiTypes.STR})
    def get(self, request, slug, model):
        query_params_checked(request, {"study"})
        studies = _report_studies(request, slug)
        metric_model = get_object_or_404(selectors.metric_models_usable_by(request.user), name=model)
        report = selectors.human_metric_report(studies, metric_model)
        assert report is not None  # no queue: computed in this request when not stored yet
        return _file(exports.human_metric_csv(report), "csv", f"{slug}-{metric_model.name}-human-vs-metric")


class PredictionPoweredDownloadApi(PredictionPoweredApi):
    """The prediction-powered estimates as a file: CSV (the system estimates) or XLSX (every table, one
    sheet each, and the notes); the same parameters as the JSON report (``ppi``)."""

    @extend_schema(parameters=[
        OpenApiParameter("format", str, enum=list(exports.CONTENT_TYPES), default="csv"), STUDY_PARAMETER,
        OpenApiParameter("width", float, description="the planner's target interval width (> 0)"),
        OpenApiParameter("alpha", float, description="the error level, between 0 and 1 (default 0.05)"),
        OpenApiParameter("combine", str, description="further metric models (comma-separated names)")],
        responses={(200, "text/csv"): OpenApiTypes.STR, (200, exports.CONTENT_TYPES["xlsx"]): OpenApiTypes.BINARY})
    def get(self, request, slug, model):
        query_params_checked(request, {"format", "study", "width", "alpha", "combine"})
        export_format = choice_param(request, "format", tuple(exports.CONTENT_TYPES)) or "csv"
        report = self.report(request, slug, model)
        return _file(exports.ppi_file(report, export_format), export_format,
                     f"{slug}-{report['metric_model']}-prediction-powered")


class ModelCardApi(ApiView):
    """Queue the model's card (its figures on the published benchmarks, beside untrained baselines) for a
    worker, as the model page's button: staff only (403 otherwise)."""

    permission_classes = (IsAdminUser,)

    class OutputSerializer(serializers.Serializer):
        model = serializers.CharField()
        queued = serializers.BooleanField()

    @extend_schema(request=None, responses={202: OutputSerializer})
    def post(self, request, name):
        from metrics.tasks import model_card_build

        model = get_object_or_404(MetricModel, name=name)
        model_card_build.delay(model.pk)
        return Response(self.OutputSerializer({"model": model.name, "queued": True}).data,
                        status=status.HTTP_202_ACCEPTED)
