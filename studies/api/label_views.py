"""Aggregated labels in the API: every rated target's label by the study's label aggregation with its
posterior probability, and each rater's competence by every method, from the service the report and the
items browser read (``studies.reports.aggregated_labels``). Raters a reviewer excluded are left out."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.settings import api_settings

from studies import access
from studies.api.base import ApiView
from studies.api.inputs import PAGE_PARAMETERS, paginate, query_params_checked
from studies.reports import aggregated_labels
from studies.reports.exporting import raw_ids_requested


def _study(request, slug):
    return get_object_or_404(access.studies_visible_to(request.user), slug=slug)


class AggregatedLabelSerializer(serializers.Serializer):
    """One rated target of a label criterion with its aggregated label."""

    criterion = serializers.CharField()
    kind = serializers.ChoiceField(choices=["categorical", "multilabel"])
    method = serializers.ChoiceField(choices=["majority_vote", "dawid_skene", "mace"],
                                     help_text="the aggregation used (settings.LABEL_AGGREGATION_METHOD)")
    item = serializers.IntegerField(help_text="the item's id")
    position = serializers.IntegerField(help_text="the item's position in the study (1-based)")
    check = serializers.CharField(allow_blank=True, help_text="gold or instructed for a check item, else empty")
    target = serializers.IntegerField(help_text="the rated response's id (a dialogue-unit study: the conversation's)")
    system = serializers.CharField(allow_blank=True)
    answers = serializers.IntegerField(help_text="answers aggregated (excluded raters left out)")
    label = serializers.CharField(allow_null=True, help_text="categorical: the aggregated label; null for multi-label")
    labels = serializers.ListField(child=serializers.CharField(), allow_null=True,
                                   help_text="multi-label: the options given (P(yes) above 0.5); null for categorical")
    probability = serializers.FloatField(allow_null=True, help_text=(
        "posterior probability of the label (majority vote: its share of the answers); multi-label: the least "
        "certain option's"))
    probabilities = serializers.DictField(child=serializers.FloatField(), help_text=(
        "categorical: every label's probability; multi-label: each option's P(yes)"))


class MethodAccuracySerializer(serializers.Serializer):
    correct = serializers.IntegerField()
    n = serializers.IntegerField()
    accuracy = serializers.FloatField(allow_null=True)


class MethodSerializer(serializers.Serializer):
    method = serializers.CharField()
    title = serializers.CharField()
    used = serializers.BooleanField()
    gold = MethodAccuracySerializer(help_text="accuracy on the gold items whose rules name a label")
    instructed = MethodAccuracySerializer(help_text="accuracy on the instructed items whose rules name a label")


class RaterCompetenceSerializer(serializers.Serializer):
    rater = serializers.CharField(help_text="pseudonym, or platform:id with raw_ids")
    competence = serializers.DictField(child=serializers.FloatField(allow_null=True), help_text=(
        "method -> competence: majority vote, share of labels equal to the majority; Dawid–Skene, probability of "
        "giving the true label; MACE, probability of not spamming"))


class AggregationSerializer(serializers.Serializer):
    criterion = serializers.CharField()
    kind = serializers.CharField()
    method = serializers.CharField()
    method_title = serializers.CharField()
    n_answers = serializers.IntegerField()
    n_raters = serializers.IntegerField()
    methods = MethodSerializer(many=True)
    raters = RaterCompetenceSerializer(many=True)


def _rows(study) -> list[dict]:
    rows = []
    for found in aggregated_labels.study_labels(study):
        for t in found["targets"]:
            multi = found["kind"] == "multilabel"
            rows.append({"criterion": found["criterion"], "kind": found["kind"], "method": found["method"],
                         "item": t["item"], "position": t["position"], "check": t["check"], "target": t["target"],
                         "system": t["system"], "answers": t["answers"], "label": None if multi else str(t["label"]),
                         "labels": list(t["label"]) if multi else None, "probability": t["probability"],
                         "probabilities": {str(k): v for k, v in t["probabilities"].items()}})
    return rows


class AggregatedLabelListApi(ApiView):
    """Every rated target's aggregated label with its probability, criterion by criterion in item order."""

    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    @extend_schema(responses=AggregatedLabelSerializer(many=True), operation_id="study_aggregated_labels",
                   parameters=[OpenApiParameter("criterion", str, description="only this criterion")])
    def get(self, request, slug):
        study = _study(request, slug)
        query_params_checked(request, (*PAGE_PARAMETERS, "criterion"))
        rows = _rows(study)
        criterion = request.query_params.get("criterion")
        if criterion:
            names = set(study.criteria.values_list("name", flat=True))
            if criterion not in names:
                raise serializers.ValidationError({"criterion": [f"no criterion {criterion!r} in this study"]})
            rows = [r for r in rows if r["criterion"] == criterion]
        return paginate(self, rows, request, AggregatedLabelSerializer)


class AggregationApi(ApiView):
    """Per label criterion: the method used, every method's accuracy on check items, and each rater's
    competence by every method."""

    @extend_schema(responses=AggregationSerializer(many=True), operation_id="study_aggregation",
                   parameters=[OpenApiParameter("raw_ids", bool, description="platform worker ids instead of "
                                                "pseudonyms (owners, collaborators, staff)")])
    def get(self, request, slug):
        study = _study(request, slug)
        query_params_checked(request, ("raw_ids",))
        raw_ids = raw_ids_requested(request, [study.experiment_id])
        out = []
        for found in aggregated_labels.report_criteria(study, raw_ids=raw_ids):
            methods = [m["method"] for m in found["methods"]]
            out.append({**found, "methods": [{**m, "gold": m["gold"], "instructed": m["instructed"]}
                                             for m in found["methods"]],
                        "raters": [{"rater": r["name"], "competence": dict(zip(methods, r["values"], strict=True))}
                                   for r in found["raters"]]})
        return Response(AggregationSerializer(out, many=True).data)
