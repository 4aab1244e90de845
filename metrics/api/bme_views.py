"""Researcher API for filling a magnitude-estimation study's reference values (its anchors) from a metric,
the study page's "Fill from a metric" (``metrics.web.views.bme_fill``), through the same service
(``metrics.scoring.services.bme_reference_values_fill``): each item's reference response is scored by the metric
model and its score mapped linearly from the metric's range (declared, else observed over these
references) onto the study's anchor interval (default 50..150; ``studies.designs.magnitude``). Drafts only
(409 otherwise); a study whose anchors do not come from a metric is a 404, as another researcher's."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from metrics.scoring import selectors, services
from studies import access
from studies.api.base import ApiView
from studies.api.inputs import StrictInput
from studies.designs import design_for


class BmeAnchorsApi(ApiView):
    """Set every item's reference value from a metric model's score of its reference response."""

    class InputSerializer(StrictInput):
        metric_model = serializers.SlugField(help_text="the metric model that scores the reference responses")

    class OutputSerializer(serializers.Serializer):
        metric_model = serializers.SlugField()
        values = serializers.DictField(child=serializers.FloatField(), help_text="item id -> reference value set")

    @extend_schema(request=InputSerializer, responses=OutputSerializer, operation_id="study_bme_anchors_fill")
    def post(self, request, slug):
        study = get_object_or_404(access.studies_visible_to(request.user), slug=slug)
        if not design_for(study).anchor_from_metric:
            raise NotFound("this study's reference values do not come from a metric")
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        model = get_object_or_404(selectors.metric_models_usable_by(request.user),
                                  name=data.validated_data["metric_model"])
        mapped = services.bme_reference_values_fill(study=study, metric_model=model)
        return Response(self.OutputSerializer({"metric_model": model.name,
                                               "values": {str(k): v for k, v in mapped.items()}}).data)
