"""Span criteria in the API (the report's and the download's figures, ``studies.reports.span_selectors``):
``GET /api/studies/<slug>/spans/`` lists every marked span, one per row (each rater's, then the token-level
majority's; ``?source=rater|majority``, ``?criterion=``), paginated; ``GET /api/studies/<slug>/span-agreement/``
gives each span criterion's agreement, with the methods named."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.settings import api_settings

from studies import access
from studies.api.base import ApiView
from studies.api.inputs import PAGE_PARAMETERS, paginate, query_params_checked
from studies.models import Study
from studies.reports import span_selectors
from studies.reports.exporting import raw_ids_requested


def _study(request, slug):
    return get_object_or_404(access.studies_visible_to(request.user), slug=slug)


class SpanSerializer(serializers.Serializer):
    study = serializers.CharField()
    criterion = serializers.CharField()
    source = serializers.ChoiceField(choices=["rater", "majority"],
                                     help_text="a rater's span, or the token-level majority's")
    rater = serializers.CharField(allow_blank=True, help_text="pseudonym (platform id with raw_ids); empty for majority")
    item = serializers.IntegerField(help_text="the item's position (1-based)")
    conversation = serializers.CharField(allow_null=True)
    system = serializers.CharField(allow_null=True, allow_blank=True)
    target = serializers.IntegerField(help_text="the response's id (a dialogue-unit study: the conversation's)")
    turn = serializers.IntegerField(allow_null=True, help_text="the turn's index in a dialogue; null for a response")
    start = serializers.IntegerField(help_text="character offset of the first marked character")
    end = serializers.IntegerField(help_text="character offset after the last marked character")
    label = serializers.CharField()
    text = serializers.CharField(help_text="the marked text")


class SpanTokenAgreementSerializer(serializers.Serializer):
    """Token-level agreement (``studies.analysis.span_agreement.token_agreement``)."""

    alpha = serializers.FloatField(allow_null=True, help_text="Krippendorff's alpha (nominal) over tokens")
    fleiss_kappa = serializers.FloatField(allow_null=True)
    cohen_kappa = serializers.FloatField(allow_null=True, help_text="exactly two raters on every document, else null")
    raw_agreement = serializers.FloatField(allow_null=True)
    tokens = serializers.IntegerField(help_text="tokens marked (or not) by two or more raters")
    method = serializers.CharField()


class SpanMatchSerializer(serializers.Serializer):
    """Pairwise span F1 (``studies.analysis.spans.pairwise_f1``)."""

    f1 = serializers.FloatField(allow_null=True, help_text="null without a pair of raters")
    pairs = serializers.IntegerField()
    spans = serializers.IntegerField()


class SpanAgreementSerializer(serializers.Serializer):
    criterion = serializers.CharField()
    labels = serializers.ListField(child=serializers.CharField())
    ratings = serializers.IntegerField()
    raters = serializers.IntegerField()
    token = SpanTokenAgreementSerializer()
    exact = SpanMatchSerializer(help_text="span F1, exact match")
    overlap = SpanMatchSerializer(help_text="span F1, overlapping match")
    span_method = serializers.CharField()
    aggregation_method = serializers.CharField()


def _finite(value):
    return None if isinstance(value, float) and value != value else value  # NaN is no JSON number


class SpanListApi(ApiView):
    """Every marked span of the study's span criteria, one per row."""

    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    @extend_schema(responses=SpanSerializer(many=True), operation_id="study_spans", parameters=[
        OpenApiParameter("criterion", str, description="only this criterion"),
        OpenApiParameter("source", str, enum=["rater", "majority"], description="only raters' or aggregated spans"),
        OpenApiParameter("raw_ids", bool, description="platform worker ids instead of pseudonyms (owners)")])
    def get(self, request, slug):
        study = _study(request, slug)
        query_params_checked(request, (*PAGE_PARAMETERS, "criterion", "source", "raw_ids"))
        raw_ids = raw_ids_requested(request, [study.experiment_id])
        source, criterion = request.query_params.get("source"), request.query_params.get("criterion")
        if source not in (None, "rater", "majority"):
            raise serializers.ValidationError({"source": [f"{source[:30]!r} is neither rater nor majority"]})
        if criterion and not study.criteria.filter(name=criterion).exists():
            raise serializers.ValidationError({"criterion": [f"no criterion {criterion[:60]!r} in this study"]})
        rows = [r for r in span_selectors.span_rows(Study.objects.filter(pk=study.pk), raw_ids=raw_ids)
                if (not source or r["source"] == source) and (not criterion or r["criterion"] == criterion)]
        return paginate(self, rows, request, SpanSerializer)


class SpanAgreementApi(ApiView):
    """Each span criterion's token-level and span-level agreement."""

    @extend_schema(responses=SpanAgreementSerializer(many=True), operation_id="study_span_agreement")
    def get(self, request, slug):
        study = _study(request, slug)
        query_params_checked(request, ())
        out = []
        for found in span_selectors.span_report(Study.objects.filter(pk=study.pk)):
            found["token"] = {k: _finite(v) for k, v in found["token"].items()}
            out.append(found)
        return Response(SpanAgreementSerializer(out, many=True).data)
